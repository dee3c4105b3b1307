package chaos

// The tree of a run has an access policy (`confpush init`): a publisher,
// one identity per agent (its user is the agent id) and one more agent
// identity, "hostile", that runs no confagent. The hostile-agent fault
// acts with it as an attacker who stole one host's credentials would:
//
//   - a burst of writes past the bounds: status nodes and registrations
//     under names of its choosing (with data, and empty ones), status
//     nodes of 1 MB, its own status node and registration above their
//     bounds;
//   - then a flood within its quota: its own status node rewritten with
//     half its bound, and its registration, as fast as the ensemble
//     answers, for the step's duration, while the fleet view is sampled;
//   - at the end, as an operator would, `confpush acl --repair` (the
//     confpush binary, with the run's policy).
//
// The checker (checkHostile, property hostile-agent) requires: no write
// past a bound landed (a foreign status node with data, a registration
// under any name but its own, an oversized node of its own); an empty
// foreign status node may land only as the overshoot of one burst (the
// server checks quotas against committed counts: docs/design.md, "Bounds on
// agent identities"), and repair then deletes it; no reading of the fleet
// view listed a foreign node as an agent or counted it as applied. Every
// honest agent must keep converging (properties 1 to 5, recovery) while it
// runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// fHostileAgent is the hostile agent identity's fault kind.
const fHostileAgent = "hostile-agent"

// hostileUser is the user of the hostile agent identity.
const hostileUser = "hostile"

// chaosIDs are a run's ZooKeeper identities, as "user:password".
type chaosIDs struct {
	publisher string
	agents    []string // agents[i] is agent-i's
	hostile   string
}

// newIDs draws the run's passwords from the seed (a replay has the same).
func newIDs(seed uint64, agents int) chaosIDs {
	rng := rand.New(rand.NewPCG(seed, 7))
	pw := func(user string) string { return fmt.Sprintf("%s:chaos-%016x%016x", user, rng.Uint64(), rng.Uint64()) }
	ids := chaosIDs{publisher: pw("chaos-publisher"), hostile: pw(hostileUser)}
	for i := range agents {
		ids.agents = append(ids.agents, pw(fmt.Sprintf("agent-%d", i)))
	}
	return ids
}

// policy runs the confpush binary for the tree's access policy, as an
// operator does: init with the run's identities (a publisher, one per
// agent, and "hostile"), and acl --repair with the same policy given
// explicitly. The credentials are in files (mode 0600) under dir, as
// confpush wants them.
type policy struct {
	bin, dir string
	ids      chaosIDs

	once  sync.Once
	flags []string // --publisher-auth-file F --agent-auth-file F...
	err   error
}

// policyFlags writes the credentials files once and returns the flags
// naming them.
func (p *policy) policyFlags() ([]string, error) {
	p.once.Do(func() {
		if p.err = os.MkdirAll(p.dir, 0o700); p.err != nil {
			return
		}
		write := func(name, creds string) string {
			f := filepath.Join(p.dir, name+".auth")
			if err := os.WriteFile(f, []byte(creds+"\n"), 0o600); err != nil && p.err == nil {
				p.err = err
			}
			return f
		}
		p.flags = []string{"--publisher-auth-file", write("publisher", p.ids.publisher)}
		for i, c := range append(slices.Clone(p.ids.agents), p.ids.hostile) {
			p.flags = append(p.flags, "--agent-auth-file", write(fmt.Sprintf("agent-%d", i), c))
		}
	})
	return p.flags, p.err
}

// aclReport is what confpush init and acl print with --json.
type aclReport struct {
	Actions     []string `json:"actions"`
	Differences []string `json:"differences"`
	Advisories  []string `json:"advisories"`
	Error       string   `json:"error"`
}

// run runs confpush command on the tree through servers with the policy's
// flags and returns its report. Exit 7 (differences remain) is a report,
// not an error: the caller judges what remains.
func (p *policy) run(ctx context.Context, servers []string, command string, extra ...string) (aclReport, error) {
	return p.runOn(ctx, chaosRoot, servers, command, extra...)
}

// runOn is run on another root.
func (p *policy) runOn(ctx context.Context, root string, servers []string, command string, extra ...string) (aclReport, error) {
	flags, err := p.policyFlags()
	if err != nil {
		return aclReport{}, err
	}
	args := append([]string{command, root, "--zk", strings.Join(servers, ","), "--timeout", "60s", "--json"}, flags...)
	cmd := exec.CommandContext(ctx, p.bin, append(args, extra...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "ZKCONF_AUTH=") })
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep aclReport
	_ = json.Unmarshal(stdout.Bytes(), &rep)
	if runErr != nil && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 7 {
		runErr = nil
	}
	if runErr != nil {
		return rep, fmt.Errorf("confpush %s: %w: %s%s", command, runErr, strings.TrimSpace(rep.Error), strings.TrimSpace(stderr.String()))
	}
	return rep, nil
}

// initTree is what an operator runs on a new (or recreated, empty)
// ensemble before publishing: `confpush init` with the run's policy,
// which also sets and locks the quotas.
func (r *runner) initTree(servers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := r.policy.run(ctx, servers, "init")
	if err != nil {
		return err
	}
	for _, m := range append(rep.Differences, rep.Advisories...) {
		if strings.Contains(m, "does not enforce quotas") {
			return fmt.Errorf("the ensemble does not enforce quotas: %s", m)
		}
	}
	// The shared root the two-root agents follow, with the same policy.
	if _, err := r.policy.runOn(ctx, commonRoot, servers, "init"); err != nil {
		return fmt.Errorf("%s: %w", commonRoot, err)
	}
	r.log.add("run", "tree initialised (confpush init): %d actions, %d agent identities with quotas", len(rep.Actions), len(r.ids.agents)+1)
	return nil
}

// hostileWrite is one write of the burst, as it came back.
type hostileWrite struct {
	What   string // for messages
	Path   string
	Err    error
	Landed bool // no error: the write was applied
	// Allowed: landing is within the design (an empty foreign status
	// node may be the overshoot of a burst).
	Allowed bool
}

// hostileRecord is one hostile-agent step, for the checker.
type hostileRecord struct {
	At        time.Time
	Skipped   string // why the step did not run its checks ("" when it did)
	Writes    []hostileWrite
	Flooded   int      // writes within the quota during the flood
	Readings  int      // fleet view readings while it ran
	Listed    []string // foreign names the fleet view listed as agents
	Counted   []string // foreign names the fleet view counted as applied
	Found     []string // nodes past a bound found in the tree after the burst
	Leftovers []string // foreign nodes still there after the repair
	Overshoot int      // empty foreign status nodes found after the burst
}

// hostileStep runs the hostile identity for s.Down: the burst past the
// bounds, the flood within them, the repair.
func (n *nemesis) hostileStep(ctx context.Context, s step) {
	rec := &hostileRecord{At: time.Now()}
	defer n.recordHostile(rec)
	inc := n.work.incarnation()
	h, err := n.auxDial(n.hostileCreds)
	if err != nil {
		rec.Skipped = fmt.Sprintf("cannot connect (%v)", err)
		return
	}
	defer n.auxClose(h)
	viewer, err := n.auxDial(n.viewerCreds)
	if err != nil {
		rec.Skipped = fmt.Sprintf("the viewer cannot connect (%v)", err)
		return
	}
	defer n.auxClose(viewer)
	paths := layout.New(chaosRoot, layout.DefaultMeta)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	own, err := statusNodeACL(actx, h)
	cancel()
	if err != nil {
		rec.Skipped = fmt.Sprintf("cannot read the status-ACL document (%v)", err)
		return
	}
	r := n.begin(s.Kind, "identity "+hostileUser, -1, fmt.Sprintf(", burst of %d writes past the bounds, then a flood for %v", 3*s.N+6, s.Down))
	defer n.end(r)

	// The burst: every write at once.
	var mu sync.Mutex
	var wg sync.WaitGroup
	try := func(what, path string, allowed bool, fn func() error) {
		wg.Go(func() {
			err := fn()
			mu.Lock()
			rec.Writes = append(rec.Writes, hostileWrite{What: what, Path: path, Err: err, Landed: err == nil, Allowed: allowed})
			mu.Unlock()
		})
	}
	small := []byte(`{"agent_id":"forged"}`)
	for i := range s.N {
		st, reg, empty := paths.StatusNode(fmt.Sprintf("foreign-%d-%d", s.Pick, i)), paths.AgentNode(fmt.Sprintf("foreign-%d-%d", s.Pick, i)),
			paths.StatusNode(fmt.Sprintf("empty-%d-%d", s.Pick, i))
		try("a foreign status node with data", st, false, func() error { _, err := h.Create(st, small, 0, own); return err })
		try("a foreign registration", reg, false, func() error { _, err := h.Create(reg, small, 0, own); return err })
		try("an empty foreign status node", empty, true, func() error { _, err := h.Create(empty, nil, 0, own); return err })
	}
	mb := make([]byte, 1_000_000)
	for i := range 4 {
		st := paths.StatusNode(fmt.Sprintf("big-%d-%d", s.Pick, i))
		try("a foreign status node of 1 MB", st, false, func() error { _, err := h.Create(st, mb, zk.FlagEphemeral, own); return err })
	}
	mine, reg := paths.StatusNode(hostileUser), paths.AgentNode(hostileUser)
	try("its own status node above the bound", mine, false, func() error {
		_, err := h.Create(mine, make([]byte, fleet.MaxStatusBytes+1), zk.FlagEphemeral, own)
		return err
	})
	try("its registration above the bound", reg, false, func() error {
		_, err := h.Set(reg, make([]byte, fleet.MaxRegistrationBytes+1), -1)
		return err
	})
	wg.Wait()

	// The flood within its quota, with the fleet view sampled.
	gen, _ := liveGeneration(viewer)
	status := hostileStatus(gen, fleet.MaxStatusBytes/2)
	if _, err := h.Create(mine, status, zk.FlagEphemeral, own); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		n.log.add("fault", "%s: its own status node: %v", fHostileAgent, err)
	}
	regData := []byte(fmt.Sprintf(`{"hostname":%q,"labels":{"note":%q}}`, hostileUser, strings.Repeat("x", fleet.MaxRegistrationBytes/2)))
	end := time.Now().Add(s.Down)
	var lastView time.Time
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := h.Set(mine, status, -1); err == nil {
			rec.Flooded++
		}
		if _, err := h.Set(reg, regData, -1); err == nil {
			rec.Flooded++
		}
		if time.Since(lastView) >= 300*time.Millisecond {
			lastView = time.Now()
			n.hostileView(viewer, paths, gen, rec)
		}
	}
	// What the burst left, whatever its replies said (a reply lost with
	// a connection under an ensemble fault says nothing).
	if err := n.hostileFound(viewer, paths, rec); err != nil {
		rec.Skipped = err.Error()
		return
	}
	n.auxClose(h) // its ephemeral nodes go with its session

	// The operator's repair, and what is left.
	rctx, rcancel := context.WithTimeout(context.Background(), 90*time.Second)
	_, rerr := n.policy.run(rctx, n.cluster.Addrs(), "acl", "--repair")
	rcancel()
	if n.work.incarnation() != inc {
		rec.Skipped = "an ensemble wipe happened meanwhile"
		return
	}
	if rerr != nil {
		rec.Skipped = fmt.Sprintf("the repair failed (%v)", rerr)
		return
	}
	for _, parent := range []string{paths.Status(), paths.Agents()} {
		kids, err := listRetried(viewer, parent)
		if err != nil {
			rec.Skipped = fmt.Sprintf("cannot list %s (%v)", parent, err)
			return
		}
		for _, k := range kids {
			if !slices.Contains(n.agentIDs, k) && k != hostileUser {
				rec.Leftovers = append(rec.Leftovers, parent+"/"+k)
			}
		}
	}
	n.log.add("fault", "%s: %d burst writes (%d landed as overshoot), %d flood writes, %d fleet readings, leftovers after repair %v",
		fHostileAgent, len(rec.Writes), rec.Overshoot, rec.Flooded, rec.Readings, rec.Leftovers)
}

// hostileFound lists what the burst left in the tree: a registration
// under any name but the hostile's own, a foreign status node holding
// data or a node of its own above its bound is past a bound (Found); an
// empty foreign status node is the overshoot of the burst (the server
// checks quotas against committed counts).
func (n *nemesis) hostileFound(viewer *zk.Conn, paths layout.Paths, rec *hostileRecord) error {
	known := append(slices.Clone(n.agentIDs), hostileUser)
	for _, c := range []struct {
		parent string
		bound  int
	}{{paths.Status(), fleet.MaxStatusBytes}, {paths.Agents(), fleet.MaxRegistrationBytes}} {
		kids, err := listRetried(viewer, c.parent)
		if err != nil {
			return fmt.Errorf("cannot list %s (%v)", c.parent, err)
		}
		for _, k := range kids {
			p := c.parent + "/" + k
			ok, st, err := viewer.Exists(p)
			if err != nil || !ok {
				continue
			}
			switch {
			case slices.Contains(known, k):
				if int(st.DataLength) > c.bound {
					rec.Found = append(rec.Found, fmt.Sprintf("%s (%d bytes)", p, st.DataLength))
				}
			case c.parent == paths.Status() && st.DataLength == 0:
				rec.Overshoot++
			default:
				rec.Found = append(rec.Found, fmt.Sprintf("%s (%d bytes)", p, st.DataLength))
			}
		}
	}
	return nil
}

// listRetried lists p's children, retrying for 30 s while an ensemble
// fault keeps the connection down.
func listRetried(conn *zk.Conn, p string) ([]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids, _, err := conn.Children(p)
		if err == nil || !zkclient.IsRecoverable(err) || time.Now().After(deadline) {
			return kids, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hostileStatus is the hostile identity's own status: well-formed, padded
// to about size bytes.
func hostileStatus(gen int64, size int) []byte {
	b, _ := json.Marshal(map[string]any{"agent_id": hostileUser, "root": chaosRoot, "generation": gen, "state": "live",
		"ready": true, "not_ready_reason": strings.Repeat("y", size-300)})
	return b
}

// hostileView reads the fleet view (confpush status, a rollout wait)
// and records any foreign name it lists or counts.
func (n *nemesis) hostileView(viewer *zk.Conn, paths layout.Paths, gen int64, rec *hostileRecord) {
	vctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fl, err := fleet.New(zkclient.Fixed(viewer, nil), paths.Root, fleet.WithMeta(paths.Meta))
	if err != nil {
		return
	}
	f, err := fl.Read(vctx)
	if err != nil {
		return
	}
	rec.Readings++
	for _, a := range f.Agents {
		if slices.Contains(n.agentIDs, a.ID) || a.ID == hostileUser {
			continue // agent identities of the policy, the hostile one included
		}
		rec.Listed = append(rec.Listed, a.ID)
		if a.Applied(gen) {
			rec.Counted = append(rec.Counted, a.ID)
		}
	}
}

func (n *nemesis) recordHostile(r *hostileRecord) {
	if r.Skipped != "" {
		n.log.add("fault", "%s: not checked: %s", fHostileAgent, r.Skipped)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hostile = append(n.hostile, *r)
}

// checkHostile verifies hostile-agent over every step that ran its checks.
func (c *checker) checkHostile(recs []hostileRecord) {
	for _, r := range recs {
		if r.Skipped != "" {
			continue
		}
		for _, f := range r.Found {
			c.violate("hostile-agent", -1, r.At, "%s: a node past the bounds of an agent identity", f)
		}
		// Replies are not checked for their class: under an ensemble
		// fault a write fails with a lost connection, whose outcome the
		// listing (Found) tells; the classes are unit-tested.
		for _, w := range r.Writes {
			if w.Landed && !w.Allowed {
				c.violate("hostile-agent", -1, r.At, "%s landed (%s): a write past the bounds of an agent identity", w.What, w.Path)
			}
		}
		if len(r.Listed) > 0 {
			c.violate("hostile-agent", -1, r.At, "the fleet view listed foreign node(s) %v as agents", r.Listed)
		}
		if len(r.Counted) > 0 {
			c.violate("hostile-agent", -1, r.At, "the fleet view counted foreign node(s) %v as having applied the live generation", r.Counted)
		}
		if len(r.Leftovers) > 0 {
			c.violate("hostile-agent", -1, r.At, "foreign node(s) %v survived confpush acl --repair", r.Leftovers)
		}
	}
}

// statusNodeACL is the ACL the agent whose session is conn gives its
// status node, read as an agent reads it.
func statusNodeACL(ctx context.Context, conn *zk.Conn) ([]zk.ACL, error) {
	fl, err := fleet.New(zkclient.Fixed(conn, nil), chaosRoot)
	if err != nil {
		return nil, err
	}
	return fl.StatusNodeACL(ctx)
}

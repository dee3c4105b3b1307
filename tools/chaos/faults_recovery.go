package chaos

// The trust-and-recovery fault kinds and the checks that cover them:
//
//   - agent-disk-full: the agent's outputs live on a small tmpfs of their
//     own, filled with a ballast file for a while. The agent must keep its
//     previous complete outputs (P1, P3) and, once the ballast is gone,
//     catch up without a new publish: the publisher is held while it
//     heals, so only the agent's own retry can bring it there (recovery).
//   - agent-reload-fail: the template target's reload command fails while
//     a flag file exists. After the flag goes (publisher held again), the
//     reload must succeed for the generation the agent applied, without a
//     new publish (reload-retry); at the end, the last successful reload
//     covers the final generation.
//   - forged-status: a session of the hostile agent identity tries to
//     create status nodes for agents that do not exist (refused by the
//     status quota), and squats a real agent's status node while that
//     agent is stopped. The fleet view never counts a forged node as
//     applied, no foreign node is created, and the real agent never
//     writes into the node it did not create (forged-status).
//   - ensemble-wipe: every server stopped, its data wiped, restarted on the
//     same ports; the publisher starts over on the empty tree. The checker
//     keeps the history read before the wipe and reasons per incarnation
//     (gkey): generations restart, an agent may move from the old
//     incarnation to the new one but never back (P2), the new root has a
//     new incarnation id (incarnation), and every agent converges within
//     the bound after the new incarnation's first generation (recovery).
//
// The harness depends on those features through one small function each
// (incarnationConfig, fleetView, runner.initTree).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// Trust-and-recovery fault kinds.
const (
	fAgentDiskFull   = "agent-disk-full"
	fAgentReloadFail = "agent-reload-fail"
	fForgedStatus    = "forged-status"
	fEnsembleWipe    = "ensemble-wipe"
)

// outFSSize is the size of each agent's output tmpfs: far above what a
// generation needs (a few MB at most), small enough to fill cheaply.
const outFSSize = "32m"

// ---------------------------------------------------------------- dependencies

// incarnationConfig is the agent configuration line that makes an agent
// follow a new incarnation of its root after an ensemble wipe (branch
// i13-wipe: `incarnation: follow|refuse`). It is written only when the
// agent (the confagent binary bin) accepts the key, so that this suite runs
// against agents without it (which then never recover from a wipe: the
// run reports it).
func incarnationConfig(bin, probeDir string, valid string) string {
	line := "incarnation: follow\n"
	p := filepath.Join(probeDir, "incarnation-probe.yaml")
	if err := os.WriteFile(p, []byte(valid+line), 0o644); err != nil {
		return ""
	}
	defer os.Remove(p)
	if _, err := checkConfig(bin, p); err != nil {
		return ""
	}
	return line
}

// checkConfig runs `confagent check-config` (the binary bin) on the
// configuration file path and returns what it printed: the agent's own
// loader judges the file, as the agents of the run will.
func checkConfig(bin, path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "check-config", "--config", path).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s check-config --config %s: %w\n%s", bin, path, err, out)
	}
	return string(out), nil
}

// fleetView is what a publisher sees of a rollout: the agents that
// `confpush status` (Fleet.List, Agent.Applied, fleet.Summarize) counts as
// having applied generation gen, and those a `publish --wait` (Fleet.Wait)
// counts, followed for waitFor. On branch i13-trust, Agent.Applied counts
// only trusted nodes (Agent.Trusted: in open mode ephemeral, agent_id equal
// to the node's name) and Wait never counts untrusted ones; the names
// used here are the same on both branches.
func fleetView(ctx context.Context, conn *zk.Conn, paths layout.Paths, gen int64, waitFor time.Duration) (applied []string, sum fleet.Summary, waited []string, err error) {
	fl, err := fleet.New(zkclient.Fixed(conn, nil), paths.Root, fleet.WithMeta(paths.Meta))
	if err != nil {
		return nil, fleet.Summary{}, nil, err
	}
	agents, err := fl.List(ctx)
	if err != nil {
		return nil, fleet.Summary{}, nil, err
	}
	for _, a := range agents {
		if a.Applied(gen) {
			applied = append(applied, a.ID)
		}
	}
	// A Min no rollout reaches: Wait follows until its deadline and
	// returns what it counted.
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	pr, _ := fl.Wait(wctx, gen, fleet.WaitOptions{Min: 1 << 20})
	return applied, fleet.Summarize(agents, gen), pr.Applied, nil
}

// ---------------------------------------------------------------- disk full

// mountOutputs puts the agent's output directory (the dir target and the
// template output) on a tmpfs of its own; unmounted at clean-up.
func mountOutputs(h *harness, a *agentProc) error {
	dir := filepath.Dir(a.dirOut)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+outFSSize+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount a tmpfs on %s for %s (the chaos suite needs root): %v: %s", dir, fAgentDiskFull, err, strings.TrimSpace(string(out)))
	}
	h.Cleanup(func() {
		if exec.Command("umount", dir).Run() != nil {
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return nil
}

func (a *agentProc) ballast() string { return filepath.Join(filepath.Dir(a.dirOut), ".chaos-ballast") }

// fillDisk takes every free block of the agent's output filesystem.
func fillDisk(a *agentProc) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(a.dirOut), &st); err != nil {
		return err
	}
	f, err := os.OpenFile(a.ballast(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	free := int64(st.Bavail) * st.Bsize
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("fallocate %d bytes: %w", free, err)
	}
	// Whatever fallocate left (it rounds to pages), a write takes.
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return nil
		}
	}
}

// diskFullStep fills the agent's output filesystem for s.Down, then heals
// it with the publisher held, waiting (at most the bound) for the agent to
// catch up with the newest acknowledged generation on its own.
func (n *nemesis) diskFullStep(ctx context.Context, a *agentProc, s step) {
	r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", for %v", s.Down))
	if err := fillDisk(a); err != nil {
		panic(fatalError{fmt.Sprintf("%s: fill the output filesystem: %v", a.id, err)})
	}
	sleep(ctx, s.Down)
	release, held := n.work.tryHold()
	defer release()
	want, _ := n.work.latest()
	behind := want != 0 && !n.shows(a, want)
	if err := os.Remove(a.ballast()); err != nil {
		panic(fatalError{fmt.Sprintf("%s: remove the ballast: %v", a.id, err)})
	}
	n.end(r)
	n.log.add("fault", "%s: disk healed, publisher held %v; behind generation %s then: %v", a.id, held, genName(want), behind)
	if !held || !behind || (a.picky && n.work.poisoned(want)) {
		return // nothing to wait for (the picky agent rightly stays behind a poisoned one)
	}
	deadline := time.Now().Add(n.bound)
	for time.Now().Before(deadline) && ctx.Err() == nil && !n.shows(a, want) {
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- reload failures

func (a *agentProc) reloadFlag() string { return filepath.Join(a.dir, "reload-fails") }
func (a *agentProc) reloadLog() string  { return filepath.Join(a.dir, "reloads.log") }

// reloadCommand is the template target's reload: it fails while the flag
// file exists; every run appends its verdict, the generation, the time and
// the request nonce of the output it reloaded (line 3 of the template
// output) to the reload log.
func (a *agentProc) reloadCommand() string {
	q := shellQuote
	rec := `"$ZKCONF_GENERATION $(date +%s%N) $(sed -n 3p "$ZKCONF_DEST")"`
	return fmt.Sprintf(`if [ -e %s ]; then echo "fail "%s >> %s; echo reload refused >&2; exit 1; fi; echo "ok "%s >> %s`,
		q(a.reloadFlag()), rec, q(a.reloadLog()), rec, q(a.reloadLog()))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// reloadLine is one line of a reload log.
type reloadLine struct {
	OK    bool
	Gen   int64
	At    time.Time
	Nonce string
}

// parseReloadLog reads a reload log; lines that do not parse (a reload
// killed while writing) are skipped.
func parseReloadLog(data []byte) []reloadLine {
	var out []reloadLine
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[0] != "ok" && f[0] != "fail") {
			continue
		}
		g, err1 := strconv.ParseInt(f[1], 10, 64)
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		l := reloadLine{OK: f[0] == "ok", Gen: g, At: time.Unix(0, ns)}
		if len(f) >= 5 && f[3] == "nonce" {
			l.Nonce = f[4]
		}
		out = append(out, l)
	}
	return out
}

func readReloadLog(a *agentProc) []reloadLine {
	b, _ := os.ReadFile(a.reloadLog())
	return parseReloadLog(b)
}

// reloadHeal is one healed reload failure: when the flag went, and the
// failed reload the agent then had to retry.
type reloadHeal struct {
	Agent  int
	At     time.Time
	Failed reloadLine
	Held   bool // nothing was published meanwhile
}

// reloadFailStep makes the agent's reloads fail for s.Down, then, with the
// publisher held, waits until the agent failed to reload the newest
// generation, removes the flag and waits (at most the bound) for the
// retry to succeed. Only a retry can: nothing new is published meanwhile.
func (n *nemesis) reloadFailStep(ctx context.Context, a *agentProc, s step) {
	r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", for %v", s.Down))
	if err := os.WriteFile(a.reloadFlag(), nil, 0o644); err != nil {
		panic(fatalError{err.Error()})
	}
	sleep(ctx, s.Down)
	release, held := n.work.tryHold()
	defer release()
	// Wait until the agent has nothing newer to apply and its last reload
	// failed: then, the publisher held, only a retry can make a reload
	// succeed. Not held, the newest failure is taken as it is.
	want, _ := n.work.latest()
	wantNonce := n.work.nonceOfKey(want)
	stuck := !held || a.picky && n.work.poisoned(want) // the picky agent stays on an older generation
	var failed *reloadLine
	deadline := time.Now().Add(n.bound)
	if want == 0 {
		deadline = time.Now() // nothing acknowledged in this incarnation yet
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		lines := readReloadLog(a)
		if l := len(lines); l > 0 && !lines[l-1].OK && (lines[l-1].Nonce == wantNonce || stuck) {
			failed = &lines[l-1]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.Remove(a.reloadFlag()); err != nil {
		panic(fatalError{err.Error()})
	}
	n.end(r)
	if failed == nil {
		n.log.add("fault", "%s: no failed reload of generation %s to retry (not exercised)", a.id, genName(want))
		return
	}
	h := reloadHeal{Agent: a.idx, At: time.Now(), Failed: *failed, Held: held}
	n.mu.Lock()
	n.reloadHeals = append(n.reloadHeals, h)
	n.mu.Unlock()
	n.log.add("fault", "%s: reload of generation %d (request %s) failed; flag removed, publisher held %v", a.id, failed.Gen, failed.Nonce, held)
	deadline = time.Now().Add(n.bound)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if retried(readReloadLog(a), h, n.bound) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retried reports whether a reload succeeded after the heal, within
// bound. Nothing was published meanwhile and the failed reload was of the
// newest generation: a success is the retry (or, should the agent still
// have had something older to apply, its next apply, which is no
// forgotten failure either).
func retried(lines []reloadLine, h reloadHeal, bound time.Duration) bool {
	for _, l := range lines {
		if l.OK && !l.At.Before(h.At) && !l.At.After(h.At.Add(bound)) {
			return true
		}
	}
	return false
}

// checkReloads verifies reload-retry over one agent's reload log: every
// healed failure was retried successfully within bound, and the agent's
// last reload, at the end, succeeded for the final generation (no
// forgotten failure).
func (c *checker) checkReloads(agent int, lines []reloadLine, heals []reloadHeal, finalGen int64, finalNonce string, bound time.Duration, now time.Time) {
	for _, h := range heals {
		if h.Agent == agent && !retried(lines, h, bound) {
			note := ""
			if h.Held {
				note = " (nothing was published meanwhile)"
			}
			c.violate("reload-retry", agent, h.At, "the failed reload of generation %d (request %s) was not retried successfully within %v after the reload command was fixed%s",
				h.Failed.Gen, h.Failed.Nonce, bound, note)
		}
	}
	var last *reloadLine
	for i := range lines {
		if last == nil || !lines[i].At.Before(last.At) {
			last = &lines[i]
		}
	}
	switch {
	case last == nil:
		c.violate("reload-retry", agent, now, "the template target's reload never ran")
	case !last.OK || last.Gen != finalGen || last.Nonce != finalNonce:
		verdict := "succeeded"
		if !last.OK {
			verdict = "failed"
		}
		c.violate("reload-retry", agent, now, "the last reload %s for generation %d (request %s); the final generation is %d (request %s)",
			verdict, last.Gen, last.Nonce, finalGen, finalNonce)
	}
}

// ---------------------------------------------------------------- forged status nodes

// fleetSample is one reading of the fleet view while forged nodes exist.
type fleetSample struct {
	At       time.Time
	Gen      int64
	Applied  []string // ids the view counts as having applied Gen
	AtLatest int      // fleet.Summarize's count
	Waited   []string // ids Fleet.Wait counts as having applied Gen
	Forged   []string // forged nodes that existed around the reading
}

// squatSample is one reading of a squatted status node.
type squatSample struct {
	At      time.Time
	Agent   int
	Path    string
	Ours    bool // still the forger's node (its ephemeral owner)
	Changed bool // content differs from what the forger wrote
}

// forgedStatus is a status document claiming generation gen.
func forgedStatus(id string, gen int64) []byte {
	b, _ := json.Marshal(map[string]any{"agent_id": id, "root": chaosRoot, "generation": gen, "cache_generation": gen,
		"attempted": gen, "state": "ready", "ready": true, "publish_id": "forged", "since": time.Now(), "targets": []any{}})
	return b
}

// forgedStep: another session (the forger, straight to the servers)
// creates a status node for an agent that does not exist, in a form open
// mode can tell apart (s.N: 0 a persistent node, 1 a copy of another
// agent's status under a new name), and squats this agent's status node
// while the agent is stopped; the fleet view and the squatted node are
// sampled for s.Down, then everything forged is removed.
func (n *nemesis) forgedStep(ctx context.Context, a *agentProc, s step) {
	forger, err := n.auxDial(n.hostileCreds)
	if err != nil {
		n.log.add("fault", "%s: forger cannot connect (%v); skipped", fForgedStatus, err)
		return
	}
	defer n.auxClose(forger)
	viewer, err := n.auxDial(n.viewerCreds)
	if err != nil {
		n.log.add("fault", "%s: fleet viewer cannot connect (%v); skipped", fForgedStatus, err)
		return
	}
	defer n.auxClose(viewer)
	paths := layout.New(chaosRoot, layout.DefaultMeta)
	gen, err := liveGeneration(forger)
	if err != nil {
		n.log.add("fault", "%s: cannot read the live generation (%v); skipped", fForgedStatus, err)
		return
	}
	ghost := fmt.Sprintf("ghost-%d-%d", a.idx, s.Pick)
	variant := []string{"persistent node", "copy of a real agent's status"}[s.N%2]
	r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", ghost %s (%s) claiming generation %d, squatting %s's node, for %v", ghost, variant, gen, a.id, s.Down))
	defer n.end(r)

	data, flags := forgedStatus(ghost, gen), int32(0)
	if s.N%2 == 1 {
		data, flags = nil, zk.FlagEphemeral
		for _, o := range n.agents {
			if o != a {
				if b, _, err := forger.Get(paths.StatusNode(o.id)); err == nil {
					data = b
					break
				}
			}
		}
		if data == nil {
			data = forgedStatus(n.agents[0].id, gen)
		}
	}
	// The tree has a policy: the status quota must refuse a name that is
	// no agent identity of it (the forger, an agent identity, holds
	// CREATE on the status parent).
	ghostPath := paths.StatusNode(ghost)
	_, err = forger.Create(ghostPath, data, flags, zk.WorldACL(zk.PermAll))
	switch {
	case err == nil:
		n.violate(Violation{Property: "forged-status", Agent: -1, At: time.Now(),
			Msg: fmt.Sprintf("an agent identity created the status node %s, a name no agent identity has", ghostPath)})
		defer func() { _ = forger.Delete(ghostPath, -1) }()
	case !zkclient.IsQuotaExceeded(err):
		n.log.add("fault", "%s: create %s: %v", fForgedStatus, ghostPath, err)
	}

	// Squat: the agent stops cleanly (its ephemeral node goes with its
	// session), the forger takes the name, the agent starts again.
	squat := paths.StatusNode(a.id)
	squatData := forgedStatus(a.id, gen)
	var squatted bool
	if a.running() && a.waitStarted(30*time.Second) {
		a.stop(syscall.SIGTERM, 15*time.Second)
		deadline := time.Now().Add(3 * n.sess)
		for time.Now().Before(deadline) {
			if _, err := forger.Create(squat, squatData, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err == nil {
				squatted = true
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := a.start(); err != nil {
			panic(fatalError{err.Error()})
		}
	}
	forged := []string{ghost}
	end := time.Now().Add(s.Down)
	for first := true; first || time.Now().Before(end); first = false {
		if ctx.Err() != nil && !first {
			break
		}
		at := time.Now()
		vctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		applied, sum, waited, err := fleetView(vctx, viewer, paths, gen, time.Second)
		cancel()
		if err == nil {
			n.recordFleet(fleetSample{At: at, Gen: gen, Applied: applied, AtLatest: sum.AtLatest, Waited: waited, Forged: forged})
		}
		if squatted {
			b, st, err := forger.Get(squat)
			if err == nil {
				n.recordSquat(squatSample{At: time.Now(), Agent: a.idx, Path: squat,
					Ours: st.EphemeralOwner == forger.SessionID(), Changed: string(b) != string(squatData)})
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	if squatted {
		_ = forger.Delete(squat, -1)
	}
}

// auxDial opens a session of the nemesis's own (the forger's, the fleet
// viewer's), holding creds. An ensemble wipe closes them all: a session that has seen the
// old ensemble's zxids is refused by the new one, and its requests would
// wait for ever.
func (n *nemesis) auxDial(creds string) (*zk.Conn, error) {
	conn, err := n.dial(creds)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.aux == nil {
		n.aux = map[*zk.Conn]bool{}
	}
	n.aux[conn] = true
	return conn, nil
}

func (n *nemesis) auxClose(conn *zk.Conn) {
	n.mu.Lock()
	delete(n.aux, conn)
	n.mu.Unlock()
	conn.Close()
}

func (n *nemesis) closeAux() {
	n.mu.Lock()
	conns := slices.Collect(maps.Keys(n.aux))
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (n *nemesis) recordFleet(s fleetSample) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fleetSamples = append(n.fleetSamples, s)
}

func (n *nemesis) recordSquat(s squatSample) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.squatSamples = append(n.squatSamples, s)
}

func liveGeneration(conn *zk.Conn) (int64, error) {
	b, _, err := conn.Get(chaosRoot)
	if err != nil {
		return 0, err
	}
	e, err := decodeEntry(b)
	if err != nil {
		return 0, err
	}
	return e.Gen, nil
}

// checkForged verifies forged-status: no reading of the fleet view counted
// a forged node as applied, and no squatted node, while still the
// forger's, got content other than the forger's.
func (c *checker) checkForged(fleetSamples []fleetSample, squats []squatSample) {
	forgedIn := func(ids, forged []string) (out []string) {
		for _, id := range ids {
			if slices.Contains(forged, id) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, s := range fleetSamples {
		counted := forgedIn(s.Applied, s.Forged)
		real := len(s.Applied) - len(counted)
		switch {
		case len(counted) > 0:
			c.violate("forged-status", -1, s.At, "the fleet view (Fleet.List) counts forged status node(s) %v as having applied generation %d", counted, s.Gen)
		case s.AtLatest > real:
			c.violate("forged-status", -1, s.At, "the fleet summary counts %d agents at generation %d, only %d real agents applied it", s.AtLatest, s.Gen, real)
		}
		if w := forgedIn(s.Waited, s.Forged); len(w) > 0 {
			c.violate("forged-status", -1, s.At, "a rollout wait (Fleet.Wait) counts forged status node(s) %v as having applied generation %d", w, s.Gen)
		}
	}
	seen := map[int]bool{}
	for _, s := range squats {
		if s.Ours && s.Changed && !seen[s.Agent] {
			seen[s.Agent] = true
			c.violate("forged-status", s.Agent, s.At, "agent-%d wrote its status into %s, a node another session created", s.Agent, s.Path)
		}
	}
}

// ---------------------------------------------------------------- ensemble wipe

// wipeStep stops every server, wipes their data, restarts them on the same
// ports and lets the runner start the publisher over on the empty tree
// (which also reads the old incarnation's history first).
func (n *nemesis) wipeStep(ctx context.Context, s step) {
	release := n.work.hold()
	defer release()
	if err := n.beforeWipe(); err != nil {
		n.log.add("fault", "%s: cannot read the history before the wipe (%v); skipped", fEnsembleWipe, err)
		return
	}
	c := n.cluster
	r := n.begin(s.Kind, "every server", -1, fmt.Sprintf(", down %v", s.Down))
	for i := range c.Servers {
		c.Kill(i)
	}
	n.closeAux()
	// All down before any is wiped and restarted: a wiped server starting
	// beside one that still has the data would just sync it back (which is
	// why zktest's one-server Wipe, on branch i13-wipe, does not do here).
	for _, srv := range c.Servers {
		if err := wipeData(filepath.Join(srv.Dir, "data")); err != nil {
			panic(fatalError{fmt.Sprintf("wipe %s: %v", srv.Dir, err)})
		}
	}
	sleep(ctx, s.Down)
	for i := range c.Servers {
		c.StartServer(i)
	}
	for i := range c.Servers {
		c.WaitServing(i)
	}
	if err := n.afterWipe(); err != nil {
		panic(fatalError{fmt.Sprintf("after the wipe: %v", err)})
	}
	n.end(r)
}

// wipeData removes everything of a server's data directory but myid: the
// server is the same, its data is gone.
func wipeData(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != "myid" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkIncarnations verifies that every wipe gave the tree a new
// incarnation id and that every manifest of one incarnation carries its
// id. views are in the order they were read.
func (c *checker) checkIncarnations(views []*zkView, now time.Time) {
	for i, v := range views {
		id := v.live.IncID
		for g, e := range v.history {
			if e.IncID != id {
				c.violate("incarnation", -1, now, "incarnation %d: generation %d records incarnation %q, the root %q", v.inc, g, e.IncID, id)
				break
			}
		}
		if i == 0 {
			continue
		}
		if prev := views[i-1].live.IncID; id == "" || id == prev {
			c.violate("incarnation", -1, now, "after the ensemble wipe the root's incarnation is %q, before it %q: a new incarnation must have a new id", id, prev)
		}
	}
}

// dialDirect opens a session straight to the servers (no proxy), holding
// creds ("user:password").
func dialDirect(addrs []string, sess time.Duration, creds string) (*zk.Conn, error) {
	conn, ev, err := zk.Connect(addrs, sess, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(3 * sess)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				if err := conn.AddAuth("digest", []byte(creds)); err != nil {
					conn.Close()
					return nil, err
				}
				return conn, nil
			}
		case <-deadline:
			conn.Close()
			return nil, errors.New("no session within 3 session timeouts")
		}
	}
}

// newPublisher dials the publisher's session through its proxies.
func (r *runner) newPublisher() (*zk.Conn, *publish.Publisher, error) {
	return r.newPublisherAt(chaosRoot, "chaos@publisher")
}

// newPublisherAt dials a publisher session for root through the
// publisher's proxies.
func (r *runner) newPublisherAt(root, name string) (*zk.Conn, *publish.Publisher, error) {
	// Its credentials need a server to answer: a publisher fault (a
	// partition of its proxies) may be under way, and lasts seconds.
	var conn *zk.Conn
	var sess *zkclient.Session
	var err error
	for deadline := time.Now().Add(2 * time.Minute); ; {
		conn, sess, err = zkclient.DialConn(zkclient.Config{Servers: addrs(r.pubProxies), SessionTimeout: r.cfg.SessionTimeout,
			Logger: r.pubLogger, Auth: r.ids.publisher})
		if err == nil || !zkclient.IsRecoverable(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return nil, nil, err
	}
	pub, err := publish.New(zkclient.Fixed(conn, sess), root, publish.WithRetention(1<<30), publish.WithPublisherName(name), publish.WithLogger(r.pubLogger))
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, pub, nil
}

// zk is the checker's current session.
func (r *runner) zk() *zk.Conn {
	r.zkMu.Lock()
	defer r.zkMu.Unlock()
	return r.checkZK
}

// shows reports whether the agent shows generation k (a gkey) in both
// outputs, as the checker last read them.
func (r *runner) shows(a *agentProc, k int64) bool {
	o := r.obs[a.idx]
	d, t := o.latest(tDir), o.latest(tTmpl)
	_, g := splitKey(k)
	return d != nil && t != nil && !d.Absent && t.Gen == g && t.Nonce == r.work.nonceOfKey(k) &&
		digest(obsSigs(d.Items)) == digest(r.work.itemsOf(k))
}

// beforeWipe reads the history of the incarnation about to be wiped (the
// publisher is held): the checker keeps it in memory.
func (r *runner) beforeWipe() error {
	var v *zkView
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if v, err = readZK(r.zk(), chaosRoot, layout.DefaultMeta); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return err
	}
	cv, err := r.readCommon()
	if err != nil {
		return fmt.Errorf("%s: %w", commonRoot, err)
	}
	r.zkMu.Lock()
	defer r.zkMu.Unlock()
	v.inc = len(r.preViews)
	r.preViews = append(r.preViews, v)
	cv.inc = v.inc
	r.commonPre = append(r.commonPre, cv)
	r.log.add("run", "before the wipe: incarnation %d (%q) holds %d generations, live %d", v.inc, v.live.IncID, len(v.history), v.live.Gen)
	return nil
}

// afterWipe starts over on the recreated ensemble, as an operator would:
// new sessions for the checker and the publisher (the old ones have seen
// zxids the new ensemble never had and are refused), the tree initialised,
// the publisher pointed at the new incarnation.
func (r *runner) afterWipe() error {
	check, err := dialDirect(r.cluster.Addrs(), r.cfg.SessionTimeout, r.ids.publisher)
	if err != nil {
		return fmt.Errorf("checker session: %w", err)
	}
	if err := r.initTree(r.cluster.Addrs()); err != nil {
		check.Close()
		return fmt.Errorf("initialise the tree: %w", err)
	}
	conn, pub, err := r.newPublisher()
	if err != nil {
		check.Close()
		return fmt.Errorf("publisher session: %w", err)
	}
	cconn, cpub, err := r.newPublisherAt(commonRoot, "chaos@common")
	if err != nil {
		check.Close()
		conn.Close()
		return fmt.Errorf("%s publisher session: %w", commonRoot, err)
	}
	r.zkMu.Lock()
	oldCheck, oldPub, oldCommon := r.checkZK, r.pubConn, r.commonConn
	r.checkZK, r.pubConn, r.commonConn = check, conn, cconn
	r.zkMu.Unlock()
	oldCheck.Close()
	oldPub.Close()
	oldCommon.Close()
	r.work.newIncarnation(pub)
	r.common.newIncarnation(cpub, r.work.incarnation())
	r.log.add("run", "after the wipe: new sessions; the publisher starts incarnation %d", r.work.incarnation())
	return nil
}

// wipeRecoveries turns each ensemble wipe into one recovery window per
// agent, from the first generation acknowledged in the new incarnation:
// every agent must reach it within the bound (checkRecoveries).
func wipeRecoveries(faults []faultRec, records []*pubRecord, agents int) []faultRec {
	var out []faultRec
	inc := 0
	for _, f := range faults {
		if f.Kind != fEnsembleWipe || f.End.IsZero() {
			continue
		}
		inc++
		var first *pubRecord
		for _, rec := range records {
			if rec.Inc == inc && rec.Outcome == outAcked && (first == nil || rec.End.Before(first.End)) {
				first = rec
			}
		}
		if first == nil {
			continue
		}
		for i := range agents {
			out = append(out, faultRec{Kind: fEnsembleWipe, Target: "the new incarnation", Agent: i, Start: f.Start, End: first.End})
		}
	}
	return out
}

// add sums two incarnations' figures.
func (s publishStats) add(o publishStats) publishStats {
	s.Attempted += o.Attempted
	s.Acked += o.Acked
	s.Failed += o.Failed
	s.Unknown += o.Unknown
	s.UnknownLanded += o.UnknownLanded
	s.UnknownNotLanded += o.UnknownNotLanded
	s.Marker += o.Marker
	s.Big += o.Big
	s.Poison += o.Poison
	s.Rollback += o.Rollback
	s.Recovered += o.Recovered
	s.Generations += o.Generations
	if s.ByKind == nil {
		s.ByKind = map[string]int{}
	}
	for k, n := range o.ByKind {
		s.ByKind[k] += n
	}
	return s
}

// samples returns what the trust-and-recovery and hostile-agent faults
// recorded for the checker.
func (n *nemesis) samples() ([]reloadHeal, []fleetSample, []squatSample, []hostileRecord) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.reloadHeals), slices.Clone(n.fleetSamples), slices.Clone(n.squatSamples), slices.Clone(n.hostile)
}

// poisoned reports whether acknowledged generation k (a gkey) carries
// content the picky agent's check rejects.
func (w *workload) poisoned(k int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.acked[k] {
		if w.poison[sigOf(d)] {
			return true
		}
	}
	return false
}

// nonceOfKey is the request nonce of an acknowledged generation (gkey).
func (w *workload) nonceOfKey(k int64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return nonceOf(w.acked[k])
}

package access_test

// The access policy on a live fleet: real agents, each with its own
// identity, under a tree Init set up, read by fleet; attackers holding one
// agent identity; and Repair cleaning up after them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/syncbuf"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

var paths = layout.New(root, layout.DefaultMeta)

// Test identities: random-looking passwords of at least 16 bytes.
var passwords = map[string]string{
	"publisher": "Pu8l1sher-Pa55word-x7Q",
	"web-1":     "web1-Secret-Pw-9fK2zqA",
	"web-2":     "web2-Secret-Pw-3mL8vtB",
}

func ident(t *testing.T, user string) aclmodel.Identity {
	t.Helper()
	id, err := aclmodel.ParseIdentity(user + ":" + passwords[user])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func creds(user string) string { return user + ":" + passwords[user] }

// securedTree initializes ACLs on the root with the publisher and the
// given agent identities, and returns a publisher and its session.
func securedTree(t *testing.T, c *zktest.Cluster, agents ...string) (*publish.Publisher, *zk.Conn) {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second, Auth: creds("publisher")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	pol := access.Policy{Publisher: ident(t, "publisher")}
	for _, a := range agents {
		pol.Agents = append(pol.Agents, ident(t, a))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := access.Init(ctx, conn, paths, pol); err != nil {
		t.Fatal(err)
	}
	p, err := publish.New(zkclient.Fixed(conn, sess), root)
	if err != nil {
		t.Fatal(err)
	}
	return p, conn
}

// rawSession is a client session holding user's credentials.
func rawSession(t *testing.T, c *zktest.Cluster, user string) *zk.Conn {
	t.Helper()
	conn := c.Connect(t, 4*time.Second)
	if err := conn.AddAuth("digest", []byte(creds(user))); err != nil {
		t.Fatal(err)
	}
	return conn
}

// startSecureAgent runs a real agent with its own identity.
func startSecureAgent(t *testing.T, servers []string, id string) *agent.Daemon {
	t.Helper()
	return fleettest.RunAgent(t, root, id, func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: 2 * time.Second, Auth: creds(id)}
	})
}

// TestForgedStatusNotCounted: an attacker holding agent identity web-1
// tries to create status nodes claiming the live generation: under a name
// the policy does not give an identity (refused by the status quota, with
// the classified error), web-2's name while web-2 is stopped (with the
// ACL web-1's own node would have), and its own name with a world ACL.
// Nothing is counted: List shows the nodes untrusted with the reason, and
// a --all wait does not succeed (both policy agents are gone). On the
// code before the quotas the foreign name was created.
func TestForgedStatusNotCounted(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := fleettest.PublishConf(t, p, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	forger := rawSession(t, c, "web-1")
	_, err := forger.Create(paths.StatusNode("web-9"), fleettest.ForgedStatus(t, root, "web-9", g), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("status node under a foreign name: %v; want refused by the status quota", err)
	}
	if qe := zkclient.Explain(err, paths.StatusNode("web-9"), zkclient.OpCreate); !errors.Is(qe, zkclient.ErrQuotaExceeded) ||
		!strings.Contains(qe.Error(), "quota exceeded: create on "+paths.StatusNode("web-9")) {
		t.Errorf("explained: %v", qe)
	}
	own, err := statusNodeACL(ctx, forger, paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Create(paths.StatusNode("web-2"), fleettest.ForgedStatus(t, root, "web-2", g), zk.FlagEphemeral, own); err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Create(paths.StatusNode("web-1"), fleettest.ForgedStatus(t, root, "web-1", g), zk.FlagEphemeral,
		zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	agents, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"web-1", "web-2"} {
		a, ok := fleettest.Find(agents, id)
		if !ok || a.Trusted() || a.Applied(g) || a.Untrusted == "" || !a.Gone() {
			t.Errorf("forged %s listed as %+v; want untrusted, not applied, gone", id, a)
		}
	}
	if _, ok := fleettest.Find(agents, "web-9"); ok {
		t.Error("web-9 listed")
	}
	if s := fleet.Summarize(agents, g); s.AtLatest != 0 || s.Untrusted != 2 {
		t.Errorf("summary %v", s)
	}

	// A reader that cannot see the agents' digests (here an agent
	// identity) cannot verify anything: its wait fails at once, with the
	// documented permission error.
	if _, err := fleettest.Fleet(t, forger, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true}); err == nil ||
		!strings.Contains(err.Error(), "cannot verify the agents' status nodes") ||
		!errors.Is(err, zkclient.ErrPermission) || ctx.Err() != nil {
		t.Errorf("wait by an agent identity = %v; want a verification error at once", err)
	}

	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
	var re *fleet.RolloutError
	if !errors.As(err, &re) || len(pr.Applied) != 0 {
		t.Fatalf("wait --all with forged nodes only = %+v, %v; want an incomplete rollout", pr, err)
	}
	if !slices.Equal(pr.Gone, []string{"web-1", "web-2"}) {
		t.Errorf("progress %+v", pr)
	}
}

// TestPolicyAgentExpected: an agent identity of the policy whose agent
// never started is expected: a --all wait does not succeed with only the
// other agent applied, and names it gone. On the old code only the
// running agent was needed.
func TestPolicyAgentExpected(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := fleettest.PublishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
	if err == nil {
		t.Fatalf("wait --all succeeded without web-2: %+v", pr)
	}
	if !slices.Equal(pr.Applied, []string{"web-1"}) || !slices.Equal(pr.Gone, []string{"web-2"}) || pr.Needed != 2 {
		t.Errorf("progress %+v", pr)
	}
}

// TestSquattedStatusNodeNotWritten: identity web-1 creates web-2's status
// node, world-readable and writable, before web-2 starts. The real web-2
// agent does not write into it (its status, check output included, would
// be readable by anyone): it reports the conflict in /status and /readyz.
// confpush acl --repair (access.Repair) deletes the squat, and web-2
// creates its own node at once, trusted. On the old code web-2 wrote its
// status into the squatted node.
func TestSquattedStatusNodeNotWritten(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := fleettest.PublishConf(t, p, "v1")
	squatter := rawSession(t, c, "web-1")
	if _, err := squatter.Create(paths.StatusNode("web-2"), []byte("{}"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	d := startSecureAgent(t, c.Addrs(), "web-2")
	fleettest.Eventually(t, "web-2 to report the conflict", func() bool { return d.Status().StatusNodeConflict != "" })
	// Readiness names the first reason it finds, and the conflict can be
	// found before the first apply (the status writer may run first on a
	// busy machine): judge it once the generation is applied.
	fleettest.Eventually(t, "web-2 to apply", func() bool { return d.Status().Generation == g })
	st := d.Status()
	if st.Ready || !strings.Contains(st.NotReadyReason, "owned by another session") {
		t.Errorf("readiness with a squatted node = %v %q", st.Ready, st.NotReadyReason)
	}
	if v := conflictGauge(t, d); v != 1 {
		t.Errorf("zkconf_agent_status_node_conflict = %v during the conflict, want 1", v)
	}
	// Still the squatter's, unwritten.
	data, stat, err := conn.Get(paths.StatusNode("web-2"))
	if err != nil || string(data) != "{}" || stat.EphemeralOwner != squatter.SessionID() {
		t.Fatalf("squatted node = %q (owner %x, squatter %x), %v; want it untouched", data, stat.EphemeralOwner, squatter.SessionID(), err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
	if a, ok := fleettest.Find(agents, "web-2"); err != nil || !ok || !a.Gone() ||
		!strings.Contains(a.Untrusted, "its ACL is world:anyone:cdrwa, not what agent web-2's identity gives it") {
		t.Errorf("squatted web-2 listed as %+v, %v; want gone, its node untrusted for its ACL", a, err)
	}
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []aclmodel.Identity{ident(t, "web-1"), ident(t, "web-2")}}
	if _, err := access.Repair(ctx, conn, paths, pol); err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, "web-2's own, trusted node", func() bool {
		agents, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
		a, ok := fleettest.Find(agents, "web-2")
		return err == nil && ok && a.Applied(g)
	})
	if st := d.Status(); st.StatusNodeConflict != "" {
		t.Errorf("conflict still reported after the take-over: %q", st.StatusNodeConflict)
	}
	if v := conflictGauge(t, d); v != 0 {
		t.Errorf("zkconf_agent_status_node_conflict = %v after the take-over, want 0", v)
	}
}

func conflictGauge(t *testing.T, d *agent.Daemon) float64 {
	t.Helper()
	v, ok := d.Metrics().Value("zkconf_agent_status_node_conflict")
	if !ok {
		t.Fatal("no zkconf_agent_status_node_conflict metric")
	}
	return v
}

// TestRegistryNode: a running agent registers itself with its labels and
// hostname, in the node confpush init created for its identity (another
// agent identity can neither read, write nor delete it, nor create a
// registration of its own under any name), and reports its labels in its
// status node.
func TestRegistryNode(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := fleettest.PublishConf(t, p, "v1")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, acancel := context.WithCancel(ctx)
	d, err := agent.NewDaemon(actx, agent.Options{
		Root: root, AgentID: "web-1", StateDir: filepath.Join(dir, "state"), Labels: map[string]string{"role": "web"},
		ZK: zkclient.Config{Servers: c.Addrs(), SessionTimeout: 2 * time.Second, Auth: creds("web-1")},
		Targets: []agent.TargetSpec{{Name: "conf", Kind: agent.KindFile, Item: "app.conf",
			Dest: filepath.Join(dir, "app.conf"), Mode: 0o640, UID: -1, GID: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(actx); close(done) }()
	t.Cleanup(func() { acancel(); <-done; d.Close() })

	var agents []fleet.Agent
	fleettest.Eventually(t, "web-1 registered and applied", func() bool {
		agents, err = fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
		a, ok := fleettest.Find(agents, "web-1")
		return err == nil && ok && a.Applied(g) && a.Registration != nil
	})
	a, _ := fleettest.Find(agents, "web-1")
	host, _ := os.Hostname()
	if a.RegistryUntrusted != "" || a.Registration.Labels["role"] != "web" || a.Registration.Hostname != host ||
		a.Registration.FirstSeen.IsZero() || a.Registration.LastSeen.Before(a.Registration.FirstSeen) {
		t.Errorf("registration %+v (untrusted: %q)", a.Registration, a.RegistryUntrusted)
	}
	if a.Status.Labels["role"] != "web" || a.Status.Labels[agent.HostnameLabel] != host {
		t.Errorf("status labels %v", a.Status.Labels)
	}
	web2 := rawSession(t, c, "web-2")
	_, _, err = web2.Get(paths.AgentNode("web-1"))
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("web-2 reads web-1's registration: %v", err)
	}
	if err := web2.Delete(paths.AgentNode("web-1"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("web-2 deletes web-1's registration: %v", err)
	}

	// web-2's identity can neither register another name nor write
	// web-1's registration: confpush init created web-1's node, for
	// web-1 alone.
	if _, err := web2.Create(paths.AgentNode("web-5"), []byte(`{"first_seen":"2020-01-01T00:00:00Z"}`), 0,
		zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("web-2 creates a registration for web-5: %v; want NoAuth (agents may not create registrations)", err)
	}
	if _, err := web2.Set(paths.AgentNode("web-1"), []byte(`{}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("web-2 writes web-1's registration: %v", err)
	}
	acl, _, err := conn.GetACL(paths.AgentNode("web-1"))
	pol := access.Policy{Publisher: ident(t, "publisher")}
	if err != nil || !aclmodel.SameACL(acl, pol.RegistryNodeACL(ident(t, "web-1"))) {
		t.Errorf("web-1's registration ACL %v, %v; want publisher cdrwa, web-1 rw", acl, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
	if err == nil || !slices.Equal(pr.Gone, []string{"web-2"}) || !slices.Contains(pr.Applied, "web-1") {
		t.Errorf("wait --all = %+v, %v; want web-1 applied, web-2 (in the policy, never started) gone", pr, err)
	}
}

// startLogged runs an agent with identity user under agent id, logging
// into the returned buffer.
func startLogged(t *testing.T, c *zktest.Cluster, id, user string) *syncbuf.Buffer {
	t.Helper()
	logs := &syncbuf.Buffer{}
	fleettest.RunAgent(t, root, id, func(o *agent.Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.ZK = zkclient.Config{Servers: c.Addrs(), SessionTimeout: 2 * time.Second, Auth: creds(user)}
	})
	return logs
}

// TestAgentIDMustBeUser: under ACLs an agent whose agent_id is not its
// identity's user warns at start, and cannot even create its status node:
// the status quota refuses a name that is no agent identity of the policy,
// and the agent logs the classified error (nobody could tell its node
// from another identity's squat).
func TestAgentIDMustBeUser(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1")
	fleettest.PublishConf(t, p, "v1")
	logs := startLogged(t, c, "host-x", "web-1")
	fleettest.Eventually(t, "the agent_id warning and the refused status node", func() bool {
		s := logs.String()
		return strings.Contains(s, "agent_id differs from the user of the agent's credentials") &&
			strings.Contains(s, "status node not written") &&
			strings.Contains(s, "quota exceeded: create on "+paths.StatusNode("host-x"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fleettest.Find(f.Agents, "host-x"); ok || len(f.Skipped) != 0 {
		t.Errorf("host-x listed: %+v, skipped %v", f.Agents, f.Skipped)
	}
	if a, _ := fleettest.Find(f.Agents, "web-1"); !a.Gone() {
		t.Errorf("web-1 = %+v; want gone", a)
	}
}

// TestRegistryMissingOnOldTree: on a tree initialized before the registry
// existed the agent cannot create its registry node (no CREATE on the
// metadata base): it warns and keeps working; confpush acl reports the
// registry missing, acl --repair creates it and the agent's node in it,
// and the agent registers on its next status write.
func TestRegistryMissingOnOldTree(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1")
	for _, n := range []string{paths.AgentNode("web-1"), paths.Agents()} {
		if err := conn.Delete(n, -1); err != nil {
			t.Fatal(err)
		}
	}
	fleettest.PublishConf(t, p, "v1")
	logs := startLogged(t, c, "web-1", "web-1")
	fleettest.Eventually(t, "the registry warning", func() bool {
		s := logs.String()
		return strings.Contains(s, "agent registry node not written") && strings.Contains(s, "creates the registry")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []aclmodel.Identity{ident(t, "web-1")}}
	ms, err := access.Check(ctx, conn, paths, pol)
	if err != nil || !slices.ContainsFunc(ms, func(m access.Mismatch) bool { return m.Path == paths.Agents() && m.Fix == access.FixCreate }) {
		t.Fatalf("Check = %v, %v; want the registry missing", ms, err)
	}
	if _, err := access.Repair(ctx, conn, paths, pol); err != nil {
		t.Fatal(err)
	}
	fleettest.PublishConf(t, p, "v2")
	fleettest.Eventually(t, "web-1 registered", func() bool {
		ok, _, err := conn.Exists(paths.AgentNode("web-1"))
		return err == nil && ok
	})
}

// ownStatus is a status node's data claiming generation g, as agent id.
func ownStatus(t *testing.T, id string, g int64) []byte {
	t.Helper()
	b, err := json.Marshal(fleet.Status{AgentID: id, Root: root, Generation: g, Attempted: g, CacheGeneration: g,
		State: "live", Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgentIdentityFloodRefused is the flood an attacker holding one agent
// identity (web-1) ran against the previous release: 40 registrations and
// 40 status nodes of 1 MB under names of its choosing, sent at once, 2,000
// tiny registrations, an oversized status node and registration of its own.
// Every write past the bounds is refused (registrations by ACL: agents may
// not create them; status nodes by the status quota, with the classified
// quota error), the server stays up holding next to nothing, and a --all
// rollout completes with the honest agent (web-2) and web-1's own status
// node: nothing forged is waited for. On the code before the quotas the
// writes landed, the 256 MB test server ran out of heap, and the
// registrations that landed blocked the wait.
func TestAgentIdentityFloodRefused(t *testing.T) {
	c := zktest.Start(t) // its own server: the test reads server-wide counters (mntr)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := fleettest.PublishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-2")
	hostile := rawSession(t, c, "web-1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	own, err := statusNodeACL(ctx, hostile, paths)
	if err != nil {
		t.Fatal(err)
	}

	big := make([]byte, 1_000_000)
	type write struct {
		path string
		err  error
	}
	var mu sync.Mutex
	var writes []write
	var wg sync.WaitGroup
	try := func(path string, fn func() error) {
		wg.Go(func() {
			err := fn()
			mu.Lock()
			writes = append(writes, write{path, err})
			mu.Unlock()
		})
	}
	for i := range 40 {
		reg, st := paths.AgentNode(fmt.Sprintf("big-%d", i)), paths.StatusNode(fmt.Sprintf("big-%d", i))
		try(reg, func() error { _, err := hostile.Create(reg, big, 0, own); return err })
		try(st, func() error { _, err := hostile.Create(st, big, zk.FlagEphemeral, own); return err })
	}
	for i := range 2000 {
		reg := paths.AgentNode("forged-" + strconv.Itoa(i))
		try(reg, func() error { _, err := hostile.Create(reg, []byte("{}"), 0, own); return err })
	}
	wg.Wait()
	for _, w := range writes {
		switch {
		case strings.HasPrefix(w.path, paths.Agents()+"/"):
			if !errors.Is(w.err, zk.ErrNoAuth) {
				t.Fatalf("registration %s by an agent identity: %v; want NoAuth", w.path, w.err)
			}
		case !zkclient.IsQuotaExceeded(w.err):
			t.Fatalf("status node %s under a foreign name: %v; want refused by the quota", w.path, w.err)
		}
	}

	// Its own nodes are bounded too.
	_, err = hostile.Create(paths.StatusNode("web-1"), make([]byte, fleet.MaxStatusBytes+1), zk.FlagEphemeral, own)
	if qe := zkclient.Explain(err, paths.StatusNode("web-1"), zkclient.OpCreate); !errors.Is(qe, zkclient.ErrQuotaExceeded) ||
		!strings.Contains(qe.Error(), "quota exceeded: create on "+paths.StatusNode("web-1")) {
		t.Errorf("oversized own status node: %v", qe)
	}
	_, err = hostile.Set(paths.AgentNode("web-1"), make([]byte, fleet.MaxRegistrationBytes+1), -1)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("oversized own registration: %v; want refused by the quota", err)
	}
	if _, err := hostile.Create(paths.StatusNode("web-1"), ownStatus(t, "web-1", g), zk.FlagEphemeral, own); err != nil {
		t.Fatalf("web-1's own status node within its bound: %v", err)
	}

	// The server is up and holds none of it.
	if _, err := c.Mode(0); err != nil {
		t.Fatalf("server after the flood: %v", err)
	}
	m, err := c.Mntr(0)
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := strconv.Atoi(m["zk_approximate_data_size"]); size > 1<<20 {
		t.Errorf("the server holds %d bytes of data after the flood; want next to nothing", size)
	}
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil || !slices.Equal(pr.Applied, []string{"web-1", "web-2"}) {
		t.Fatalf("wait --all after the flood = %+v, %v; want web-1 and web-2 applied, nothing else expected", pr, err)
	}
}

// TestForeignRegistrationsNeverExpected: registrations whose names are no
// agent identity of the policy (left from before the quotas: agents could
// create them then; here made by the publisher's identity) are not read,
// not expected and do not block a --all wait; Read reports them, and
// confpush acl --repair deletes them. On the old code each was an
// expected, gone agent and the wait could not complete.
func TestForeignRegistrationsNeverExpected(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p, conn := securedTree(t, c, "web-1")
	g := fleettest.PublishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-1")
	var ops []any
	for i := range 500 {
		ops = append(ops, &zk.CreateRequest{Path: paths.AgentNode(fmt.Sprintf("forged-%03d", i)), Data: []byte("{}"),
			Acl: zk.WorldACL(zk.PermAll)})
	}
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil || !slices.Equal(pr.Applied, []string{"web-1"}) || len(pr.Foreign) != 500 || pr.Needed != 1 {
		t.Fatalf("wait --all with 500 foreign registrations = applied %v, needed %d, %d foreign, %v; want web-1 alone",
			pr.Applied, pr.Needed, len(pr.Foreign), err)
	}
	f, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Agents) != 1 || f.Agents[0].ID != "web-1" || !f.Agents[0].Trusted() {
		t.Errorf("agents %+v; want web-1 alone", f.Agents)
	}
	if len(f.Skipped) != 500 || f.Skipped[0] != (fleet.Skipped{ID: "forged-000", Node: fleet.NodeRegistration, Reason: fleet.SkipForeign}) {
		t.Errorf("skipped %d: %v", len(f.Skipped), f.Skipped[:min(3, len(f.Skipped))])
	}
	// An --auto canary judges the same list: a selection of everyone has
	// web-1 alone to wait for, never a gone forged agent.
	sel := &manifest.Canary{Generation: g + 1, Selection: manifest.Selection{}}
	if h := rollout.Evaluate(rollout.Classify(f.Agents, g, "", sel), time.Time{}, time.Now(), 0); len(h.Gone) != 0 || h.Selected != 1 {
		t.Errorf("canary health with 500 foreign registrations: %+v; want web-1 alone selected, nobody gone", h)
	}
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []aclmodel.Identity{ident(t, "web-1")}}
	rep, err := access.Repair(ctx, conn, paths, pol)
	if err != nil || len(rep.Actions) != 500 || slices.ContainsFunc(rep.Remaining, access.Mismatch.Repairable) {
		t.Fatalf("repair: %d actions, remaining %v, %v; want the 500 foreign registrations deleted", len(rep.Actions), rep.Remaining, err)
	}
	kids, _, err := conn.Children(paths.Agents())
	if err != nil || !slices.Equal(kids, []string{"web-1"}) {
		t.Errorf("registry after repair: %v, %v", kids, err)
	}
}

// TestOversizedNodesSkipped: a status node or registration above its
// bound is not decoded: Read reports it (Skipped), the agent is shown
// untrusted, gone if expected. On an open tree anyone can write one; on a
// tree with a policy only past a tampered (or burst-overshot) quota, which
// confpush acl reports and --repair restores, deleting the node.
func TestOversizedNodesSkipped(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		c := sharedZooKeeper.For(t)
		p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
		g := fleettest.PublishConf(t, p, "v1")
		for _, n := range []string{paths.Status(), paths.Agents()} {
			if err := zkclient.EnsurePath(context.Background(), conn, n, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		huge := append(ownStatus(t, "huge", g), make([]byte, fleet.MaxStatusBytes)...)
		if _, err := conn.Create(paths.StatusNode("huge"), huge, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(paths.AgentNode("fat"), make([]byte, fleet.MaxRegistrationBytes+1), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		f, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []fleet.Skipped{
			{ID: "fat", Node: fleet.NodeRegistration, Reason: fleet.SkipOversized, Bytes: fleet.MaxRegistrationBytes + 1},
			{ID: "huge", Node: fleet.NodeStatus, Reason: fleet.SkipOversized, Bytes: len(huge)},
		}
		if !slices.Equal(f.Skipped, want) {
			t.Errorf("skipped %v; want %v", f.Skipped, want)
		}
		h, _ := fleettest.Find(f.Agents, "huge")
		if h.Trusted() || h.Applied(g) || !strings.Contains(h.Untrusted, "oversized") || h.Status.AgentID != "" {
			t.Errorf("huge = %+v; want untrusted, oversized, not decoded", h)
		}
		fat, _ := fleettest.Find(f.Agents, "fat")
		if !fat.Gone() || fat.Registration != nil || !strings.Contains(fat.RegistryUntrusted, "oversized") {
			t.Errorf("fat = %+v; want gone, registration skipped as oversized", fat)
		}
	})
	t.Run("policy", func(t *testing.T) {
		c := sharedZooKeeper.For(t)
		p, conn := securedTree(t, c, "web-1")
		g := fleettest.PublishConf(t, p, "v1")
		pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []aclmodel.Identity{ident(t, "web-1")}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var q access.Quota
		for _, x := range pol.Quotas(paths) {
			if x.Path == paths.StatusNode("web-1") {
				q = x
			}
		}
		// Someone with the publisher's identity lifts web-1's limits.
		if _, err := conn.Set(q.Dir()+"/zookeeper_limits", []byte("count=-1,bytes=-1"), -1); err != nil {
			t.Fatal(err)
		}
		web1 := rawSession(t, c, "web-1")
		own, err := statusNodeACL(ctx, web1, paths)
		if err != nil {
			t.Fatal(err)
		}
		huge := append(ownStatus(t, "web-1", g), make([]byte, fleet.MaxStatusBytes)...)
		if _, err := web1.Create(paths.StatusNode("web-1"), huge, zk.FlagEphemeral, own); err != nil {
			t.Fatal(err)
		}
		f, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Skipped, []fleet.Skipped{{ID: "web-1", Node: fleet.NodeStatus, Reason: fleet.SkipOversized, Bytes: len(huge)}}) {
			t.Errorf("skipped %v", f.Skipped)
		}
		if a, _ := fleettest.Find(f.Agents, "web-1"); !a.Gone() || !strings.Contains(a.Untrusted, "oversized") {
			t.Errorf("web-1 = %+v; want gone (oversized)", a)
		}
		fixes, ms := fixesOf(t, ctx, conn, paths, pol)
		if fixes[q.Dir()] != access.FixQuota || fixes[paths.StatusNode("web-1")] != access.FixDelete {
			t.Fatalf("check = %v; want the quota reset and the oversized node deleted", ms)
		}
		if rep, err := access.Repair(ctx, conn, paths, pol); err != nil || slices.ContainsFunc(rep.Remaining, access.Mismatch.Repairable) {
			t.Fatalf("repair: %v, remaining %v", err, rep.Remaining)
		}
		if _, err := web1.Create(paths.StatusNode("web-1"), huge, zk.FlagEphemeral, own); !zkclient.IsQuotaExceeded(err) {
			t.Errorf("oversized status node after repair: %v; want refused by the restored quota", err)
		}
	})
}

// TestPublishOnInitTree: on a tree Init set up, a publisher gives what it
// creates the policy's ACLs (it copies the root's and the history
// parent's): after publishes in both modes and a canary rollout's start,
// Check finds nothing that differs from the policy, and a candidate
// content made world-readable is reported. (publish
// TestPublishInheritsACLs and TestCanaryLeftoverAndACL test the copying
// itself.)
func TestPublishOnInitTree(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	p, conn := securedTree(t, c, "web-1")
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []aclmodel.Identity{ident(t, "web-1")}}
	set := func(tag string) map[string][]byte {
		return map[string][]byte{"a.conf": []byte("a " + tag), "b.conf": []byte("b " + tag)}
	}
	if _, err := p.Publish(ctx, publish.Request{Items: set("1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, publish.Request{Items: set("2"), Mode: manifest.ModeMarker}); err != nil {
		t.Fatal(err)
	}
	// The root's parent is /, which the policy does not own: the one
	// advisory (KindAncestor) every root at the top level gets.
	check := func() []access.Mismatch {
		t.Helper()
		ms, err := access.Check(ctx, conn, paths, pol)
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(ms, func(m access.Mismatch) bool { return m.Kind == access.KindAncestor })
	}
	if ms := check(); len(ms) != 0 {
		t.Fatalf("acl check after publishing in both modes: %v", ms)
	}
	if _, err := p.Publish(ctx, publish.Request{Items: set("3"), Canary: &manifest.Selection{Selector: "zone=a"}}); err != nil {
		t.Fatal(err)
	}
	if ms := check(); len(ms) != 0 {
		t.Fatalf("acl check during a rollout: %v", ms)
	}
	kids, _, err := conn.Children(paths.Candidate())
	if err != nil || len(kids) == 0 {
		t.Fatalf("candidate contents %v: %v", kids, err)
	}
	if _, err := conn.SetACL(paths.CandidateContent(kids[0]), zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	if ms := check(); len(ms) != 1 || ms[0].Kind != access.KindCandidateContent {
		t.Fatalf("acl check of a bad candidate content: %v", ms)
	}
}

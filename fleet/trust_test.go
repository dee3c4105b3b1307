package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// Test identities: random-looking passwords of at least 16 bytes.
var passwords = map[string]string{
	"publisher": "Pu8l1sher-Pa55word-x7Q",
	"web-1":     "web1-Secret-Pw-9fK2zqA",
	"web-2":     "web2-Secret-Pw-3mL8vtB",
}

func ident(t *testing.T, user string) access.Identity {
	t.Helper()
	id, err := access.ParseIdentity(user + ":" + passwords[user])
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
	return runAgent(t, id, func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: 2 * time.Second, Auth: creds(id)}
	})
}

func forgedStatus(t *testing.T, id string, g int64) []byte {
	t.Helper()
	b, err := json.Marshal(fleet.Status{AgentID: id, Root: root, Generation: g, Attempted: g, State: "live", Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func find(agents []fleet.Agent, id string) (fleet.Agent, bool) {
	i := slices.IndexFunc(agents, func(a fleet.Agent) bool { return a.ID == id })
	if i < 0 {
		return fleet.Agent{}, false
	}
	return agents[i], true
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
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := publishConf(t, p, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	forger := rawSession(t, c, "web-1")
	_, err := forger.Create(paths.StatusNode("web-9"), forgedStatus(t, "web-9", g), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("status node under a foreign name: %v; want refused by the status quota", err)
	}
	if qe := zkclient.Explain(err, paths.StatusNode("web-9"), zkclient.OpCreate); !errors.Is(qe, zkclient.ErrQuotaExceeded) ||
		!strings.Contains(qe.Error(), "quota exceeded: create on "+paths.StatusNode("web-9")) {
		t.Errorf("explained: %v", qe)
	}
	own, err := access.ReadStatusNodeACL(ctx, forger, paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Create(paths.StatusNode("web-2"), forgedStatus(t, "web-2", g), zk.FlagEphemeral, own); err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Create(paths.StatusNode("web-1"), forgedStatus(t, "web-1", g), zk.FlagEphemeral,
		zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	agents, err := fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"web-1", "web-2"} {
		a, ok := find(agents, id)
		if !ok || a.Trusted() || a.Applied(g) || a.Untrusted == "" || !a.Gone() {
			t.Errorf("forged %s listed as %+v; want untrusted, not applied, gone", id, a)
		}
	}
	if _, ok := find(agents, "web-9"); ok {
		t.Error("web-9 listed")
	}
	if s := fleet.Summarize(agents, g); s.AtLatest != 0 || s.Untrusted != 2 {
		t.Errorf("summary %v", s)
	}

	// A reader that cannot see the agents' digests (here an agent
	// identity) cannot verify anything: its wait fails at once, with the
	// documented permission error.
	if _, err := fleetOf(t, forger, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true}); err == nil ||
		!strings.Contains(err.Error(), "cannot verify the agents' status nodes") ||
		!errors.Is(err, zkclient.ErrPermission) || ctx.Err() != nil {
		t.Errorf("wait by an agent identity = %v; want a verification error at once", err)
	}

	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
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
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := publishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
	if err == nil {
		t.Fatalf("wait --all succeeded without web-2: %+v", pr)
	}
	if !slices.Equal(pr.Applied, []string{"web-1"}) || !slices.Equal(pr.Gone, []string{"web-2"}) || pr.Needed != 2 {
		t.Errorf("progress %+v", pr)
	}
}

// TestOpenModeUntrusted: without ACLs a node still counts only when it is
// ephemeral, parses, and names itself: a persistent node, one claiming
// another agent_id and one that is not JSON are listed untrusted with the
// reason and expected by nobody. On the old code the first two counted as
// applied.
func TestOpenModeUntrusted(t *testing.T) {
	c := zktest.Start(t)
	p, conn := newPublisher(t, c)
	g := publishConf(t, p, "v1")
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("persistent"), forgedStatus(t, "persistent", g), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("liar"), forgedStatus(t, "someone-else", g), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("garbage"), []byte("not json"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agents, err := fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, reason := range map[string]string{"persistent": "not ephemeral", "liar": `its agent_id "someone-else" is not its name`,
		"garbage": "is not valid JSON"} {
		a, ok := find(agents, id)
		if !ok || a.Trusted() || a.Expected || !strings.Contains(a.Untrusted, reason) {
			t.Errorf("%s listed as %+v; want untrusted (%s), not expected", id, a, reason)
		}
	}
	_, err = fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if !errors.Is(err, fleet.ErrNoExpectedAgents) {
		t.Errorf("wait with untrusted nodes only = %v; want ErrNoExpectedAgents", err)
	}
}

// TestWaitNoExpectedAgents: a --all wait on a root no agent ever followed
// fails at once with ErrNoExpectedAgents, not at the deadline.
func TestWaitNoExpectedAgents(t *testing.T) {
	c := zktest.Start(t)
	p, conn := newPublisher(t, c)
	g := publishConf(t, p, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if !errors.Is(err, fleet.ErrNoExpectedAgents) || ctx.Err() != nil {
		t.Fatalf("wait = %v (deadline: %v); want ErrNoExpectedAgents at once", err, ctx.Err())
	}
}

// eventually polls cond until it holds or 60 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
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
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := publishConf(t, p, "v1")
	squatter := rawSession(t, c, "web-1")
	if _, err := squatter.Create(paths.StatusNode("web-2"), []byte("{}"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	d := startSecureAgent(t, c.Addrs(), "web-2")
	eventually(t, "web-2 to report the conflict", func() bool { return d.Status().StatusNodeConflict != "" })
	// Readiness names the first reason it finds, and the conflict can be
	// found before the first apply (the status writer may run first on a
	// busy machine): judge it once the generation is applied.
	eventually(t, "web-2 to apply", func() bool { return d.Status().Generation == g })
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
	agents, err := fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
	if a, ok := find(agents, "web-2"); err != nil || !ok || !a.Gone() ||
		!strings.Contains(a.Untrusted, "its ACL is world:anyone:cdrwa, not what agent web-2's identity gives it") {
		t.Errorf("squatted web-2 listed as %+v, %v; want gone, its node untrusted for its ACL", a, err)
	}
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []access.Identity{ident(t, "web-1"), ident(t, "web-2")}}
	if _, err := access.Repair(ctx, conn, paths, pol); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web-2's own, trusted node", func() bool {
		agents, err := fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
		a, ok := find(agents, "web-2")
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
	mfs, err := d.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "zkconf_agent_status_node_conflict" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no zkconf_agent_status_node_conflict metric")
	return 0
}

// TestFastRestartWaitsForOldSession: an agent restarted while its previous
// session is still alive (here: the old process cut off by a blackholed
// proxy, its session not yet expired) does not write into the old
// session's node; once that session expires, it creates its own. On the
// old code the new process overwrote the old session's node at once.
func TestFastRestartWaitsForOldSession(t *testing.T) {
	// The old session lives long enough (15 s) for the new process to
	// find its node on a loaded machine.
	c := zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second})
	p, conn := newPublisher(t, c)
	publishConf(t, p, "v1")
	proxy := faultproxy.Start(t, c.Addrs()[0])
	startVersioned(t, []string{proxy.Addr()}, "host-r", "old", 15*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, 1, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	_, old, err := conn.Get(paths.StatusNode("host-r"))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole(true)
	t.Cleanup(func() { proxy.Blackhole(false) })
	d := startVersioned(t, c.Addrs(), "host-r", "new", 4*time.Second)
	eventually(t, "the new process to report the old session's node", func() bool {
		return d.Status().StatusNodeConflict != ""
	})
	if !stillOwnedBy(conn, old.EphemeralOwner) {
		t.Fatal("the old session's node went before the conflict could be checked")
	}
	if b, _, err := conn.Get(paths.StatusNode("host-r")); err != nil || strings.Contains(string(b), `"version":"new"`) {
		t.Fatalf("the new process wrote into the old session's node: %s %v", b, err)
	}
	eventually(t, "the new process's own node", func() bool {
		b, st, err := conn.Get(paths.StatusNode("host-r"))
		return err == nil && st.EphemeralOwner != old.EphemeralOwner && strings.Contains(string(b), `"version":"new"`)
	})
	eventually(t, "the conflict to clear", func() bool { return d.Status().StatusNodeConflict == "" })
}

func stillOwnedBy(conn *zk.Conn, owner int64) bool {
	ok, st, err := conn.Exists(paths.StatusNode("host-r"))
	return err == nil && ok && st.EphemeralOwner == owner
}

func startVersioned(t *testing.T, servers []string, id, version string, timeout time.Duration) *agent.Daemon {
	t.Helper()
	return runAgent(t, id, func(o *agent.Options) {
		o.Version = version
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: timeout}
	})
}

// TestRegistryNode: a running agent registers itself with its labels and
// hostname, in the node confpush init created for its identity (another
// agent identity can neither read, write nor delete it, nor create a
// registration of its own under any name), and reports its labels in its
// status node.
func TestRegistryNode(t *testing.T) {
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := publishConf(t, p, "v1")
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
	eventually(t, "web-1 registered and applied", func() bool {
		agents, err = fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
		a, ok := find(agents, "web-1")
		return err == nil && ok && a.Applied(g) && a.Registration != nil
	})
	a, _ := find(agents, "web-1")
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
	if err != nil || !access.SameACL(acl, pol.RegistryNodeACL(ident(t, "web-1"))) {
		t.Errorf("web-1's registration ACL %v, %v; want publisher cdrwa, web-1 rw", acl, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(wctx, g, fleet.WaitOptions{All: true})
	if err == nil || !slices.Equal(pr.Gone, []string{"web-2"}) || !slices.Contains(pr.Applied, "web-1") {
		t.Errorf("wait --all = %+v, %v; want web-1 applied, web-2 (in the policy, never started) gone", pr, err)
	}
}

// logBuf is a goroutine-safe log destination.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLogged runs an agent with identity user under agent id, logging
// into the returned buffer.
func startLogged(t *testing.T, c *zktest.Cluster, id, user string) *logBuf {
	t.Helper()
	logs := &logBuf{}
	runAgent(t, id, func(o *agent.Options) {
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
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1")
	publishConf(t, p, "v1")
	logs := startLogged(t, c, "host-x", "web-1")
	eventually(t, "the agent_id warning and the refused status node", func() bool {
		s := logs.String()
		return strings.Contains(s, "agent_id differs from the user of the agent's credentials") &&
			strings.Contains(s, "status node not written") &&
			strings.Contains(s, "quota exceeded: create on "+paths.StatusNode("host-x"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := fleetOf(t, conn, paths.Root, paths.Meta).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(f.Agents, "host-x"); ok || len(f.Skipped) != 0 {
		t.Errorf("host-x listed: %+v, skipped %v", f.Agents, f.Skipped)
	}
	if a, _ := find(f.Agents, "web-1"); !a.Gone() {
		t.Errorf("web-1 = %+v; want gone", a)
	}
}

// TestRegistryMissingOnOldTree: on a tree initialized before the registry
// existed the agent cannot create its registry node (no CREATE on the
// metadata base): it warns and keeps working; confpush acl reports the
// registry missing, acl --repair creates it and the agent's node in it,
// and the agent registers on its next status write.
func TestRegistryMissingOnOldTree(t *testing.T) {
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1")
	for _, n := range []string{paths.AgentNode("web-1"), paths.Agents()} {
		if err := conn.Delete(n, -1); err != nil {
			t.Fatal(err)
		}
	}
	publishConf(t, p, "v1")
	logs := startLogged(t, c, "web-1", "web-1")
	eventually(t, "the registry warning", func() bool {
		s := logs.String()
		return strings.Contains(s, "agent registry node not written") && strings.Contains(s, "creates the registry")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []access.Identity{ident(t, "web-1")}}
	ms, err := access.Check(ctx, conn, paths, pol)
	if err != nil || !slices.ContainsFunc(ms, func(m access.Mismatch) bool { return m.Path == paths.Agents() && m.Fix == access.FixCreate }) {
		t.Fatalf("Check = %v, %v; want the registry missing", ms, err)
	}
	if _, err := access.Repair(ctx, conn, paths, pol); err != nil {
		t.Fatal(err)
	}
	publishConf(t, p, "v2")
	eventually(t, "web-1 registered", func() bool {
		ok, _, err := conn.Exists(paths.AgentNode("web-1"))
		return err == nil && ok
	})
}

// TestWaitComparesIncarnations: after a ZooKeeper wipe generation numbers
// start again, so an agent still holding the old incarnation's generation
// 7 has not applied the new incarnation's generation 1, and an agent that
// refuses the new incarnation fails the rollout at once (it cannot apply
// it until an operator adopts).
func TestWaitComparesIncarnations(t *testing.T) {
	c := zktest.Start(t)
	p, conn := newPublisher(t, c)
	g := publishConf(t, p, "v1")
	b, _, err := conn.Get(paths.Root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(b)
	if err != nil || m.Incarnation == "" {
		t.Fatalf("live manifest has no incarnation: %v", err)
	}
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	put := func(st fleet.Status) {
		t.Helper()
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(paths.StatusNode(st.AgentID), data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	old := manifest.NewIncarnation()
	put(fleet.Status{AgentID: "current", Root: paths.Root, Generation: g, CacheGeneration: g, Incarnation: m.Incarnation, State: "live"})
	put(fleet.Status{AgentID: "stuck", Root: paths.Root, Generation: 7, CacheGeneration: 7, Incarnation: old, State: "live"})

	// The stuck agent's generation 7 must not count for generation 1: with
	// Min 2 the wait can only end by its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{Min: 2})
	if err == nil || !slices.Equal(pr.Applied, []string{"current"}) || !slices.Equal(pr.Pending, []string{"stuck"}) {
		t.Fatalf("old incarnation's generation counted: applied %v, pending %v, err %v", pr.Applied, pr.Pending, err)
	}

	// A refusing agent makes an --all wait fail early, naming the cause.
	if err := conn.Delete(paths.StatusNode("stuck"), -1); err != nil {
		t.Fatal(err)
	}
	put(fleet.Status{AgentID: "stuck", Root: paths.Root, Generation: 7, CacheGeneration: 7, Incarnation: old,
		IncarnationRefused: m.Incarnation, Attempted: 7, State: "stale"})
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err = fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	var re *fleet.RolloutError
	if !errors.As(err, &re) || !slices.Equal(pr.Rejected, []string{"stuck"}) || !strings.Contains(err.Error(), "confagent adopt") {
		t.Fatalf("refusing agent: rejected %v, err %v", pr.Rejected, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the wait ran to its deadline instead of failing early: %v", err)
	}
}

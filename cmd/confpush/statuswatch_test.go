package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// statusNodes writes status nodes as agents would (ephemeral, JSON), on
// the test's own session.
type statusNodes struct {
	t     *testing.T
	conn  *zk.Conn
	paths layout.Paths
}

func (s statusNodes) put(st fleet.Status) {
	s.t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := zkclient.EnsurePath(context.Background(), s.conn, s.paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
	path := s.paths.StatusNode(st.AgentID)
	if _, err := s.conn.Set(path, b, -1); err == nil {
		return
	}
	if _, err := s.conn.Create(path, b, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
}

// fleetFixture starts a server, publishes generations 1..gens of root and
// returns the CLI and a writer of status nodes.
func fleetFixture(t *testing.T, root string, gens int) (cli, statusNodes) {
	t.Helper()
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: root}
	for g := 1; g <= gens; g++ {
		c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": strconv.Itoa(g)})).want(t, 0)
	}
	return c, statusNodes{t: t, conn: srv.Connect(t, 10*time.Second), paths: layout.New(root, layout.DefaultMeta)}
}

// row returns the fields of the status table's row for agent id.
func row(t *testing.T, out, id string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			return f
		}
	}
	t.Fatalf("no row for %s in:\n%s", id, out)
	return nil
}

// TestStatusStateColumn: STATE says what to act on (failing when the last
// apply failed or a failure is being retried, behind, the cache state
// when not live, ok), the table names its times (APPLIED AT, ZK SINCE),
// a failing target's error shows when the agent has no error of its own,
// and the summary counts failing targets too.
func TestStatusStateColumn(t *testing.T) {
	const root = "/state/app"
	c, nodes := fleetFixture(t, root, 2)
	now := time.Now()
	ok := []fleet.TargetResult{{Name: "app", OK: true, Generation: 2, LastAttempt: 2}}
	nodes.put(fleet.Status{AgentID: "web-ok", Root: root, Generation: 2, CacheGeneration: 2, State: "live", Since: now,
		AppliedAt: now, Ready: true, Targets: ok})
	nodes.put(fleet.Status{AgentID: "web-rejected", Root: root, Generation: 1, CacheGeneration: 2, Attempted: 2, State: "live",
		Since: now, AppliedAt: now, LastError: "render app.conf: template: bad"})
	nodes.put(fleet.Status{AgentID: "web-retrying", Root: root, Generation: 2, CacheGeneration: 2, State: "live", Since: now,
		AppliedAt: now, Targets: []fleet.TargetResult{{Name: "nginx", OK: false, Generation: 2, LastAttempt: 2,
			LastError: "reload: exit status 1", Retrying: "reload", Retries: 3, ReloadPending: true}}})
	nodes.put(fleet.Status{AgentID: "web-behind", Root: root, Generation: 1, CacheGeneration: 2, State: "live", Since: now,
		AppliedAt: now, Targets: ok})
	nodes.put(fleet.Status{AgentID: "web-stale", Root: root, Generation: 2, CacheGeneration: 2, State: "stale", Since: now,
		AppliedAt: now, Targets: ok})

	o := c.run("status")
	o.want(t, 0, "APPLIED AT", "ZK STATE", "ZK SINCE", "2 failing")
	for id, want := range map[string]string{"web-ok": "ok", "web-rejected": "failing", "web-retrying": "failing",
		"web-behind": "behind", "web-stale": "stale"} {
		if f := row(t, o.stdout, id); f[3] != want {
			t.Errorf("%s: STATE %q, want %q\n%s", id, f[3], want, o.stdout)
		}
	}
	if l := strings.Join(row(t, o.stdout, "web-retrying"), " "); !strings.Contains(l, "target nginx: reload failure retried (3 retries): reload: exit status 1") {
		t.Errorf("failing target's error not shown: %s", l)
	}
	c.run("status", "--fail-on-error").want(t, exitFailing, "web-rejected", "web-retrying")
	_, obj := c.json("status")
	for _, a := range obj["agents"].([]any) {
		m := a.(map[string]any)
		if m["id"] == "web-retrying" && m["state"] != "failing" {
			t.Errorf("--json state of web-retrying: %v", m["state"])
		}
	}
}

// TestStatusShowsMessage: status names who published the live generation
// and why (--message), in text and --json.
func TestStatusShowsMessage(t *testing.T) {
	c, _ := fleetFixture(t, "/state/msg", 1)
	c.run("publish", "-m", "alice: pool 8 (OPS-12)", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "new"})).want(t, 0)
	c.run("status").want(t, 0, "live generation 2", "message: alice: pool 8 (OPS-12)")
	if _, obj := c.json("status"); obj["message"] != "alice: pool 8 (OPS-12)" {
		t.Errorf("--json message of the live generation: %v", obj["message"])
	}
}

// TestStatusWatch: status --watch prints the table at start and again
// when a status node appears or changes (ZooKeeper watches), and ends
// cleanly on SIGINT.
func TestStatusWatch(t *testing.T) {
	const root = "/watch-status/app"
	c, nodes := fleetFixture(t, root, 1)
	nodes.put(fleet.Status{AgentID: "web-1", Root: root, Generation: 1, CacheGeneration: 1, State: "live", Since: time.Now(), AppliedAt: time.Now()})

	c.run("status", "--watch", "--fail-on-error").want(t, exitUsage, "--watch cannot be combined with --wait-generation or --fail-on-error")
	bin := buildBinary(t, ".", "confpush")
	// --timeout 1s: the watch outlives it.
	w := startWatcher(t, bin, "--zk", c.zk, "--root", root, "--timeout", "1s", "status", "--watch")
	w.waitFor(t, "status --watch", "web-1")
	nodes.put(fleet.Status{AgentID: "web-2", Root: root, Generation: 1, CacheGeneration: 1, State: "live", Since: time.Now(), AppliedAt: time.Now()})
	w.waitFor(t, "status --watch", "web-2")
	from := w.lineCount()
	nodes.put(fleet.Status{AgentID: "web-1", Root: root, Generation: 1, CacheGeneration: 1, State: "live", Since: time.Now(),
		AppliedAt: time.Now(), LastError: "render: boom"})
	w.waitForSince(t, "status --watch", "render: boom", from)
	if f := strings.Fields(w.output()[strings.LastIndex(w.output(), "web-1"):]); f[3] != "failing" {
		t.Fatalf("web-1 not failing after its node changed:\n%s", w.output())
	}
	from = w.lineCount()
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "2"})).want(t, 0)
	w.waitForSince(t, "status --watch", "live generation 2", from)

	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		t.Fatal("status --watch did not end on SIGINT")
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("status --watch exit %d after SIGINT:\n%s", code, w.output())
	}
}

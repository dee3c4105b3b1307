package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// TestStatusMissingRoot: status (with or without --fail-on-error,
// --wait-generation, --json) and rollout status on a root that does not
// exist fail with exit 2 saying so, naming the agents that follow it; a
// root that exists but was never published and one published without
// agents are reported as such, exit 0. The old code printed "0 agents,
// live generation 0" and exited 0 for a misspelled root.
func TestStatusMissingRoot(t *testing.T) {
	c, nodes := fleetFixture(t, "/mon/app", 1)
	typo := cli{t: t, zk: c.zk, root: "/mon/ap"}
	for _, args := range [][]string{
		{"status", "--fail-on-error"}, {"status"}, {"status", "--wait-generation", "1", "--timeout", "5s"},
		{"status", "--watch"}, {"rollout", "status"},
	} {
		typo.run(args...).want(t, exitUsage, "root /mon/ap does not exist", "no agent follows it", "check --root")
		code, obj := typo.json(args...)
		if code != exitUsage || obj["kind"] != "root_not_found" || num(obj["exit_code"]) != exitUsage {
			t.Errorf("%v --json: %d %v", args, code, obj)
		}
	}

	// Agents configured with the typo: they follow the missing root.
	typoNodes := statusNodes{t: t, conn: nodes.conn, paths: layout.New("/mon/ap", layout.DefaultMeta)}
	typoNodes.put(fleet.Status{AgentID: "web-1", Root: "/mon/ap", State: "starting"})
	typo.run("status", "--fail-on-error").want(t, exitUsage, "root /mon/ap does not exist", "1 agent(s) follow it", "the agents' root setting")

	// Exists, never published (as after 'confpush init').
	if err := zkclient.EnsurePath(context.Background(), nodes.conn, "/mon/fresh", zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	fresh := cli{t: t, zk: c.zk, root: "/mon/fresh"}
	fresh.run("status", "--fail-on-error").want(t, 0, "(root /mon/fresh, never published)", "no agent follows /mon/fresh")
	fresh.run("rollout", "status").want(t, 0, "no canary rollout in progress on /mon/fresh (never published)")
	code, obj := fresh.json("rollout", "status")
	if code != 0 || obj["in_progress"] != false || num(obj["stable_generation"]) != 0 {
		t.Errorf("rollout status --json on a root never published: %d %v", code, obj)
	}

	// Published, no agent.
	c.run("status", "--fail-on-error").want(t, 0, "0 agent(s)", "(root /mon/app, live generation 1)", "no agent follows /mon/app")
}

// TestCLISuggestions: a mistyped command, or a subcommand of rollout, is
// a usage error (exit 2) naming the nearest commands (the old code said
// "unknown command" without them, and 'rollout statsu' printed the help
// and exited 0); a lone generation after rollback names --to; rollout
// without a command fails like confpush without one.
func TestCLISuggestions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"rollbak"}, []string{`unknown command "rollbak" for "confpush"; did you mean "confpush rollback"?`}},
		{[]string{"roll"}, []string{`did you mean "confpush rollback" or "confpush rollout"?`}},
		{[]string{"rollout", "statsu"}, []string{`unknown command "statsu" for "confpush rollout"; did you mean "confpush rollout status"?`}},
		{[]string{"rollback", "7"}, []string{"rollback takes the generation as a flag: confpush rollback --to 7"}},
		{[]string{"rollback", "7", "8"}, []string{`unknown command "7" for "confpush rollback"`}},
		{[]string{"rollout"}, []string{"confpush rollout needs a command: abort, promote, status, widen"}},
	} {
		o := runArgs(c.args...)
		o.want(t, exitUsage, c.want...)
		code, obj := 0, map[string]any{}
		j := runArgs(append([]string{"--json"}, c.args...)...)
		code = j.code
		if err := json.Unmarshal([]byte(j.stdout), &obj); err != nil || code != exitUsage || obj["kind"] != "usage" {
			t.Errorf("%v --json: %d %s", c.args, code, j.stdout)
		}
	}
}

// TestDiffExitCode: diff --exit-code exits 10 when there are differences
// (live against a directory, against --gen G, between two generations),
// printing the diff as without it, and 0 when there are none; without the
// flag a difference is exit 0.
func TestDiffExitCode(t *testing.T) {
	c, _ := fleetFixture(t, "/drift/app", 2)
	same := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "2"})
	drift := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "drifted"})
	c.run("diff", "--exit-code", same).want(t, 0, "no differences")
	c.run("diff", drift).want(t, 0, "+drifted")
	o := c.run("diff", "--exit-code", drift)
	o.want(t, exitDiffers, "--- live(gen-2)/a.conf", "+drifted")
	if o.stderr != "" {
		t.Errorf("diff --exit-code printed on stderr: %s", o.stderr)
	}
	code, obj := c.json("diff", "--exit-code", drift)
	if code != exitDiffers || obj["unchanged"] != false || !strings.Contains(obj["diff"].(string), "+drifted") {
		t.Errorf("diff --exit-code --json: %d %v", code, obj)
	}
	c.run("diff", "--exit-code", "--gen", "1").want(t, exitDiffers, "-2", "+1")
	c.run("diff", "--exit-code", "--gen", "2").want(t, 0, "no differences")
	c.run("diff", "--exit-code", "--from", "1", "--to", "2").want(t, exitDiffers, "-1", "+2")
}

// TestOpenRootWarning: every publishing command on a root without access
// control (or one it creates) warns once on stderr, naming the root, the
// fix and how to silence it; --allow-open and CONFPUSH_ALLOW_OPEN silence
// it; a root 'confpush init' protected gets no warning.
func TestOpenRootWarning(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/open/app"}
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "1"})
	once := func(o outcome, want string) {
		t.Helper()
		if n := strings.Count(o.stderr, "warning: root /open/app"); n != 1 || !strings.Contains(o.stderr, want) ||
			!strings.Contains(o.stderr, "confpush init /open/app") || !strings.Contains(o.stderr, "--allow-open") {
			t.Errorf("want the open-root warning once (%q), got %d:\n%s", want, n, o.stderr)
		}
	}
	o := c.run("publish", dir)
	o.want(t, 0, "published generation 1")
	once(o, "does not exist yet: publishing creates it without access control")
	o = c.run("put", "b.conf", dir+"/a.conf")
	once(o, "has no access control (its ACL gives world:anyone:cdrwa)")
	once(c.run("rollback", "--to", "1"), "has no access control")
	once(c.run("publish", "--dry-run", "--force", dir), "has no access control")
	if o := c.run("publish", "--force", "--allow-open", dir); o.code != 0 || strings.Contains(o.stderr, "warning") {
		t.Errorf("--allow-open: %d %s", o.code, o.stderr)
	}
	t.Setenv("CONFPUSH_ALLOW_OPEN", "true")
	if o := c.run("publish", "--force", dir); o.code != 0 || strings.Contains(o.stderr, "warning") {
		t.Errorf("CONFPUSH_ALLOW_OPEN=true: %d %s", o.code, o.stderr)
	}
	t.Setenv("CONFPUSH_ALLOW_OPEN", "")
	// Commands that only read never warn.
	for _, args := range [][]string{{"status"}, {"history"}, {"diff", dir}, {"get"}} {
		if o := c.run(args...); strings.Contains(o.stderr, "warning") {
			t.Errorf("%v warned: %s", args, o.stderr)
		}
	}

	protected := cli{t: t, zk: c.zk, root: "/open/safe"}
	pub, _, _ := initACL(t, protected)
	o = protected.run("--auth-file", pub, "publish", dir)
	o.want(t, 0, "published generation 1")
	if strings.Contains(o.stderr, "warning") {
		t.Errorf("publish to a root init protected warned: %s", o.stderr)
	}
}

// TestRolloutReasonAndPromoteMessage: rollout status names why an agent
// fails on the candidate (its rejection with the error) and why one is
// gone; a manual promote without --message records the rollout's message
// and who promoted it (the old code recorded none: history showed "-").
func TestRolloutReasonAndPromoteMessage(t *testing.T) {
	c, nodes := fleetFixture(t, "/why/app", 1)
	label := func(zone string) map[string]string { return map[string]string{"zone": zone} }
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 1, Attempted: 1, Ready: true, State: "live", Labels: label("a")})
	nodes.put(fleet.Status{AgentID: "web-b", Generation: 1, Attempted: 1, Ready: true, State: "live", Labels: label("b")})
	reg, _ := json.Marshal(fleet.Registration{FirstSeen: time.Now(), LastSeen: time.Now(), Labels: label("a")})
	if err := zkclient.EnsurePath(context.Background(), nodes.conn, nodes.paths.Agents(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.conn.Create(nodes.paths.AgentNode("web-c"), reg, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "candidate"})
	c.run("publish", "--canary", "zone=a", "-m", "alice: pool 8", dir).want(t, 0, "candidate generation 2")
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 1, Attempted: 2, Ready: true, State: "live", Labels: label("a"),
		LastError: "check command of target \"app\" exited with status 1"})

	out := c.run("rollout", "status")
	out.want(t, 0, "REASON")
	if r := strings.Join(row(t, out.stdout, "web-a"), " "); !strings.Contains(r, `failing rejected generation 2: check command of target "app" exited with status 1`) {
		t.Errorf("web-a's row gives no reason: %s", r)
	}
	if r := strings.Join(row(t, out.stdout, "web-c"), " "); !strings.Contains(r, "gone no status node (last seen") {
		t.Errorf("web-c's row gives no reason: %s", r)
	}
	_, obj := c.json("rollout", "status")
	reasons := map[string]string{}
	for _, a := range obj["agents"].([]any) {
		ag := a.(map[string]any)
		if why, ok := ag["reason"].(string); ok {
			reasons[ag["id"].(string)] = why
		}
	}
	if !strings.HasPrefix(reasons["web-a"], "rejected generation 2: ") || !strings.HasPrefix(reasons["web-c"], "no status node") || reasons["web-b"] != "" {
		t.Errorf("rollout status --json reasons: %v", reasons)
	}

	c.run("rollout", "promote").want(t, 0, "published generation 3")
	_, hist := c.json("history")
	msg := hist["generations"].([]any)[0].(map[string]any)["message"].(string)
	if !strings.HasPrefix(msg, "alice: pool 8 (promoted by hand") {
		t.Errorf("promote without --message recorded %q", msg)
	}
	second := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "second"})
	c.run("publish", "--canary", "zone=a", second).want(t, 0, "candidate generation 4")
	c.run("rollout", "abort", "-m", "bob: 5xx").want(t, 0, "published generation 5")
	_, hist = c.json("history")
	if msg := hist["generations"].([]any)[0].(map[string]any)["message"]; msg != "bob: 5xx" {
		t.Errorf("abort -m recorded %q", msg)
	}
}

// TestWaitNotStarted: agents the access policy names that never reported
// are "not started" in the wait's progress and failure, not "gone" (make
// demo, which runs confpush init, printed them gone while they started).
func TestWaitNotStarted(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/notstarted/app"}
	pub, _, _ := initACL(t, c)
	c.run("--auth-file", pub, "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "1"})).want(t, 0)
	o := c.run("--auth-file", pub, "status", "--wait-generation", "1", "--all", "--timeout", "3s")
	o.want(t, exitRollout, "0/2 applied, 2 not started (web-17, web-18)", "web-17 not started (named by the access policy, never reported)")
	if strings.Contains(o.stderr, "gone") {
		t.Errorf("agents that never started reported gone:\n%s", o.stderr)
	}
	code, obj := c.json("--auth-file", pub, "publish", "--force", "--wait", "--all", "--timeout", "3s",
		writeFiles(t, t.TempDir(), map[string]string{"a.conf": "1"}))
	ro, _ := obj["rollout"].(map[string]any)
	if code != exitRollout || ro == nil || strings.Join(strs(ro["not_started"]), ",") != "web-17,web-18" {
		t.Errorf("publish --wait --json: %d %v", code, obj)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/layout"
)

// TestCLIValidateByDefault: a .json item that does not parse is refused
// without --validate (exit 2, nothing written), --no-validate publishes
// it, and diff names it as a warning without refusing the diff. On the
// old code the bad item was published.
func TestCLIValidateByDefault(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/val/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a"})).want(t, 0, "published generation 1")
	bad := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a", "b.json": `{"secret": "s3cr3t" x}`, "c.yaml": "k: [\n"})

	before := snapshot(t, conn, "/val", meta.Base())
	o := c.run("publish", bad)
	o.want(t, 2, "2 problems", `item "b.json": invalid JSON at line 1, column 21`, `item "c.yaml": invalid YAML`)
	c.run("publish", "--validate", bad).want(t, 2, `item "b.json": invalid JSON`)
	if after := snapshot(t, conn, "/val", meta.Base()); after != before {
		t.Fatal("a refused publish wrote")
	}

	d := c.run("diff", bad)
	d.want(t, 0, "+++ local/b.json", `warning: publish would refuse this: item "b.json": invalid JSON at line 1, column 21`,
		`warning: publish would refuse this: item "c.yaml": invalid YAML`)
	if strings.Contains(d.stderr, "s3cr3t") || strings.Contains(o.stderr, "s3cr3t") {
		t.Fatalf("a message quotes item content:\n%s\n%s", d.stderr, o.stderr)
	}
	code, obj := c.json("diff", bad)
	if code != 0 || len(strs(obj["invalid"])) != 2 {
		t.Fatalf("diff --json: %d %v", code, obj)
	}
	if d := c.run("diff", "--no-validate", bad); d.code != 0 || strings.Contains(d.stderr, "warning") {
		t.Fatalf("diff --no-validate: %+v", d)
	}

	c.run("publish", "--validate", "--no-validate", bad).want(t, 0, "published generation 2", "+ b.json")
	t.Setenv("CONFPUSH_NO_VALIDATE", "true")
	c.run("publish", "--prune", writeFiles(t, t.TempDir(), map[string]string{"d.toml": "= 1\n"})).want(t, 0, "published generation 3")
}

// TestCLIDiffGenerations: diff --from/--to between two generations of
// history, with the defaults (--to: live, --from: --to − 1), and history
// --diff. On the old code the flags did not exist (exit 2).
func TestCLIDiffGenerations(t *testing.T) {
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/gdiff/app"}
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\ntwo\n", "b.conf": "b\n"})).want(t, 0, "published generation 1")
	c.run("publish", "--prune", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\nTWO\n", "c.conf": "c\n"})).want(t, 0, "published generation 2")
	c.run("rollback", "--to", "1").want(t, 0, "published generation 3")

	gen1to2 := []string{"--- gen-1/a.conf\n+++ gen-2/a.conf\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n",
		"--- gen-1/b.conf\n+++ /dev/null\n", "--- /dev/null\n+++ gen-2/c.conf\n"}
	c.run("diff", "--from", "1", "--to", "2").want(t, 0, gen1to2...)
	c.run("diff", "--to", "2").want(t, 0, gen1to2...)
	c.run("diff", "--from", "2").want(t, 0, "--- gen-2/a.conf\n+++ gen-3/a.conf\n", "-TWO\n+two\n")
	c.run("diff", "--from", "1", "--to", "3").want(t, 0, "no differences between generation 1 and generation 3 of /gdiff/app")
	c.run("diff", "--to", "1").want(t, 0, "--- /dev/null\n+++ gen-1/a.conf\n")
	code, obj := c.json("diff", "--from", "1", "--to", "2")
	if code != 0 || num(obj["from"]) != 1 || num(obj["to"]) != 2 || strings.Join(strs(obj["changed"]), ",") != "a.conf" ||
		strings.Join(strs(obj["added"]), ",") != "c.conf" || strings.Join(strs(obj["removed"]), ",") != "b.conf" {
		t.Fatalf("diff --from --to --json: %v", obj)
	}
	c.run("diff", "--from", "1", "--gen", "2").want(t, 2, "--from/--to compare two generations")
	c.run("diff", "--from", "-1").want(t, 2, "must be positive")
	c.run("diff", "--from", "99").want(t, 1, "--from: generation 99 of /gdiff/app: generation not in history")

	h := c.run("history", "--diff")
	h.want(t, 0, "GEN", "generation 3 (rollback of 1) against generation 2: 1 added, 1 changed, 1 removed",
		"generation 2 against generation 1: 1 added, 1 changed, 1 removed", "generation 1 against the empty set: 2 added",
		"--- gen-2/a.conf\n+++ gen-3/a.conf\n")
	code, obj = c.json("history", "--diff")
	gens := obj["generations"].([]any)
	if code != 0 || len(gens) != 3 {
		t.Fatalf("history --diff --json: %v", obj)
	}
	d2 := gens[1].(map[string]any)["diff"].(map[string]any)
	if num(d2["against"]) != 1 || d2["previous_retained"] != true || strings.Join(strs(d2["changed"]), ",") != "a.conf" ||
		!strings.Contains(d2["diff"].(string), "+TWO") {
		t.Fatalf("history --diff --json generation 2: %v", d2)
	}
	if _, ok := gens[0].(map[string]any)["diff"]; !ok {
		t.Fatalf("history --diff --json: generation 3 has no diff: %v", gens[0])
	}
	if _, obj := c.json("history"); obj["generations"].([]any)[0].(map[string]any)["diff"] != nil {
		t.Fatal("history without --diff shows diffs")
	}
}

// TestCLIWaitRollbackAndUndo: publish --wait --json carries the rollout;
// rollback --wait follows the rollout; a failed --wait (publish or
// rollback) names the exact command that undoes it, in text and --json.
// On the old code rollback had no --wait and no message named a command.
func TestCLIWaitRollbackAndUndo(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/undo/app"}
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).want(t, 0, "published generation 1")
	runAgent(t, c.zk, c.root, "host-a")
	c.run("status", "--wait-generation", "1", "--min", "1").want(t, 0, "host-a")

	code, obj := c.json("publish", "--wait", "--all", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "two\n"}))
	rollout, _ := obj["rollout"].(map[string]any)
	if code != 0 || num(obj["generation"]) != 2 || rollout["complete"] != true || num(rollout["generation"]) != 2 ||
		strings.Join(strs(rollout["applied"]), ",") != "host-a" || len(strs(rollout["pending"])) != 0 || len(strs(rollout["failing"])) != 0 {
		t.Fatalf("publish --wait --json: %d %v", code, obj)
	}
	code, obj = c.json("rollback", "--to", "1", "--wait", "--all")
	rollout, _ = obj["rollout"].(map[string]any)
	if code != 0 || num(obj["generation"]) != 3 || num(obj["rollback_of"]) != 1 || rollout["complete"] != true ||
		strings.Join(strs(rollout["applied"]), ",") != "host-a" {
		t.Fatalf("rollback --wait --json: %d %v", code, obj)
	}
	c.run("rollback", "--to", "2", "--wait", "--all").want(t, 0, "published generation 4", "content of generation 2")

	// Nobody follows this root: every --all wait fails at once.
	none := cli{t: t, zk: c.zk, root: "/undo/none"}
	none.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).want(t, 0, "published generation 1")
	other := cli{t: t, zk: c.zk, root: "/undo/meta"}
	other.run("--meta", "/undo-meta", "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).want(t, 0, "published generation 1")
	none.run("publish", "--wait", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "two\n"})).want(t, exitRollout,
		"to undo it: confpush --zk "+c.zk+" --root /undo/none rollback --to 1")
	none.run("rollback", "--to", "1", "--wait").want(t, exitRollout,
		"to undo it: confpush --zk "+c.zk+" --root /undo/none rollback --to 2")
	other.run("--meta", "/undo-meta", "publish", "--wait", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "two\n"})).want(t, exitRollout,
		"to undo it: confpush --zk "+c.zk+" --root /undo/meta --meta /undo-meta rollback --to 1")
	code, obj = none.json("publish", "--wait", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "three\n"}))
	rollout, _ = obj["rollout"].(map[string]any)
	published, _ := obj["published"].(map[string]any)
	if code != exitRollout || obj["kind"] != "rollout_incomplete" || rollout["complete"] != false || num(rollout["generation"]) != 4 ||
		obj["rollback_command"] != "confpush --zk "+c.zk+" --root /undo/none rollback --to 3" || num(published["generation"]) != 4 {
		t.Fatalf("failed publish --wait --json: %d %v", code, obj)
	}
	// An unchanged publish replaced nothing: no command to undo it.
	if o := none.run("publish", "--wait", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "three\n"})); o.code != exitRollout || strings.Contains(o.stderr, "to undo it") {
		t.Fatalf("unchanged publish --wait: %+v", o)
	}
}

// stop ends the watch process with SIGTERM (its election node goes with
// its session) and waits for it.
func (w *watcher) stop(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-w.done
}

// TestWatchKeepsRollback: a watch restarted after a rollback does not
// publish the directory again when it still holds the content the
// rollback replaced (the old code did, silently undoing the rollback); a
// directory changed meanwhile is published with a warning naming the
// rollback it replaces; a state that does not validate is refused with
// its problem and nothing published, and the next good state is.
func TestWatchKeepsRollback(t *testing.T) {
	bin := buildBinary(t, ".", "confpush")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/wkeep/app"}
	dir := t.TempDir()
	// Written under a hidden name (watch skips those) and renamed, so no
	// half-written state can be published whatever the scheduling.
	write := func(name, v string) {
		tmp := filepath.Join(dir, ".tmp-"+name)
		if err := os.WriteFile(tmp, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--zk", c.zk, "--root", c.root, "--session-timeout", "10s", "watch", "--debounce", "200ms", dir}
	live := func() int64 {
		_, obj := c.json("history")
		return num(obj["live_generation"])
	}

	write("app.conf", "v1")
	w1 := startWatcher(t, bin, args...)
	w1.waitFor(t, "watch 1", "published generation 1")
	write("app.conf", "v2")
	w1.waitFor(t, "watch 1", "published generation 2")
	w1.stop(t)

	c.run("rollback", "--to", "1").want(t, 0, "published generation 3")
	w2 := startWatcher(t, bin, args...)
	w2.waitFor(t, "watch 2", "not republishing: live generation 3 is a rollback to generation 1, and the directory still holds generation 2's content")
	w2.stop(t)
	if g := live(); g != 3 || strings.Contains(w2.output(), "published generation") {
		t.Fatalf("live generation %d after the restart, want the rollback 3:\n%s", g, w2.output())
	}

	write("app.conf", "v3") // the directory is fixed while no watch runs
	w3 := startWatcher(t, bin, args...)
	w3.waitFor(t, "watch 3", "published generation 4")
	if !strings.Contains(w3.output(), "the directory differs from live generation 3, a rollback to generation 1, which this watch did not publish: publishing the directory replaces generation 3") {
		t.Fatalf("no warning naming the rollback replaced:\n%s", w3.output())
	}

	from := w3.lineCount()
	write("bad.json", `{"secret": "s3cr3t" x}`)
	w3.waitForSince(t, "watch 3", `publish refused: item "bad.json": invalid JSON at line 1, column 21`, from)
	if g := live(); g != 4 {
		t.Fatalf("a refused state was published: live generation %d", g)
	}
	write("bad.json", `{"fixed": true}`)
	w3.waitForSince(t, "watch 3", "published generation 5 (1 added, 0 changed, 0 removed)", from)
	if strings.Contains(w3.output(), "s3cr3t") {
		t.Fatalf("watch quoted item content:\n%s", w3.output())
	}
}

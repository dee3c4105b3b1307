package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
)

// TestCLIPublishExternalSymlink: a link in DIR to a file outside it (the
// shadow file) is refused by publish and diff, dry run included, with
// the link and its target named and nothing written;
// --follow-external-symlinks publishes it. Editor leftovers are skipped
// and named, in the dry run too.
func TestCLIPublishExternalSymlink(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/fs/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("root:"+secretContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1\n", "app.conf~": "v0\n", "#app.conf#": "autosave\n"})
	link := filepath.Join(dir, "shadow.conf")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	before := snapshot(t, conn, "/fs", meta.Base())
	for _, args := range [][]string{{"publish", dir}, {"publish", "--dry-run", dir}, {"diff", dir}} {
		o := c.run(args...)
		o.want(t, 2, link+": symbolic link to "+outside+", outside the directory: not read", "--follow-external-symlinks")
		if strings.Contains(o.stdout+o.stderr, secretContent) {
			t.Fatalf("%v quotes the linked file:\n%s%s", args, o.stdout, o.stderr)
		}
	}
	if after := snapshot(t, conn, "/fs", meta.Base()); after != before {
		t.Fatalf("a refused publish wrote:\nbefore %s\nafter %s", before, after)
	}

	c.run("publish", "--dry-run", "--follow-external-symlinks", dir).
		want(t, 0, "dry run: would publish generation 1", "ignored 2 file(s) matching the ignore patterns", "#app.conf#, app.conf~", "+ shadow.conf")
	c.run("publish", "--follow-external-symlinks", dir).want(t, 0, "published generation 1", "+ app.conf", "+ shadow.conf", "#app.conf#, app.conf~")
	if o := c.run("get", "shadow.conf"); o.code != 0 || !strings.Contains(o.stdout, secretContent) {
		t.Fatalf("get shadow.conf after --follow-external-symlinks: %+v", o)
	}
	c.run("get", "app.conf~").want(t, 1, "not in generation 1")
	code, obj := c.json("publish", "--follow-external-symlinks", "--ignore", "*.conf", "--no-default-ignore", "--allow-empty", "--prune", "--dry-run", dir)
	if code != 0 || strings.Join(strs(obj["ignored"]), ",") != "app.conf,shadow.conf" || strings.Join(strs(obj["added"]), ",") != "#app.conf#,app.conf~" {
		t.Fatalf("--json --ignore --no-default-ignore: %d %v", code, obj)
	}
	if o := c.run("publish", "--ignore", "[", dir); o.code != 2 || !strings.Contains(o.stderr, `ignore pattern "["`) || strings.Contains(o.stderr, "problems") {
		t.Fatalf("a malformed pattern: %+v", o)
	}
}

// TestWatchExternalSymlink: a real `confpush watch` refuses a state of DIR
// with a link to a file outside it (nothing published, the reason
// printed) and publishes the next good state; a watch started with
// --follow-external-symlinks publishes the link's file.
func TestWatchExternalSymlink(t *testing.T) {
	bin := buildBinary(t, ".", "confpush")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/fs/watch"}
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte(secretContent), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1\n"})
	args := watchArgs(c, dir)
	a := startWatcher(t, bin, args()...)
	a.waitFor(t, "watch", "published generation 1")

	link := filepath.Join(dir, "shadow.conf")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	a.waitFor(t, "watch", "publish refused: "+link+": symbolic link to "+outside+", outside the directory")
	from := a.lineCount()
	writeFiles(t, dir, map[string]string{"app.conf": "v2\n"})
	a.waitForSince(t, "watch", "publish refused: "+link, from)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	a.waitFor(t, "watch", "published generation 2")
	code, obj := c.json("get")
	if items := obj["items"].([]any); code != 0 || num(obj["generation"]) != 2 || len(items) != 1 {
		t.Fatalf("after the refused states: %d %v", code, obj)
	}
	if strings.Contains(a.output(), secretContent) {
		t.Fatalf("watch printed the linked file's content:\n%s", a.output())
	}

	// Stopped (its session closes, so the next watch leads at once); the
	// link back, and a watch that may follow it.
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.done
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	b := startWatcher(t, bin, args("--follow-external-symlinks")...)
	b.waitFor(t, "watch", "published generation 3")
	if o := c.run("get", "shadow.conf"); o.code != 0 || o.stdout != secretContent {
		t.Fatalf("get shadow.conf: %+v", o)
	}
}

// watchArgs returns the command line of a watch of dir through c, with
// extra flags.
func watchArgs(c cli, dir string) func(extra ...string) []string {
	return func(extra ...string) []string {
		return append([]string{"--zk", c.zk, "--root", c.root, "--session-timeout", "10s", "watch", "--debounce", "100ms"}, append(extra, dir)...)
	}
}

// TestWatchIgnoresEditorFiles: an editor's backup (the previous content)
// and autosave files beside a watched file are not published; watch names
// them as ignored; --ignore adds a pattern.
func TestWatchIgnoresEditorFiles(t *testing.T) {
	bin := buildBinary(t, ".", "confpush")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/fs/editor"}
	dir := writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1\n"})
	a := startWatcher(t, bin, watchArgs(c, dir)("--ignore", "*.local")...)
	a.waitFor(t, "watch", "published generation 1")

	// What Emacs leaves while app.conf is edited: the previous content
	// as app.conf~, the unsaved text as #app.conf#; a file the --ignore
	// pattern names.
	writeFiles(t, dir, map[string]string{"app.conf~": "v1\n", "#app.conf#": "v2 half typed", "site.local": "x"})
	from := a.lineCount()
	replaceFiles(t, dir, map[string]string{"app.conf": "v2\n"})
	a.waitForSince(t, "watch", "published generation 2", from)
	a.waitFor(t, "watch", "ignored 3 file(s) matching the ignore patterns (--ignore, --no-default-ignore): #app.conf#, app.conf~, site.local")
	code, obj := c.json("get")
	if items := obj["items"].([]any); code != 0 || num(obj["generation"]) != 2 || len(items) != 1 || items[0].(map[string]any)["name"] != "app.conf" {
		t.Fatalf("the editor's files were published: %d %v", code, obj)
	}
	c.run("get", "app.conf").want(t, 0, "v2")
}

// secretContent stands for the content of a file outside the directory.
const secretContent = "hunter2-not-for-every-host"

// TestCLICanaryMistakesAreLoud: a canary flag given a value that selects
// nothing (--canary-percent 0, an empty --canary-agents or --canary) is
// refused, dry run, watch and widen included, instead of publishing to
// the whole fleet; a canary's output, dry run and real, says it is a
// canary rollout and for which selection.
func TestCLICanaryMistakesAreLoud(t *testing.T) {
	c, nodes := fleetFixture(t, "/fs/canary", 1)
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 1, Ready: true, Labels: map[string]string{"zone": "a", "hostname": "web-a"}})
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "candidate"})
	meta := layout.New(c.root, layout.DefaultMeta)
	before := snapshot(t, nodes.conn, "/fs", meta.Base())
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"publish", "--canary-percent", "0", dir}, []string{"--canary-percent 0 selects no agent"}},
		{[]string{"publish", "--canary-agents", "", dir}, []string{"--canary-agents: no agent id given"}},
		{[]string{"publish", "--canary", " ", dir}, []string{"--canary: empty selector"}},
		{[]string{"publish", "--dry-run", "--canary-percent", "0", "--canary-agents=", dir}, []string{"2 problems", "--canary-percent 0", "--canary-agents"}},
		{[]string{"publish", "--canary-percent", "0", "--auto", dir}, []string{"--canary-percent 0 selects no agent"}},
		{[]string{"watch", "--canary-percent", "0", "--auto", dir}, []string{"--canary-percent 0 selects no agent"}},
		{[]string{"watch", "--canary-agents", "", "--auto", dir}, []string{"--canary-agents: no agent id given"}},
		{[]string{"rollout", "widen", "--canary-percent", "0"}, []string{"--canary-percent P is required, in (0, 100]"}},
		{[]string{"rollout", "widen", "--canary-percent", "NaN"}, []string{"--canary-percent P is required, in (0, 100]"}},
	} {
		o := c.run(tc.args...)
		o.want(t, 2, tc.want...)
		if strings.Contains(o.stdout, "published") {
			t.Fatalf("%q: %s", tc.args, o.stdout)
		}
	}
	if after := snapshot(t, nodes.conn, "/fs", meta.Base()); after != before {
		t.Fatalf("a refused canary wrote:\nbefore %s\nafter %s", before, after)
	}

	for _, dry := range []bool{true, false} {
		args := []string{"publish", "--canary", "zone=a", dir}
		want := `started a canary rollout on /fs/canary: candidate generation 2 for selection "zone=a" (multi mode, zxid`
		if dry {
			args = []string{"publish", "--dry-run", "--canary", "zone=a", dir}
			want = `dry run: would start a canary rollout on /fs/canary: candidate generation 2 for selection "zone=a" (multi mode)`
		}
		o := c.run(args...)
		o.want(t, 0, want, "1 changed")
		if strings.Contains(o.stdout, "publish generation") || strings.Contains(o.stdout, "published generation") {
			t.Fatalf("a canary says it published for everyone:\n%s", o.stdout)
		}
	}
	code, obj := c.json("rollout", "abort", "--dry-run")
	if code != 0 || obj["canary"] != nil {
		t.Fatalf("an abort reported as a canary: %d %v", code, obj)
	}
}

// TestCLIPutEmptyInput: an empty input (a failed command at the head of
// the pipe) is refused without --allow-empty, nothing written; the
// terminal prompt appears on a terminal only, not for a pipe or
// /dev/null.
func TestCLIPutEmptyInput(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/fs/put"}
	meta := layout.New(c.root, layout.DefaultMeta)
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a"})).want(t, 0, "published generation 1")
	const prompt = "reading the item from the terminal"

	before := snapshot(t, conn, "/fs", meta.Base())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // `false | confpush put a.conf -`
	o := c.runIn(r, "put", "a.conf", "-")
	r.Close()
	o.want(t, 2, `item "a.conf": the input (standard input) is empty`, "--allow-empty")
	if strings.Contains(o.stderr, prompt) {
		t.Fatalf("prompt printed for a pipe:\n%s", o.stderr)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	o = c.runIn(devnull, "put", "b.conf")
	o.want(t, 2, "is empty")
	if strings.Contains(o.stderr, prompt) {
		t.Fatalf("prompt printed for /dev/null (a character device, not a terminal):\n%s", o.stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty.conf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.run("put", "c.conf", empty).want(t, 2, "the input ("+empty+") is empty")
	if after := snapshot(t, conn, "/fs", meta.Base()); after != before {
		t.Fatalf("a refused put wrote:\nbefore %s\nafter %s", before, after)
	}
	c.run("put", "c.conf", empty, "--allow-empty").want(t, 0, "published generation 2", "+ c.conf")

	// On a terminal the prompt says what confpush waits for.
	ctl, term := openPTY(t)
	if _, err := ctl.Write([]byte("typed\n\x04")); err != nil { // a line, then Ctrl-D
		t.Fatal(err)
	}
	o = c.runIn(term, "put", "d.conf")
	o.want(t, 0, prompt, "published generation 3", "+ d.conf")
	if got := c.run("get", "d.conf"); got.stdout != "typed\n" {
		t.Fatalf("get d.conf: %+v", got)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// cli runs confpush in-process against a server.
type cli struct {
	t    *testing.T
	zk   string
	root string
}

type outcome struct {
	code           int
	stdout, stderr string
}

func (c cli) run(args ...string) outcome {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--zk", c.zk, "--root", c.root, "--timeout", "60s", "--session-timeout", "10s"}, args...)
	code := run(full, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

func (c cli) json(args ...string) (int, map[string]any) {
	c.t.Helper()
	o := c.run(append([]string{"--json"}, args...)...)
	var obj map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &obj); err != nil {
		c.t.Fatalf("--json output is not one JSON object: %v\n%s\nstderr: %s", err, o.stdout, o.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	var first, extra any
	if dec.Decode(&first) != nil || dec.Decode(&extra) == nil {
		c.t.Fatalf("--json printed more than one object:\n%s", o.stdout)
	}
	return o.code, obj
}

func (o outcome) want(t *testing.T, code int, substrings ...string) {
	t.Helper()
	if o.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", o.code, code, o.stdout, o.stderr)
	}
	all := o.stdout + o.stderr
	for _, s := range substrings {
		if !strings.Contains(all, s) {
			t.Fatalf("output lacks %q\nstdout: %s\nstderr: %s", s, o.stdout, o.stderr)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// replaceFiles writes files below a directory a watch follows, each under
// a hidden name (a watch skips those) renamed into place: one event per
// file, carrying its whole content. A file written in place is truncated
// first, an event of its own, and a writer descheduled for longer than the
// watch's debounce between the truncation and the write would have the
// empty file published, failing the test for a reason it does not name.
func replaceFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot returns every node under the given paths with version and hash.
func snapshot(t *testing.T, conn *zk.Conn, paths ...string) string {
	t.Helper()
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		data, st, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s v%d %s\n", p, st.Version, manifest.Hash(data))
		kids, _, _ := conn.Children(p)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	for _, p := range paths {
		walk(p)
	}
	return b.String()
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// startZK hands the test the package's shared standalone server
// (sharedzk_test.go), emptied for it.
func startZK(t *testing.T) *zktest.Cluster {
	t.Helper()
	return sharedZooKeeper.For(t)
}

// TestCLI drives every subcommand through run() against a real server.
func TestCLI(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/cli/app"}
	meta := layout.New("/cli/app", layout.DefaultMeta)

	v1 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\ntwo\nthree\n", "b.json": `{"x": 1}`, ".hidden": "skip"})
	c.run("publish", v1).want(t, 0, "published generation 1 to /cli/app (multi mode", "2 added", "+ a.conf", "+ b.json")
	c.run("publish", v1).want(t, 0, "unchanged at generation 1")

	v2 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\nTWO\nthree\n", "c.yaml": "k: v\n"})

	t.Run("DryRunWritesNothing", func(t *testing.T) {
		before := snapshot(t, conn, "/cli", meta.Base())
		c.run("publish", "--dry-run", "--prune", v2).want(t, 0, "dry run: would publish generation 2", "1 added, 1 changed, 1 removed", "~ a.conf", "- b.json", "+ c.yaml")
		code, obj := c.json("publish", "--dry-run", "--prune", v2)
		if code != 0 || obj["dry_run"] != true || num(obj["generation"]) != 2 || obj["publish_id"] != "" {
			t.Fatalf("--json dry run: %d %v", code, obj)
		}
		if after := snapshot(t, conn, "/cli", meta.Base()); after != before {
			t.Fatalf("dry run wrote:\nbefore %s\nafter %s", before, after)
		}
	})

	t.Run("Diff", func(t *testing.T) {
		o := c.run("diff", v2)
		o.want(t, 0,
			"--- live(gen-1)/a.conf\n+++ local/a.conf\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
			"--- live(gen-1)/b.json\n+++ /dev/null\n@@ -1 +0,0 @@\n-{\"x\": 1}\n\\ No newline at end of file\n",
			"--- /dev/null\n+++ local/c.yaml\n@@ -0,0 +1 @@\n+k: v\n")
		code, obj := c.json("diff", v2)
		if code != 0 || num(obj["live_generation"]) != 1 || obj["unchanged"] != false ||
			strings.Join(strs(obj["added"]), ",") != "c.yaml" || strings.Join(strs(obj["changed"]), ",") != "a.conf" ||
			strings.Join(strs(obj["removed"]), ",") != "b.json" || !strings.Contains(obj["diff"].(string), "+TWO") {
			t.Fatalf("--json diff: %v", obj)
		}
		c.run("diff", v1).want(t, 0, "no differences between live generation 1 of /cli/app and local")
	})

	t.Run("PublishJSON", func(t *testing.T) {
		code, obj := c.json("publish", "--prune", v2)
		if code != 0 || obj["ok"] != true || num(obj["generation"]) != 2 || obj["mode"] != "multi" ||
			num(obj["zxid"]) <= 0 || obj["publish_id"] == "" || obj["unchanged"] != false ||
			strings.Join(strs(obj["changed"]), ",") != "a.conf" || num(obj["items"]) != 2 {
			t.Fatalf("--json publish: %v", obj)
		}
		code, obj = c.json("publish", v2)
		if code != 0 || obj["unchanged"] != true || num(obj["generation"]) != 2 {
			t.Fatalf("--json unchanged: %v", obj)
		}
	})

	t.Run("Get", func(t *testing.T) {
		c.run("get").want(t, 0, "generation 2 of /cli/app", "a.conf", "c.yaml", manifest.Hash([]byte("k: v\n")))
		o := c.run("get", "a.conf")
		if o.code != 0 || o.stdout != "one\nTWO\nthree\n" {
			t.Fatalf("get a.conf: %+v", o)
		}
		o = c.run("get", "a.conf", "--gen", "1")
		if o.code != 0 || o.stdout != "one\ntwo\nthree\n" {
			t.Fatalf("get --gen 1: %+v", o)
		}
		code, obj := c.json("get", "c.yaml")
		if code != 0 || obj["content"] != "k: v\n" || num(obj["generation"]) != 2 || obj["sha256"] != manifest.Hash([]byte("k: v\n")) {
			t.Fatalf("--json get: %v", obj)
		}
		code, obj = c.json("get")
		if code != 0 || len(obj["items"].([]any)) != 2 {
			t.Fatalf("--json get list: %v", obj)
		}
		c.run("get", "nope.conf").want(t, 1, `item "nope.conf" is not in generation 2`)
		c.run("get", "--gen", "99").want(t, 1, "generation 99", "not in history")
	})

	t.Run("ConflictExit3", func(t *testing.T) {
		v3 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "three\n"})
		before := snapshot(t, conn, "/cli", meta.Base())
		c.run("publish", "--expect-generation", "1", v3).want(t, 3, "conflict", "expected generation 1, live generation is 2")
		code, obj := c.json("publish", "--expect-generation", "1", v3)
		conflict, _ := obj["conflict"].(map[string]any)
		if code != 3 || obj["ok"] != false || obj["kind"] != "conflict" || num(obj["exit_code"]) != 3 ||
			num(conflict["live_generation"]) != 2 || num(conflict["expected_generation"]) != 1 {
			t.Fatalf("--json conflict: %d %v", code, obj)
		}
		if after := snapshot(t, conn, "/cli", meta.Base()); after != before {
			t.Fatal("a conflicting publish wrote")
		}
	})

	t.Run("HistoryAndRollback", func(t *testing.T) {
		c.run("diff", "--gen", "1").want(t, 0, "+++ gen-1/a.conf", "-TWO", "+two")
		c.run("rollback", "--to", "1").want(t, 0, "published generation 3", "content of generation 1")
		o := c.run("get", "a.conf")
		if o.stdout != "one\ntwo\nthree\n" {
			t.Fatalf("after rollback: %q", o.stdout)
		}
		c.run("history").want(t, 0, "GEN", "rollback of 1", "live")
		code, obj := c.json("history")
		gens := obj["generations"].([]any)
		if code != 0 || len(gens) != 3 || num(obj["live_generation"]) != 3 {
			t.Fatalf("--json history: %v", obj)
		}
		newest := gens[0].(map[string]any)
		if num(newest["generation"]) != 3 || num(newest["rollback_of"]) != 1 || newest["live"] != true || num(gens[2].(map[string]any)["generation"]) != 1 {
			t.Fatalf("--json history order/fields: %v", gens)
		}
		code, obj = c.json("rollback", "--to", "1")
		if code != 0 || obj["unchanged"] != true {
			t.Fatalf("rollback to the live content: %v", obj)
		}
		c.run("rollback", "--to", "1", "--expect-generation", "2").want(t, 3, "conflict")
	})

	t.Run("MarkerBusyExit4", func(t *testing.T) {
		busy := cli{t: t, zk: c.zk, root: "/cli/busy"}
		busy.run("publish", v1).want(t, 0, "published generation 1")
		// A live marker-mode publish by someone else: its marker and its
		// liveness node (ephemeral on a session of its own).
		other := srv.Connect(t, 10*time.Second)
		l := layout.New("/cli/busy", layout.DefaultMeta)
		if err := zkclient.EnsurePath(context.Background(), other, l.Publishing(), zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		info := `{"publish_id":"deadbeef","publisher":"someone@elsewhere","started_at":"2026-01-01T00:00:00Z","base_generation":1,"generation":2}`
		if _, err := other.Create(l.PublishingNode("deadbeef"), []byte(info), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Create(l.Marker(), []byte(info), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		busy.run("publish", v2).want(t, 4, "someone@elsewhere", "deadbeef", "--override-marker")
		code, obj := busy.json("publish", v2)
		marker, _ := obj["marker"].(map[string]any)
		if code != 4 || obj["kind"] != "marker_busy" || marker["owner"] != "someone@elsewhere" || marker["publish_id"] != "deadbeef" {
			t.Fatalf("--json marker busy: %d %v", code, obj)
		}
		busy.run("publish", "--override-marker", "--prune", v2).want(t, 0, "published generation 2")
		if ok, _, _ := conn.Exists(l.Marker()); ok {
			t.Fatal("the marker survived an override publish")
		}
	})

	t.Run("ForcedMarkerMode", func(t *testing.T) {
		m := cli{t: t, zk: c.zk, root: "/cli/marker"}
		m.run("publish", "--mode", "marker", v1).want(t, 0, "published generation 1", "marker mode")
		m.run("publish", "--mode", "marker", "--force", v1).want(t, 0, "published generation 2", "0 added, 0 changed, 0 removed")
	})
}

// TestCLIBadInput: every bad input exits 2 with its message, and nothing is
// written.
func TestCLIBadInput(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/bad"}
	good := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a"})
	c.run("publish", good).want(t, 0, "published generation 1")
	meta := layout.New("/bad", layout.DefaultMeta)
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		files map[string]string
		want  []string
	}{
		{"MissingPath", func(d string) []string { return []string{filepath.Join(d, "nope")} }, nil,
			[]string{"nope: does not exist"}},
		{"EmptyDirectory", func(d string) []string { return []string{d} }, map[string]string{".only-hidden": "x"},
			[]string{"the set is empty", "--allow-empty"}},
		{"ReservedName", func(d string) []string { return []string{d} }, map[string]string{"invalid": "x", "ok": "y"},
			[]string{`item name "invalid" is reserved`}},
		{"TreeTooDeep", func(d string) []string { return []string{d} }, map[string]string{"x": "1", strings.Repeat("d/", 16) + "y": "2"},
			[]string{"directory nested more than 15 levels deep: an item path has at most 16 components"}},
		{"ValidateFailures", func(d string) []string { return []string{"--validate", d} },
			map[string]string{"a.json": `{"secret": "s3cr3t" x}`, "b.yaml": "a: [\n", "c.toml": "= 1\n", "ok.json": "{}"},
			[]string{"3 problems", `item "a.json": invalid JSON at line 1, column 21`, `item "b.yaml": invalid YAML`, `item "c.toml": invalid TOML at line 1`}},
		{"OversizeItem", func(d string) []string { return []string{d} }, map[string]string{"big": strings.Repeat("x", 1<<20)},
			[]string{`item "big" is 1048576 bytes, more than the 1032192-byte limit`}},
		{"FilesWithDirectory", func(d string) []string { return []string{filepath.Join(d, "f"), d} }, map[string]string{"f": "1"},
			[]string{"is a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, t.TempDir(), tc.files)
			before := snapshot(t, conn, "/bad", meta.Base())
			o := c.run(append([]string{"publish"}, tc.args(dir)...)...)
			o.want(t, 2, tc.want...)
			if strings.Contains(o.stderr, "s3cr3t") {
				t.Fatalf("an error quotes item content: %s", o.stderr)
			}
			code, obj := c.json(append([]string{"publish"}, tc.args(dir)...)...)
			if code != 2 || obj["kind"] != "invalid_input" || obj["ok"] != false {
				t.Fatalf("--json: %d %v", code, obj)
			}
			if after := snapshot(t, conn, "/bad", meta.Base()); after != before {
				t.Fatal("bad input wrote")
			}
		})
	}
}

// TestCLIUsage covers exit code 2 for command-line mistakes and 1 for an
// unreachable server. None of these needs a server.
func TestCLIUsage(t *testing.T) {
	c := cli{t: t, zk: "127.0.0.1:1", root: "/x"}
	dir := writeFiles(t, t.TempDir(), map[string]string{"a": "a"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"publish", "--bogus", dir}, "unknown flag: --bogus"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"publish"}, "requires at least 1 arg"},
		{[]string{"publish", "--mode", "fast", dir}, `--mode: unknown mode "fast"`},
		{[]string{"publish", "--expect-generation", "-1", dir}, "must not be negative"},
		{[]string{"--root", "relative", "history"}, "--root: root \"relative\" must be an absolute"},
		{[]string{"--zk", "nohostport", "history"}, "--zk:"},
		{[]string{"--log-level", "loud", "history"}, "--log-level"},
		{[]string{"rollback"}, "--to G is required"},
		{[]string{"diff"}, "give DIR, FILEs or --gen G"},
		{[]string{"diff", "--gen", "1", dir}, "not both"},
		{[]string{"get", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"--config", "/nonexistent.yaml", "history"}, "config file /nonexistent.yaml"},
		{nil, "a command is required"},
	} {
		o := c.run(tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("confpush %v: exit %d, stderr %q; want 2 and %q", tc.args, o.code, o.stderr, tc.want)
		}
	}
	o := c.run("--timeout", "1s", "history")
	o.want(t, 1, "cannot reach ZooKeeper at 127.0.0.1:1")
	code, obj := c.json("--timeout", "1s", "history")
	if code != 1 || obj["kind"] != "error" || obj["ok"] != false {
		t.Fatalf("--json unreachable: %v", obj)
	}
	code, obj = c.json("publish", "--bogus", dir)
	if code != 2 || obj["kind"] != "usage" || !strings.Contains(obj["error"].(string), "unknown flag: --bogus") {
		t.Fatalf("--json usage error: %d %v", code, obj)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "4  marker busy") {
		t.Fatalf("--help: exit %d, output lacks the exit codes:\n%s", code, out.String())
	}
}

// TestCLIConfigFileAndEnv checks precedence: flag > CONFPUSH_* > --config
// file > default.
func TestCLIConfigFileAndEnv(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	dir := writeFiles(t, t.TempDir(), map[string]string{"a": "a"})
	cfg := filepath.Join(t.TempDir(), "confpush.yaml")
	if err := os.WriteFile(cfg, []byte("zk: "+srv.ConnString()+"\nroot: /from-file\njson: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runArgs := func(args ...string) outcome {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return outcome{code, out.String(), errb.String()}
	}
	o := runArgs("--config", cfg, "publish", dir)
	o.want(t, 0, `"root": "/from-file"`) // root and json from the file
	t.Setenv("CONFPUSH_ROOT", "/from-env")
	runArgs("--config", cfg, "publish", dir).want(t, 0, `"root": "/from-env"`)
	runArgs("--config", cfg, "--root", "/from-flag", "publish", dir).want(t, 0, `"root": "/from-flag"`)
	t.Setenv("CONFPUSH_CONFIG", cfg)
	t.Setenv("CONFPUSH_DRY_RUN", "true")
	runArgs("publish", writeFiles(t, t.TempDir(), map[string]string{"a": "a", "b": "b"})).want(t, 0, `"dry_run": true`, `"root": "/from-env"`)
	for _, r := range []string{"/from-file", "/from-env", "/from-flag"} {
		if ok, _, err := conn.Exists(r + "/a"); err != nil || !ok {
			t.Fatalf("%s/a not published: %v", r, err)
		}
	}
	if ok, _, _ := conn.Exists("/from-env/b"); ok {
		t.Fatal("CONFPUSH_DRY_RUN=true was ignored")
	}
}

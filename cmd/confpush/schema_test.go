package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/clidoc"
	"github.com/zkconf/zkconf/internal/jsonschema"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// textOnly are the commands whose --json changes only their failure
// (failure.json): long-running ones that print a line per event.
var textOnly = []string{"watch", "serve"}

// schemaFor is the schema file of a command's --json object: its path
// without "confpush", words joined by "-" (rollout status:
// rollout-status.json).
func schemaFor(path string) string {
	return strings.ReplaceAll(strings.TrimPrefix(path, "confpush "), " ", "-") + ".json"
}

// schemaCheck runs commands with --json and holds their output to the
// documented schema: the command's on success (and exit 10, diff
// --exit-code), failure.json otherwise.
type schemaCheck struct {
	t       *testing.T
	set     *jsonschema.Set
	checked map[string]bool // schema files an output was validated against
}

func (s *schemaCheck) validate(schema, out string, args []string) map[string]any {
	s.t.Helper()
	if err := s.set.Validate(schema, []byte(out)); err != nil {
		s.t.Errorf("confpush %s --json does not match docs/schema/%s:\n%v\noutput:\n%s", strings.Join(args, " "), schema, err, out)
	}
	s.checked[schema] = true
	var obj map[string]any
	_ = json.Unmarshal([]byte(out), &obj)
	return obj
}

// run runs args with --json on c, wants exit code, and validates.
func (s *schemaCheck) run(c cli, code int, args ...string) map[string]any {
	s.t.Helper()
	o := c.run(append([]string{"--json"}, args...)...)
	if o.code != code {
		s.t.Fatalf("confpush %s --json: exit %d, want %d\n%s%s", strings.Join(args, " "), o.code, code, o.stdout, o.stderr)
	}
	schema := "failure.json"
	if code == 0 || code == exitDiffers {
		schema = schemaFor("confpush " + commandPath(args))
	}
	return s.validate(schema, o.stdout, args)
}

// commandPath is the command named by args (the words before the first
// flag or argument that is not a subcommand).
func commandPath(args []string) string {
	c, _, err := newRoot().rootCommand().Find(args)
	if err != nil {
		return args[0]
	}
	return strings.TrimPrefix(c.CommandPath(), "confpush ")
}

// TestJSONSchemas: the --json output of every command, success and
// failure, as real runs against a real ZooKeeper print it, matches its
// JSON Schema in docs/schema (strict: a renamed or undocumented field
// fails); every command that prints a --json object has a schema and is
// checked here; every schema file is used.
func TestJSONSchemas(t *testing.T) {
	set, err := jsonschema.Load(os.DirFS("../../docs/schema"))
	if err != nil {
		t.Fatal(err)
	}
	s := &schemaCheck{t: t, set: set, checked: map[string]bool{}}
	const root = "/schema/app"
	c, nodes := fleetFixture(t, root, 1)
	conn := nodes.conn
	now := time.Now()
	agentAt := func(id, zone string, g int64) fleet.Status {
		return fleet.Status{AgentID: id, Version: "1.2.3", MaxFormat: 2, Root: root, Generation: g, CacheGeneration: g, Attempted: g, State: "live", Since: now,
			AppliedAt: now, Ready: true, Labels: map[string]string{"zone": zone, "hostname": id},
			Targets: []fleet.TargetResult{{Name: "app", Kind: "file", Dest: "/etc/app.conf", Generation: g, OK: true,
				LastAttempt: g, UpdatedAt: now}}}
	}
	nodes.put(agentAt("web-a", "a", 1))
	nodes.put(agentAt("web-b", "b", 1))
	reg, _ := json.Marshal(fleet.Registration{FirstSeen: now, LastSeen: now, Hostname: "web-c", Labels: map[string]string{"zone": "b"},
		Version: "1.2.2", MaxFormat: 2})
	if err := zkclient.EnsurePath(context.Background(), conn, nodes.paths.Agents(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(nodes.paths.AgentNode("web-c"), reg, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	dir := func(files map[string]string) string { return writeFiles(t, t.TempDir(), files) }

	// Status: a trusted agent with targets, a gone one with its
	// registration; --fail-on-error carries the report in the failure.
	s.run(c, 0, "status")
	s.run(c, exitFailing, "status", "--fail-on-error")
	s.run(cli{t: t, zk: c.zk, root: "/schema/nope"}, exitUsage, "status")

	// Publishing commands and the failures they share.
	d2 := dir(map[string]string{"a.conf": "2", "b.conf": "b"})
	s.run(c, 0, "publish", "-m", "alice: two", d2)
	s.run(c, 0, "publish", d2)
	s.run(c, 0, "publish", "--dry-run", "--force", d2)
	s.run(c, exitConflict, "publish", "--expect-generation", "1", "--force", d2)
	s.run(c, exitUsage, "publish", filepath.Join(d2, "a.conf"))
	s.run(c, exitUsage, "publish", dir(map[string]string{"x.json": "{", "y.toml": "="}))
	s.run(c, exitUsage, "publish")
	s.run(c, 0, "put", "c.conf", filepath.Join(d2, "b.conf"))
	s.run(c, 0, "delete", "c.conf")
	s.run(c, 0, "rollback", "--to", "1")
	nodes.put(agentAt("web-a", "a", 6))
	d6 := dir(map[string]string{"a.conf": "6", "blob.bin": "\x00\xff", "bad.json": "{}"})
	s.run(c, 0, "publish", "--prune", "--wait", "--min", "1", d6)
	s.run(c, exitRollout, "publish", "--wait", "--all", "--timeout", "3s", dir(map[string]string{"a.conf": "7", "blob.bin": "\x00\xff", "bad.json": "{}"}))

	// Reading.
	s.run(c, 0, "diff", dir(map[string]string{"a.conf": "8", "bad.json": "{"}))
	s.run(c, exitDiffers, "diff", "--exit-code", "--gen", "1")
	s.run(c, 0, "diff", "--from", "1", "--to", "2")
	s.run(c, 0, "get")
	s.run(c, 0, "get", "a.conf")
	s.run(c, 0, "get", "blob.bin")
	s.run(c, 1, "get", "nope.conf")
	s.run(c, 0, "history", "--diff")

	// Rollouts: none, in progress (failing and gone agents), widened,
	// promoted, aborted, driven to a promote.
	s.run(c, 0, "rollout", "status")
	s.run(c, exitConflict, "rollout", "promote")
	nodes.put(agentAt("web-a", "a", 7))
	nodes.put(agentAt("web-b", "b", 7))
	pct, _ := pctSelecting("web-a")
	s.run(c, 0, "publish", "--canary", "zone=a", "--canary-percent", pct, "-m", "canary", dir(map[string]string{"a.conf": "c1"}))
	failing := agentAt("web-a", "a", 7)
	failing.Attempted, failing.LastError = 8, "check command of target \"app\" exited with status 1"
	nodes.put(failing)
	st := s.run(c, 0, "rollout", "status")
	if st["in_progress"] != true {
		t.Fatalf("no rollout in progress: %v", st)
	}
	s.run(c, 0, "status")
	s.run(c, exitMarkerBusy, "publish", dir(map[string]string{"a.conf": "x"}))
	s.run(c, 0, "rollout", "widen", "--canary-percent", "100")
	s.run(c, 0, "rollout", "promote")
	s.run(c, 0, "publish", "--canary", "zone=a", dir(map[string]string{"a.conf": "c2"}))
	s.run(c, 0, "rollout", "abort", "-m", "bob: 5xx")
	// The driver: web-a already reports the next candidate (12), ready.
	nodes.put(agentAt("web-a", "a", 12))
	drv := s.run(c, 0, "publish", "--canary", "zone=a", "--auto", "--bake", "0s", dir(map[string]string{"a.conf": "c3"}))
	if _, ok := drv["driver"]; !ok {
		t.Errorf("publish --auto --json has no driver: %v", drv)
	}

	// Access control, digests, the registry.
	safe := cli{t: t, zk: c.zk, root: "/schema/safe"}
	pub, _, _ := initACL(t, safe)
	s.run(safe, 0, "--auth-file", pub, "init", safe.root, "--agent-auth-file", credFile(t, "web-17"), "--agent-digest", digestOf(t, "web-18"))
	s.run(safe, 0, "--auth-file", pub, "acl", safe.root)
	pconn, _, err := zk.Connect([]string{c.zk}, 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close()
	if err := pconn.AddAuth("digest", []byte("publisher:"+testPasswords["publisher"])); err != nil {
		t.Fatal(err)
	}
	if _, err := pconn.SetACL(layout.New(safe.root, layout.DefaultMeta).History(), zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	s.run(safe, exitACL, "--auth-file", pub, "acl", safe.root)
	s.run(safe, 0, "--auth-file", pub, "acl", safe.root, "--repair")
	var out, errb bytes.Buffer
	if code := runIO([]string{"--json", "digest"}, strings.NewReader("web-17:"+testPasswords["web-17"]+"\n"), &out, &errb); code != 0 {
		t.Fatalf("digest --json: exit %d %s", code, errb.String())
	}
	s.validate("digest.json", out.String(), []string{"digest"})
	s.run(c, 0, "forget", "web-c")
	s.run(c, exitUsage, "forget", "nobody")

	// A tree: a directory without items noted (publish, diff), a stray
	// under a directory the set drops kept and reported, history of a
	// path.
	tree := dir(map[string]string{"a.conf": "t", "conf.d/site.conf": "s", "conf.d/sub/x": "x", "empty/.keep": ""})
	s.run(c, 0, "diff", tree)
	s.run(c, 0, "publish", "--prune", tree)
	if _, err := conn.Create(root+"/conf.d/sub/stray", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if obj := s.run(c, 0, "publish", "--prune", dir(map[string]string{"a.conf": "u"})); strings.Join(strs(obj["strays"]), ",") != "conf.d/sub/stray" {
		t.Errorf("strays: %v", obj["strays"])
	}
	if obj := s.run(c, 0, "history", "conf.d"); len(obj["generations"].([]any)) != 2 || obj["path"] != "conf.d" {
		t.Errorf("history conf.d: %v", obj)
	}

	// import: a key tree written behind zkconf's back, in place.
	for _, n := range []struct{ p, v string }{{"/schema/keys", ""}, {"/schema/keys/db", ""}, {"/schema/keys/db/host", "db1"}, {"/schema/keys/..x", "x"}} {
		if _, err := conn.Create(n.p, []byte(n.v), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	keys := cli{t: t, zk: c.zk, root: "/schema/keys"}
	s.run(keys, 0, "import", "--from-tree", "/schema/keys", "--dry-run")
	if obj := s.run(keys, 0, "import", "--from-tree", "/schema/keys"); len(obj["skipped"].([]any)) != 1 {
		t.Errorf("import skipped: %v", obj["skipped"])
	}
	s.run(keys, exitUsage, "import", "--from-tree", "/schema/keys")

	// status --watch --json: one status object per line and change.
	bin := buildBinary(t, ".", "confpush")
	w := startWatcher(t, bin, "--zk", c.zk, "--root", root, "--json", "status", "--watch")
	w.waitFor(t, "status --watch --json", `"time"`)
	first := w.output()
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	s.validate("status.json", first, []string{"status", "--watch"})
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-w.done

	// Every command that prints a --json object has a schema and was
	// checked; every schema was used.
	clidoc.Walk(newRoot().rootCommand(), func(cmd *cobra.Command) {
		if !cmd.Runnable() || cmd.HasSubCommands() || cmd.Name() == "help" || strings.HasPrefix(cmd.CommandPath(), "confpush completion") ||
			slices.Contains(textOnly, cmd.Name()) {
			return
		}
		if name := schemaFor(cmd.CommandPath()); !s.checked[name] {
			t.Errorf("%s --json: no output validated against docs/schema/%s (write the schema, check the command here)", cmd.CommandPath(), name)
		}
	})
	for _, name := range set.Names() {
		if !s.checked[name] {
			t.Errorf("docs/schema/%s: no output was validated against it", name)
		}
	}
}

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/jsonschema"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
)

// TestCLITree: confpush on a tree (docs/design.md, "Config trees"):
// publish DIR keeps its sub-directories as item paths (an empty one is
// noted, not published; --flatten keeps its meaning), get/put/delete take
// paths (a directory is not an item: delete refuses it, put refuses a
// file where the set has a directory), diff and history show paths,
// history PATH lists the generations that changed it, a stray is
// reported, and completion offers a tree one directory at a time.
func TestCLITree(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/tree/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	dir := writeFiles(t, t.TempDir(), map[string]string{"app.json": "{}", "conf.d/site.conf": "site", "conf.d/sub/deep.conf": "deep", "other/x": "x"})
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.run("publish", dir).want(t, 0, "published generation 1", "4 added", "+ conf.d/site.conf", "+ conf.d/sub/deep.conf",
		"note: 1 directory(ies) hold no item and are not published (a directory is not an item): empty/")
	if data, _, err := conn.Get(c.root + "/conf.d/sub/deep.conf"); err != nil || string(data) != "deep" {
		t.Fatalf("item node: %q %v", data, err)
	}
	c.run("get", "conf.d/sub/deep.conf").want(t, 0, "deep")
	c.run("get").want(t, 0, "conf.d/site.conf", "conf.d/sub/deep.conf")

	c.runIn(strings.NewReader("new"), "put", "conf.d/sub/new.conf").want(t, 0, "published generation 2", "+ conf.d/sub/new.conf")
	before := snapshot(t, conn, "/tree", meta.Base())
	c.run("delete", "conf.d").want(t, 2, `item "conf.d"`, "a directory of the live set", "3 item(s) below it", "delete its items by path", "nothing deleted")
	c.runIn(strings.NewReader("x"), "put", "conf.d").want(t, 2, `item path "conf.d" is both a file and a directory`)
	if after := snapshot(t, conn, "/tree", meta.Base()); after != before {
		t.Fatalf("a refused edit wrote:\nbefore %s\nafter %s", before, after)
	}
	c.run("delete", "conf.d/sub/new.conf", "conf.d/sub/deep.conf").want(t, 0, "published generation 3", "- conf.d/sub/deep.conf", "- conf.d/sub/new.conf")
	if ok, _, err := conn.Exists(c.root + "/conf.d/sub"); err != nil || ok {
		t.Fatalf("the emptied directory is still there: %v %v", ok, err)
	}

	// A file moved between sub-directories: diff and publish show paths.
	moved := writeFiles(t, t.TempDir(), map[string]string{"app.json": "{}", "other/site.conf": "site", "other/x": "x"})
	c.run("diff", moved).want(t, 0, "--- live(gen-3)/conf.d/site.conf\n+++ /dev/null", "--- /dev/null\n+++ local/other/site.conf")
	c.run("publish", "--prune", moved).want(t, 0, "published generation 4", "+ other/site.conf", "- conf.d/site.conf")
	c.run("history", "conf.d").want(t, 0, "GEN")
	o := c.run("history", "conf.d/sub")
	if o.code != 0 || !strings.Contains(o.stdout, "\n3 ") || !strings.Contains(o.stdout, "\n2 ") || !strings.Contains(o.stdout, "\n1 ") || strings.Contains(o.stdout, "\n4 ") {
		t.Fatalf("history conf.d/sub: generations 3, 2 and 1 only:\n%s%s", o.stdout, o.stderr)
	}
	c.run("history", "nowhere").want(t, 0, "no retained generation of /tree/app changed nowhere")
	c.run("history", "a//b").want(t, 2, "component 2 is empty")

	// --flatten keeps its meaning.
	c.run("publish", "--prune", "--flatten", dir).want(t, 0, "published generation 5", "+ conf.d_sub_deep.conf")
	c.run("publish", "--prune", dir).want(t, 0, "published generation 6")

	// A stray under a directory the set drops: kept, reported.
	if _, err := conn.Create(c.root+"/other/stray", []byte("by hand"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.run("publish", "--prune", writeFiles(t, t.TempDir(), map[string]string{"app.json": "{}"})).
		want(t, 0, "published generation 7", "? other/stray was not written by confpush: kept")

	// Completion, one directory at a time.
	c.run("publish", "--prune", dir).want(t, 0, "published generation 8")
	items, directive := c.complete("get", "")
	if strings.Join(items, ",") != "app.json,conf.d/,other/" || directive != ":6" { // NoSpace|NoFileComp
		t.Errorf("get offers %q %s, want the top level", items, directive)
	}
	if items, _ := c.complete("get", "conf.d/"); strings.Join(items, ",") != "conf.d/site.conf,conf.d/sub/" {
		t.Errorf("get conf.d/ offers %q", items)
	}
	if items, directive := c.complete("get", "conf.d/sub/d"); strings.Join(items, ",") != "conf.d/sub/deep.conf" || directive != ":4" {
		t.Errorf("get conf.d/sub/d offers %q %s", items, directive)
	}
}

// TestWatchTree: watch publishes a tree and follows it: a change of a
// file in a sub-directory, in a sub-directory made after it started, and
// the removal of a sub-directory are each published (every
// sub-directory is watched, as each read of DIR finds it).
func TestWatchTree(t *testing.T) {
	bin := buildBinary(t, ".", "confpush")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/fs/tree"}
	dir := writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1\n", "conf.d/site.conf": "s1\n"})
	a := startWatcher(t, bin, watchArgs(c, dir)()...)
	a.waitFor(t, "watch", "published generation 1")

	from := a.lineCount()
	replaceFiles(t, dir, map[string]string{"conf.d/site.conf": "s2\n"})
	a.waitForSince(t, "watch", "published generation 2", from)
	c.run("get", "conf.d/site.conf").want(t, 0, "s2")

	from = a.lineCount()
	replaceFiles(t, dir, map[string]string{"conf.d/new/deep.conf": "d1\n"})
	a.waitForSince(t, "watch", "published generation 3", from)
	// The new sub-directory is watched now: a change in it is seen.
	from = a.lineCount()
	replaceFiles(t, dir, map[string]string{"conf.d/new/deep.conf": "d2\n"})
	a.waitForSince(t, "watch", "published generation 4", from)
	c.run("get", "conf.d/new/deep.conf").want(t, 0, "d2")

	// The sub-directory leaves DIR in one rename (RemoveAll unlinks its
	// files one by one: a remover descheduled for longer than the
	// debounce between two unlinks would have a state with some of them
	// published as generation 5).
	from = a.lineCount()
	if err := os.Rename(filepath.Join(dir, "conf.d"), filepath.Join(t.TempDir(), "conf.d")); err != nil {
		t.Fatal(err)
	}
	a.waitForSince(t, "watch", "published generation 5", from)
	code, obj := c.json("get")
	if items := obj["items"].([]any); code != 0 || len(items) != 1 {
		t.Fatalf("after removing conf.d: %d %v", code, obj)
	}
}

// TestCLIOldAgents: a tree published to a root an agent older than
// config trees is registered on is refused before anything is written,
// exit 2, naming the agent (--json: kind old_agents and the agents);
// put of a path too; --allow-old-agents publishes.
func TestCLIOldAgents(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/tree/old"}
	meta := layout.New(c.root, layout.DefaultMeta)
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"app.json": "{}"})).want(t, 0, "published generation 1")
	for _, p := range []string{meta.Agents(), meta.AgentNode("web-1")} {
		// web-1's registration as an agent before config trees wrote it.
		data := []byte(`{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","hostname":"web-1"}`)
		if p == meta.Agents() {
			data = nil
		}
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	tree := writeFiles(t, t.TempDir(), map[string]string{"app.json": "{}", "conf.d/site.conf": "site"})
	before := snapshot(t, conn, "/tree", meta.Base())
	c.run("publish", tree).want(t, 2, "the set needs manifest format 2", "1 agent(s) of /tree/old cannot read",
		"web-1 (version unknown, reports no max_format: older than config trees)", "--allow-old-agents")
	c.run("publish", "--dry-run", tree).want(t, 2, "web-1")
	o := c.run("publish", "--json", tree)
	set, err := jsonschema.Load(os.DirFS("../../docs/schema"))
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Validate("failure.json", []byte(o.stdout)); err != nil {
		t.Errorf("--json does not match docs/schema/failure.json: %v", err)
	}
	var res struct {
		Kind      string
		OldAgents []publish.OldAgent `json:"old_agents"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || o.code != 2 || res.Kind != "old_agents" ||
		len(res.OldAgents) != 1 || res.OldAgents[0] != (publish.OldAgent{ID: "web-1"}) {
		t.Fatalf("--json: exit %d, %+v %v\n%s%s", o.code, res, err, o.stdout, o.stderr)
	}
	c.runIn(strings.NewReader("x"), "put", "conf.d/x.conf").want(t, 2, "web-1")
	if after := snapshot(t, conn, "/tree", meta.Base()); after != before {
		t.Fatalf("a refused publish wrote:\nbefore %s\nafter %s", before, after)
	}
	c.run("publish", "--allow-old-agents", tree).want(t, 0, "published generation 2", "+ conf.d/site.conf")
}

// TestCLIAccessTree: confpush init, acl and acl --repair walk a config
// tree: init locks down an open root holding a three-level tree (every
// directory and every item below it gets the root's ACL), a publish
// under the policy makes its new directories with it, agents read nested
// items, and a nested directory or item whose ACL differs is reported by
// acl (exit 7, naming it as a directory or an item) and repaired.
func TestCLIAccessTree(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/acltree/app"}
	c.run("publish", "--allow-open", writeFiles(t, t.TempDir(), map[string]string{
		"app.json": "{}", "conf.d/site.conf": "s", "conf.d/sub/b.conf": "b", "conf.d/sub/deep/c.conf": "c"})).
		want(t, 0, "published generation 1")
	pubFile, web17File, _ := initACL(t, c)
	pub := connectAs(t, srv, "publisher")
	rootACL, _, err := pub.GetACL(c.root)
	if err != nil {
		t.Fatal(err)
	}
	// below is every node under the root with its ACL.
	below := func() map[string][]zk.ACL {
		t.Helper()
		out := map[string][]zk.ACL{}
		var walk func(p string)
		walk = func(p string) {
			kids, _, err := pub.Children(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kids {
				acl, _, err := pub.GetACL(p + "/" + k)
				if err != nil {
					t.Fatal(err)
				}
				out[p+"/"+k] = acl
				walk(p + "/" + k)
			}
		}
		walk(c.root)
		return out
	}
	allRoots := func(what string, want int) {
		t.Helper()
		nodes := below()
		if len(nodes) != want {
			t.Fatalf("%s: %d nodes below the root, want %d: %v", what, len(nodes), want, nodes)
		}
		for p, acl := range nodes {
			if !aclmodel.SameACL(acl, rootACL) {
				t.Errorf("%s: %s has ACL %v, want the root's %v", what, p, acl, rootACL)
			}
		}
	}
	allRoots("after init", 7) // 4 items, conf.d, conf.d/sub, conf.d/sub/deep

	c.run("--auth-file", pubFile, "publish", "--prune", writeFiles(t, t.TempDir(), map[string]string{
		"app.json": "{}", "conf.d/sub/deep/c.conf": "c", "other/x/y": "y"})).want(t, 0, "published generation 2")
	allRoots("after a publish under the policy", 8) // 3 items; conf.d, conf.d/sub, conf.d/sub/deep, other, other/x
	web17 := connectAs(t, srv, "web-17")
	if b, _, err := web17.Get(c.root + "/conf.d/sub/deep/c.conf"); err != nil || string(b) != "c" {
		t.Fatalf("an agent reads a nested item: %q %v", b, err)
	}

	for _, p := range []string{c.root + "/conf.d/sub", c.root + "/conf.d/sub/deep/c.conf"} {
		if _, err := pub.SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, exitACL, "differs: directory /acltree/app/conf.d/sub",
		"differs: item /acltree/app/conf.d/sub/deep/c.conf", "--repair")
	c.run("--auth-file", pubFile, "acl", c.root, "--repair").want(t, 0, "done: directory /acltree/app/conf.d/sub",
		"done: item /acltree/app/conf.d/sub/deep/c.conf")
	c.run("--auth-file", pubFile, "acl", c.root).want(t, 0, "ACLs match the policy")
	allRoots("after acl --repair", 8)
	c.run("--auth-file", web17File, "acl", c.root).want(t, exitPermission, "permission denied")
}

package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/confd"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// TestTreeTargets: a published tree is rendered by every kind of target:
// a dir target holds the whole tree (sub-directories of dir_mode, one
// top-level link per top-level name), a dir target with src "conf.d/"
// the subtree with the prefix stripped (and its globs match below it), a
// file target and a template address items by path. A change (a file
// moved between sub-directories, a sub-directory removed) is swapped in
// whole; an edit of a nested file is seen by the drift watcher (which
// watches every sub-directory) and repaired.
func TestTreeTargets(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	whole := dirSpec(join(out, "whole"))
	whole.DirMode = 0o750
	sub := dirSpec(join(out, "sites"))
	sub.Name, sub.Prefix, sub.Items = "sites", "conf.d/", []string{"*.conf", "extra/*"}
	specs := []agent.TargetSpec{whole, sub,
		{Name: "one", Kind: agent.KindFile, Item: "conf.d/site.conf", Dest: join(out, "site.conf"), Mode: 0o600, UID: -1, GID: -1},
		{Name: "tmpl", Kind: agent.KindTemplate, Template: `{{ (json "app/db/db.json").host }}|{{ join "," names }}`,
			Dest: join(out, "t.conf"), Mode: 0o644, UID: -1, GID: -1},
	}
	gen1 := map[string]string{"app/db/db.json": `{"host":"db1"}`, "conf.d/site.conf": "site1", "conf.d/x.txt": "not selected",
		"conf.d/extra/e.conf": "e", "conf.d/sub/deep/d.conf": "deep (not selected)", "top": "t"}
	mustPublish(t, p, gen1)
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	r.waitGeneration(t, 1)
	checkTree(t, join(out, "whole"), gen1)
	checkTree(t, join(out, "sites"), map[string]string{"site.conf": "site1", "extra/e.conf": "e"})
	if got := readFile(t, join(out, "site.conf")); got != "site1" {
		t.Fatalf("file target = %q", got)
	}
	if got := readFile(t, join(out, "t.conf")); got != "db1|app/db/db.json,conf.d/extra/e.conf,conf.d/site.conf,conf.d/sub/deep/d.conf,conf.d/x.txt,top" {
		t.Fatalf("template = %q", got)
	}
	if m := mode(t, join(out, "whole/conf.d/sub")); m != 0o750 {
		t.Fatalf("sub-directory mode %o", m)
	}
	if target, err := os.Readlink(join(out, "whole/conf.d")); err != nil || target != "..data/conf.d" {
		t.Fatalf("top-level link conf.d -> %q, %v", target, err)
	}

	// A file moved between sub-directories, a sub-directory removed.
	gen2 := map[string]string{"app/db.json": `{"host":"db2"}`, "app/db/db.json": `{"host":"db2"}`, "conf.d/site.conf": "site2",
		"conf.d/extra/moved.conf": "t", "top2": "t2"}
	mustPublish(t, p, gen2)
	r.waitGeneration(t, 2)
	checkTree(t, join(out, "whole"), gen2)
	checkTree(t, join(out, "sites"), map[string]string{"site.conf": "site2", "extra/moved.conf": "t"})
	if _, err := os.Lstat(join(out, "whole/top")); !os.IsNotExist(err) {
		t.Fatalf("a removed top-level name's link is still there: %v", err)
	}

	// Drift in a nested file: every sub-directory is watched, and the
	// edit is repaired.
	cur, err := render.CurrentPath(join(out, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	watched := r.d.DriftDirs()
	for _, d := range []string{"app", "app/db", "conf.d", "conf.d/extra"} {
		if !slices.Contains(watched, filepath.Join(cur, d)) {
			t.Fatalf("drift watcher not on %s: %v", d, watched)
		}
	}
	if err := os.WriteFile(filepath.Join(cur, "app/db/db.json"), []byte("edited by hand"), 0o640); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "repaired the nested file", func(agent.Status) bool {
		files, err := render.ReadCurrent(join(out, "whole"))
		return err == nil && string(files["app/db/db.json"]) == gen2["app/db/db.json"]
	})
}

// checkTree checks that a dir target shows exactly want, read through
// ..data once.
func checkTree(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got, err := render.ReadCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %d files, want %d: %v", dir, len(got), len(want), got)
	}
	for n, w := range want {
		if string(got[n]) != w {
			t.Fatalf("%s: %s = %q, want %q", dir, n, got[n], w)
		}
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != w {
			t.Fatalf("%s through the links: %q %v", n, b, err)
		}
	}
}

// TestFutureFormatKeepsOutput: a root whose manifest is of a format this
// release cannot read (what the release before config trees meets in a
// tree's format-2 manifest) leaves every target as it is, not one file of
// the new generation written; the agent stays on its generation and says
// why once stale (/readyz, status node).
func TestFutureFormatKeepsOutput(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	specs := []agent.TargetSpec{dirSpec(join(out, "d")),
		{Name: "one", Kind: agent.KindFile, Item: "a", Dest: join(out, "a"), Mode: 0o640, UID: -1, GID: -1}}
	gen1 := map[string]string{"a": "a1", "b": "b1"}
	res := mustPublish(t, p, gen1)
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs, func(o *agent.Options) { o.StaleAfter = time.Nanosecond })
	r.waitGeneration(t, 1)

	conn := c.Connect(t, 4*time.Second)
	_, st, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	m := *res.Manifest
	m.Format, m.Generation, m.PublishID = manifest.MaxFormat+1, 2, "future"
	m.Items = map[string]manifest.Item{"a": manifest.ItemOf([]byte("a2")), "b": manifest.ItemOf([]byte("b1")), "conf.d/x": manifest.ItemOf([]byte("x"))}
	paths := layout.New(root, layout.DefaultMeta)
	if _, err := conn.Multi(
		&zk.SetDataRequest{Path: root, Data: m.Encode(), Version: st.Version},
		&zk.SetDataRequest{Path: paths.Item("a"), Data: []byte("a2"), Version: -1},
		&zk.CreateRequest{Path: paths.Item("conf.d"), Data: []byte{}, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: paths.Item("conf.d/x"), Data: []byte("x"), Acl: zk.WorldACL(zk.PermAll)},
	); err != nil {
		t.Fatal(err)
	}
	s := r.waitFor(t, "reported the future format", func(s agent.Status) bool {
		return strings.Contains(s.NotReadyReason, manifest.ErrFutureFormat.Error())
	})
	if s.Generation != 1 || s.Ready {
		t.Fatalf("status %+v", s)
	}
	if got := readFile(t, join(out, "a")); got != "a1" {
		t.Fatalf("file target = %q", got)
	}
	checkTree(t, join(out, "d"), gen1)
	waitStatusNode(t, c.Connect(t, 4*time.Second), "test-agent", func(fs fleet.Status) bool {
		return fs.Generation == 1 && strings.Contains(fs.NotReadyReason, manifest.ErrFutureFormat.Error())
	})
}

// TestAgentReportsFormat: an agent's status node and its registry node
// carry its release and the highest manifest format it reads, so a tree
// (format 2) is published to a root it follows without being forced:
// while it runs (its status node) and while it is away (its
// registration).
func TestAgentReportsFormat(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	mustPublish(t, p, map[string]string{"a": "flat"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{dirSpec(join(out, "d"))},
		func(o *agent.Options) { o.Version = "9.1.2" })
	r.waitGeneration(t, 1)
	conn := c.Connect(t, 4*time.Second)
	waitStatusNode(t, conn, "test-agent", func(s fleet.Status) bool {
		return s.Version == "9.1.2" && s.MaxFormat == manifest.MaxFormat
	})
	node := layout.New(root, layout.DefaultMeta).AgentNode("test-agent")
	var reg fleet.Registration
	for {
		b, _, ev, err := conn.GetW(node)
		if err == nil && len(b) > 0 {
			if err := json.Unmarshal(b, &reg); err != nil {
				t.Fatal(err)
			}
			break
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if err != nil { // not registered yet: wait for the node
			var exists bool
			exists, _, ev, err = conn.ExistsW(node)
			if err != nil {
				t.Fatal(err)
			}
			if exists { // created between the two reads: its watch would wait for a change that may never come
				continue
			}
		}
		select {
		case <-ev:
		case <-time.After(time.Minute):
			t.Fatal("the agent never wrote its registry node")
		}
	}
	if reg.Version != "9.1.2" || reg.MaxFormat != manifest.MaxFormat {
		t.Fatalf("registration %+v, want version 9.1.2 and max_format %d", reg, manifest.MaxFormat)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tree := map[string][]byte{"conf.d/site.conf": []byte("s")}
	res, err := p.Publish(ctx, publish.Request{Items: tree})
	if err != nil {
		t.Fatalf("a tree to a root whose agent reads it: %v", err)
	}
	r.waitGeneration(t, res.Generation)
	checkTree(t, join(out, "d"), map[string]string{"conf.d/site.conf": "s"})

	// Away: its status node went with its session, its registration
	// stays and says what it reads.
	r.stop()
	for {
		ok, _, ev, err := conn.ExistsW(layout.New(root, layout.DefaultMeta).StatusNode("test-agent"))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatal("the stopped agent's status node stays")
		}
	}
	tree["conf.d/other.conf"] = []byte("o")
	if _, err := p.Publish(ctx, publish.Request{Items: tree}); err != nil {
		t.Fatalf("a tree to a root whose agent is away and reads it: %v", err)
	}
}

// TestConfdTreeIsZooKeeperTree: a confd template target over a published
// config tree renders exactly what confd renders from the same root, as
// its ZooKeeper backend reads it (a node with children is a directory, a
// leaf a key whose value is its data): the keys the agent derives from
// the manifest are the nodes ZooKeeper holds, through a change that
// moves a file between directories and removes a directory (no empty
// directory is left for confd to see as a key).
func TestConfdTreeIsZooKeeperTree(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	conn := c.Connect(t, 4*time.Second)
	out := t.TempDir()
	const text = `{{range $d := lsdir "/"}}dir {{$d}}: [{{join (ls (printf "/%s" $d)) ","}}] [{{join (lsdir (printf "/%s" $d)) ","}}]
{{end}}{{range $d := lsdir "/conf.d"}}conf.d has {{$d}}: [{{join (ls (printf "/conf.d/%s" $d)) ","}}]
{{end}}{{range gets "/conf.d/*"}}{{.Key}}={{.Value}}
{{end}}{{range gets "/*"}}{{.Key}}={{.Value}}
{{end}}{{getv "/conf.d/sub/deep/c.conf" "none"}}|{{exists "/conf.d/sub"}}
`
	spec := confdSpec("c", join(out, "c.out"), text, root, root, "/")
	gen1 := map[string]string{"app.json": "{}", "conf.d/a.conf": "a", "conf.d/sub/b.conf": "b", "conf.d/sub/deep/c.conf": "c", "other/x": "x"}
	gen2 := map[string]string{"app.json": "{}", "conf.d/a.conf": "a2", "other/b.conf": "b", "other/x": "x"}
	mustPublish(t, p, gen1)
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{spec})
	for g, set := range []map[string]string{gen1, gen2} {
		if g == 1 {
			mustPublish(t, p, set)
		}
		r.waitGeneration(t, int64(g+1))
		// confd's ZooKeeper backend (nodeWalk): children first; a node
		// without children is a key.
		keys := map[string]string{}
		var walk func(node string)
		walk = func(node string) {
			kids, st, err := conn.Children(node)
			if err != nil {
				t.Fatal(err)
			}
			if st.NumChildren == 0 {
				b, _, err := conn.Get(node)
				if err != nil {
					t.Fatal(err)
				}
				keys[node] = string(b)
				return
			}
			for _, k := range kids {
				walk(node + "/" + k)
			}
		}
		walk(root)
		if len(keys) != len(set) {
			t.Fatalf("generation %d: confd reads %d keys from ZooKeeper, the set has %d items: %v", g+1, len(keys), len(set), keys)
		}
		view, err := confd.Resource{Prefix: root, Keys: []string{"/"}}.View("", keys)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := confd.Parse("c", text, confd.FuncMap(confd.NewStore(view), confd.Host{}))
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		if err := tm.Execute(&want, nil); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, join(out, "c.out")); got != want.String() {
			t.Fatalf("generation %d: the agent renders\n%s\nconfd, reading ZooKeeper, renders\n%s", g+1, got, want.String())
		}
	}
	// (lsdir "/" lists nothing, in confd too: memkv's quirk.)
	if got := readFile(t, join(out, "c.out")); got != "/conf.d/a.conf=a2\n/app.json={}\nnone|false\n" {
		t.Fatalf("generation 2 rendered %q", got)
	}
}

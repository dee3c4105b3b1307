package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// The tests of config trees (docs/design.md, "Config trees"): item paths
// as nested znodes, their directories made and deleted by the commit in
// both modes, strays, a takeover's walk, and what history, rollback, GC,
// canaries and lost connections do with them. checkLive (checkNodes)
// verifies the whole tree after each step: exactly the items and their
// directories, nothing left over.

// treeGen1 is a tree of three levels; treeGen2 changes it: a file moved
// between subdirectories (conf.d/sub/b.conf to other/b.conf), a
// subdirectory removed (conf.d/sub/deep, and conf.d/sub with it), a file
// that becomes a directory (k1 to k1/f) and a directory that becomes a
// file (k2/f to k2).
func treeGen1() map[string][]byte {
	return map[string][]byte{
		"app.json":               []byte(`{"a":1}`),
		"conf.d/a.conf":          []byte("a1"),
		"conf.d/sub/b.conf":      []byte("b1"),
		"conf.d/sub/deep/c.conf": []byte("c1"),
		"other/x":                []byte("x1"),
		"k1":                     []byte("k1 file"),
		"k2/f":                   []byte("k2 dir's file"),
	}
}

func treeGen2() map[string][]byte {
	return map[string][]byte{
		"app.json":      []byte(`{"a":2}`),
		"conf.d/a.conf": []byte("a1"),
		"other/x":       []byte("x1"),
		"other/b.conf":  []byte("b1"),
		"k1/f":          []byte("k1 is a directory now"),
		"k2":            []byte("k2 is a file now"),
	}
}

// TestTreePublishChangeRollback publishes a three-level tree, changes it
// (a file moved between subdirectories, a subdirectory removed, a file
// and a directory trading places), rolls it back and then publishes a
// flat set, in multi and in marker mode: after every step the nodes
// under the root are exactly the set's items and directories, the
// directories empty with the root's ACL; a multi-mode publish is one
// transaction; the manifest is format 2 while a path has "/" and format
// 1 again for the flat set. With a retention of 3 the GC keeps the
// blobs the retained tree generations need.
func TestTreePublishChangeRollback(t *testing.T) {
	c := startZK(t)
	for _, mode := range []manifest.Mode{manifest.ModeMulti, manifest.ModeMarker} {
		t.Run(mode.String(), func(t *testing.T) {
			root := "/trees/change-" + mode.String()
			conn, sess := dial(t, testSession, c.Addrs()...)
			// A root with an ACL of its own: directories must get it.
			acl := append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "10.9.9.9"})
			if _, err := conn.Create("/trees", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
			if _, err := conn.Create(root, nil, 0, acl); err != nil {
				t.Fatal(err)
			}
			p := mustNew(t, conn, sess, root, WithRetention(3))

			res := mustPublish(t, p, Request{Items: treeGen1(), Mode: mode})
			checkLive(t, p, 1, treeGen1())
			if res.Manifest.Format != manifest.FormatTree {
				t.Fatalf("a tree published as format %d", res.Manifest.Format)
			}
			checkDirACLs(t, conn, root, treeGen1(), acl)

			res = mustPublish(t, p, Request{Items: treeGen2(), Mode: mode})
			checkLive(t, p, 2, treeGen2())
			checkDirACLs(t, conn, root, treeGen2(), acl)
			if mode == manifest.ModeMulti && (res.Mode != manifest.ModeMulti || res.CommitAttempts != 1) {
				t.Fatalf("the change was not one transaction: %+v", res)
			}
			wantRemoved := []string{"conf.d/sub/b.conf", "conf.d/sub/deep/c.conf", "k1", "k2/f"}
			if !slices.Equal(res.Removed, wantRemoved) || !slices.Equal(res.Added, []string{"k1/f", "k2", "other/b.conf"}) {
				t.Fatalf("added %v removed %v", res.Added, res.Removed)
			}

			rb, err := p.Rollback(testCtx(t), 1, Request{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if rb.Generation != 3 {
				t.Fatalf("rollback published generation %d", rb.Generation)
			}
			checkLive(t, p, 3, treeGen1())

			flat := map[string][]byte{"app.json": []byte(`{"a":3}`), "flat.conf": []byte("f")}
			res = mustPublish(t, p, Request{Items: flat, Mode: mode})
			checkLive(t, p, 4, flat)
			if res.Manifest.Format != manifest.FormatVersion {
				t.Fatalf("a flat set published as format %d", res.Manifest.Format)
			}
			// Generation 5 makes the GC drop generations 1 and 2; the
			// retained tree generation (3) still reads, from blobs.
			mustPublish(t, p, Request{Items: map[string][]byte{"only": []byte("o")}, Mode: mode})
			if h := historyList(t, conn, p.paths); !slices.Equal(h, []int64{3, 4, 5}) {
				t.Fatalf("history %v, want 3 4 5", h)
			}
			m3, items3, err := p.Read(testCtx(t), 3)
			if err != nil || !sameItems(items3, treeGen1()) || m3.RollbackOf != 1 {
				t.Fatalf("read generation 3: %v %v", err, sortedNames(items3))
			}
			rb, err = p.Rollback(testCtx(t), 3, Request{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			checkLive(t, p, rb.Generation, treeGen1())
		})
	}
}

// checkDirACLs checks that every directory of the set has the root's ACL.
func checkDirACLs(t *testing.T, conn *zk.Conn, root string, set map[string][]byte, want []zk.ACL) {
	t.Helper()
	for _, d := range treeDirs(hashItems(set)) {
		acl, _, err := conn.GetACL(root + "/" + d)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(acl) != fmt.Sprint(want) {
			t.Fatalf("directory %s has ACL %v, want the root's %v", d, acl, want)
		}
	}
}

// TestTreeStrays: a node zkconf did not write under a directory the new
// set no longer has keeps that directory (and its parents) in place,
// reported, in both modes; the publish lands once and the live set reads
// whole. A stray created between the listing and the commit makes the
// multi-mode commit fail with NotEmpty: it is sent again without that
// directory's delete (two sends, one commit). A stray under a directory
// the set still has changes nothing.
func TestTreeStrays(t *testing.T) {
	c := startZK(t)
	base := map[string][]byte{"a/b/x": []byte("x"), "a/y": []byte("y"), "c": []byte("c"), "d/e/f": []byte("f")}
	next := map[string][]byte{"c": []byte("c2"), "d/g": []byte("g")}
	for _, mode := range []manifest.Mode{manifest.ModeMulti, manifest.ModeMarker} {
		t.Run("before/"+mode.String(), func(t *testing.T) {
			root := "/trees/stray-before-" + mode.String()
			p := newPub(t, c, root)
			mustPublish(t, p, Request{Items: base, Mode: mode})
			mustCreate(t, p.conn(), root+"/a/b/stray", "written behind zkconf's back")
			mustCreate(t, p.conn(), root+"/d/e/also", "")
			st0, _ := rootState(t, p.conn(), root)
			res := mustPublish(t, p, Request{Items: next, Mode: mode})
			if !slices.Equal(res.Strays, []string{"a/b/stray", "d/e/also"}) {
				t.Fatalf("strays %v", res.Strays)
			}
			checkStrayTree(t, p, 2, next, []string{"a", "a/b", "a/b/stray", "d/e", "d/e/also"})
			commits := int32(1)
			if mode == manifest.ModeMarker {
				commits = 2
			}
			st1, _ := rootState(t, p.conn(), root)
			if st1.Version != st0.Version+commits {
				t.Fatalf("root version %d -> %d", st0.Version, st1.Version)
			}
			// a/b is the set's again: its stray is not reported; d
			// leaves the set, and the unmanaged d/e keeps it.
			again := map[string][]byte{"c": []byte("c3"), "a/b/z": []byte("z")}
			res = mustPublish(t, p, Request{Items: again, Mode: mode})
			if !slices.Equal(res.Strays, []string{"d/e"}) {
				t.Fatalf("strays %v", res.Strays)
			}
			checkStrayTree(t, p, 3, again, []string{"a/b/stray", "d", "d/e", "d/e/also"})
		})
	}
	t.Run("racing/multi", func(t *testing.T) {
		root := "/trees/stray-racing"
		var armed atomic.Bool
		var p *Publisher
		p = newPub(t, c, root, withBeforeCommit(func(stage string) {
			if stage == "multi" && armed.CompareAndSwap(true, false) {
				mustCreate(t, p.conn(), root+"/a/b/stray", "")
			}
		}))
		mustPublish(t, p, Request{Items: base})
		st0, _ := rootState(t, p.conn(), root)
		armed.Store(true)
		res := mustPublish(t, p, Request{Items: next})
		if armed.Load() {
			t.Fatal("the stray was never created")
		}
		if res.CommitAttempts != 2 || !slices.Equal(res.Strays, []string{"a/b/stray"}) {
			t.Fatalf("want 2 sends and the stray reported: %+v", res)
		}
		checkStrayTree(t, p, 2, next, []string{"a", "a/b", "a/b/stray"})
		if st1, _ := rootState(t, p.conn(), root); st1.Version != st0.Version+1 {
			t.Fatalf("root version %d -> %d: want one commit", st0.Version, st1.Version)
		}
	})
	t.Run("racing/marker", func(t *testing.T) {
		root := "/trees/stray-racing-marker"
		var armed atomic.Bool
		var p *Publisher
		p = newPub(t, c, root, withMarkerWrite(func(int) error {
			if armed.CompareAndSwap(true, false) {
				mustCreate(t, p.conn(), root+"/a/b/stray", "")
			}
			return nil
		}))
		mustPublish(t, p, Request{Items: base, Mode: manifest.ModeMarker})
		armed.Store(true)
		res := mustPublish(t, p, Request{Items: next, Mode: manifest.ModeMarker})
		if armed.Load() || !slices.Equal(res.Strays, []string{"a/b/stray"}) {
			t.Fatalf("strays %v", res.Strays)
		}
		checkStrayTree(t, p, 2, next, []string{"a", "a/b", "a/b/stray"})
	})
	// Strays appearing at every send: the publish gives up after
	// maxStrayRounds rounds with nothing applied, instead of looping.
	t.Run("bounded", func(t *testing.T) {
		root := "/trees/stray-bounded"
		many := map[string][]byte{"keep": []byte("k")}
		for i := range maxStrayRounds + 2 {
			many[fmt.Sprintf("d%d/x", i)] = []byte("x")
		}
		var sends atomic.Int32
		var armed atomic.Bool
		var p *Publisher
		p = newPub(t, c, root, withBeforeCommit(func(stage string) {
			if stage == "multi" && armed.Load() {
				// A stray under a directory this send still deletes.
				mustCreate(t, p.conn(), fmt.Sprintf("%s/d%d/stray", root, sends.Add(1)-1), "")
			}
		}))
		mustPublish(t, p, Request{Items: many})
		st0, _ := rootState(t, p.conn(), root)
		armed.Store(true)
		_, err := p.Publish(testCtx(t), Request{Items: map[string][]byte{"keep": []byte("k2")}})
		armed.Store(false)
		if err == nil || !strings.Contains(err.Error(), "not applied") || !strings.Contains(err.Error(), "kept appearing") {
			t.Fatalf("want a bounded failure, got %v", err)
		}
		if n := sends.Load(); n != maxStrayRounds+1 {
			t.Fatalf("%d sends, want %d", n, maxStrayRounds+1)
		}
		if st1, _ := rootState(t, p.conn(), root); st1.Version != st0.Version {
			t.Fatal("a commit landed")
		}
		m, _, err := p.Read(testCtx(t), 0)
		if err != nil || m.Generation != 1 {
			t.Fatalf("live %v %v", m, err)
		}
	})
}

// checkStrayTree checks the live generation and that the nodes under the
// root are the set's plus exactly extra (strays and the directories they
// keep).
func checkStrayTree(t *testing.T, p *Publisher, gen int64, want map[string][]byte, extra []string) {
	t.Helper()
	m, got, err := p.Read(testCtx(t), 0)
	if err != nil || m.Generation != gen || !sameItems(got, want) {
		t.Fatalf("live: generation %v items %v, %v", m, sortedNames(got), err)
	}
	nodes := treeSnapshot(t, p.conn(), p.paths.Root)
	var all []string
	for n := range nodes {
		if n != p.paths.Root {
			all = append(all, strings.TrimPrefix(n, p.paths.Root+"/"))
		}
	}
	wantNodes := slices.Clone(extra)
	for n := range want {
		wantNodes = append(wantNodes, n)
		wantNodes = append(wantNodes, manifest.Dirs(n)...)
	}
	slices.Sort(all)
	slices.Sort(wantNodes)
	if wantNodes = slices.Compact(wantNodes); !slices.Equal(all, wantNodes) {
		t.Fatalf("nodes %v\nwant %v", all, wantNodes)
	}
}

func mustCreate(t testing.TB, conn *zk.Conn, path, data string) {
	t.Helper()
	if _, err := conn.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("create %s: %v", path, err)
	}
}

// TestTreeTakeover: a marker-mode publish of a tree that dies midway (its
// new directories and some items written, its process gone) leaves the
// marker; the next publish takes it over, walks the whole tree and makes
// it exactly its own set: the dead publish's items and directories go.
func TestTreeTakeover(t *testing.T) {
	c := startZK(t)
	root := "/trees/takeover"
	first := map[string][]byte{"a/one": []byte("1"), "b/two": []byte("2")}
	mustPublish(t, newPub(t, c, root), Request{Items: first})

	conn, sess := dial(t, testSession, c.Addrs()...)
	dead := mustNew(t, conn, sess, root, withMarkerWrite(func(written int) error {
		if written == 6 { // its 4 directories and 2 items
			conn.Close()
			return errSimulatedCrash
		}
		return nil
	}))
	doomed := map[string][]byte{"x/y/z/1": []byte("1"), "x/y/z/2": []byte("2"), "x/w/3": []byte("3"), "a/one": []byte("1b")}
	if _, err := dead.Publish(testCtx(t), Request{Items: doomed, Mode: manifest.ModeMarker}); err == nil {
		t.Fatal("the crashed publish succeeded")
	}
	p := newPub(t, c, root)
	if ok, _, _ := p.conn().Exists(root + "/x/y/z/1"); !ok {
		t.Fatal("the dead publish wrote no directory: the test proves nothing")
	}
	final := map[string][]byte{"b/two": []byte("2"), "c/three": []byte("3")}
	res := mustPublish(t, p, Request{Items: final})
	if res.TookOver == "" {
		t.Fatal("no takeover reported")
	}
	checkLive(t, p, 2, final)
}

// TestTreeConnectionLoss: the commit of a tree change (directories made
// and deleted in the same transaction) lost with the connection, on
// either side of the server applying it, is resolved like any commit:
// applied exactly once, the tree exactly the new set.
func TestTreeConnectionLoss(t *testing.T) {
	c := startOwnZK(t)
	for _, tc := range []struct {
		name   string
		mode   manifest.Mode
		stage  string
		landed bool
	}{
		{"MultiNotLanded", manifest.ModeMulti, "multi", false},
		{"MultiLanded", manifest.ModeMulti, "multi", true},
		{"MarkerFinalLanded", manifest.ModeMarker, "final", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, c, 15*time.Second, true)
			root := "/trees/cut-" + tc.name
			p, armed := r.cutPublisher(t, root, tc.stage, tc.landed)
			mustPublish(t, p, Request{Items: treeGen1(), Mode: tc.mode})
			st0, _ := rootState(t, r.direct, root)
			cutDone := r.cutWhenCreated(p.paths.HistoryNode(2), tc.landed)
			armed.Store(true)
			res, err := p.Publish(testCtx(t), Request{Items: treeGen2(), Mode: tc.mode})
			<-cutDone
			if err != nil {
				t.Fatalf("publish after a cut: %v", err)
			}
			if armed.Load() || !res.Recovered {
				t.Fatalf("the fault was not injected, or not seen: %+v", res)
			}
			commits := int32(1)
			if tc.mode == manifest.ModeMarker {
				commits = 2
			}
			checkOnce(t, p, st0.Version, commits, 2, res.PublishID, treeGen2())
		})
	}
}

// TestTreeCanary: a canary of a tree stores its candidate contents flat
// (candidate/<sha256>) and a format-2 candidate manifest, moves no item,
// and its promote publishes the candidate's tree for everyone.
func TestTreeCanary(t *testing.T) {
	c := startZK(t)
	root := "/trees/canary"
	p := newPub(t, c, root)
	mustPublish(t, p, Request{Items: treeGen1()})
	sel := manifest.Selection{Selector: "zone=a"}
	res, err := p.Publish(testCtx(t), Request{Items: treeGen2(), Canary: &sel})
	if err != nil {
		t.Fatal(err)
	}
	checkLive(t, p, 1, treeGen1())
	cm, cand, err := p.Read(testCtx(t), res.Generation)
	if err != nil || cm.Format != manifest.FormatTree || !sameItems(cand, treeGen2()) {
		t.Fatalf("candidate %v %v: %v", cm, sortedNames(cand), err)
	}
	kids, _, err := p.conn().Children(p.paths.Candidate())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if len(k) != 64 || strings.Contains(k, "/") {
			t.Fatalf("candidate content %q is not a flat sha256", k)
		}
	}
	if len(kids) == 0 {
		t.Fatal("no candidate content stored")
	}
	rs, err := p.Rollout(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.Promote(testCtx(t), rs.Canary.RolloutID, Request{})
	if err != nil {
		t.Fatal(err)
	}
	checkLive(t, p, pr.Generation, treeGen2())
}

// TestTreeRefusesOldAgents: a set with item paths (manifest format 2) is
// refused, before anything is written (dry runs, canaries and rollbacks
// too), while an agent the root expects reports reading format 1 or
// reports no max_format (a registration as agents before config trees
// write it), naming every such agent with its version; a live status
// node is believed over the registration of an agent that was since
// upgraded; an identity that never reported (the empty registry node
// `confpush init` creates) is not counted; AllowOldAgents publishes; a
// flat set never minds; and a root with no agent publishes a tree
// freely.
// fleetReaders is what rollout.Readers gives confpush (publish's tests
// cannot import rollout): the readers of root, judged by its fleet.
func fleetReaders(t *testing.T, c *zktest.Cluster, root string) Option {
	t.Helper()
	conn, sess := dial(t, testSession, c.Addrs()...)
	f, err := fleet.New(zkclient.Fixed(conn, sess), root)
	if err != nil {
		t.Fatal(err)
	}
	return WithReaders(func(ctx context.Context, format int) ([]OldAgent, error) {
		agents, err := f.ReadersBelow(ctx, format)
		var old []OldAgent
		for _, a := range agents {
			version, maxFormat, _ := a.Reads()
			old = append(old, OldAgent{ID: a.ID, Version: version, MaxFormat: maxFormat})
		}
		return old, err
	})
}

func TestTreeRefusesOldAgents(t *testing.T) {
	c := startZK(t)
	flat := map[string][]byte{"app.json": []byte("flat")}

	free := newPub(t, c, "/trees/noagents", fleetReaders(t, c, "/trees/noagents"))
	if res := mustPublish(t, free, Request{Items: treeGen1()}); res.Manifest.Format != manifest.FormatTree {
		t.Fatalf("format %d", res.Manifest.Format)
	}

	p := newPub(t, c, "/trees/old", fleetReaders(t, c, "/trees/old"))
	mustPublish(t, p, Request{Items: flat})
	conn := p.conn()
	reg := func(id, data string) {
		t.Helper()
		if _, err := conn.Create(p.paths.AgentNode(id), []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{p.paths.Agents(), p.paths.Status()} {
		if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	// Byte for byte what an agent before config trees registers.
	reg("web-1", `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","labels":{"hostname":"web-1"},"hostname":"web-1"}`)
	reg("web-2", `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","version":"2.0.0","max_format":2}`)
	reg("web-3", "") // confpush init's node: never ran
	reg("web-4", `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","version":"1.0.0"}`)
	// web-4 runs now, upgraded: its status node says so.
	st, _ := json.Marshal(fleet.Status{AgentID: "web-4", Version: "2.0.0", MaxFormat: 2, Root: p.paths.Root})
	if _, err := conn.Create(p.paths.StatusNode("web-4"), st, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// web-5 runs and reads format 1 only (a future release's agent
	// could report any number: the comparison is by number).
	st, _ = json.Marshal(fleet.Status{AgentID: "web-5", Version: "1.9.0", MaxFormat: 1, Root: p.paths.Root})
	if _, err := conn.Create(p.paths.StatusNode("web-5"), st, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var liveGen int64 = 1
	before, _ := rootState(t, conn, p.paths.Root)
	hist := historyList(t, conn, p.paths)
	refused := func(what string, err error) {
		t.Helper()
		var oe *OldAgentsError
		if !errors.As(err, &oe) || !errors.Is(err, ErrOldAgents) {
			t.Fatalf("%s: %v, want an OldAgentsError", what, err)
		}
		want := []OldAgent{{ID: "web-1"}, {ID: "web-5", Version: "1.9.0", MaxFormat: 1}}
		if !slices.Equal(oe.Agents, want) || oe.Format != manifest.FormatTree || oe.Root != p.paths.Root {
			t.Fatalf("%s: refused %+v (format %d, root %s), want %+v", what, oe.Agents, oe.Format, oe.Root, want)
		}
		for _, s := range []string{"web-1 (version unknown, reports no max_format", "web-5 (1.9.0, reads up to format 1)", "--allow-old-agents"} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: %q does not say %q", what, err, s)
			}
		}
		if strings.Contains(err.Error(), "web-2") || strings.Contains(err.Error(), "web-3") || strings.Contains(err.Error(), "web-4") {
			t.Fatalf("%s: %q names an agent that reads format 2 or never reported", what, err)
		}
		after, _ := rootState(t, conn, p.paths.Root)
		if after.Mzxid != before.Mzxid || after.Cversion != before.Cversion || !slices.Equal(historyList(t, conn, p.paths), hist) {
			t.Fatalf("%s: the refused publish wrote (root %+v -> %+v)", what, before, after)
		}
		checkLive(t, p, liveGen, flat)
	}
	_, err := p.Publish(testCtx(t), Request{Items: treeGen1()})
	refused("publish", err)
	_, err = p.Publish(testCtx(t), Request{Items: treeGen1(), DryRun: true})
	refused("dry run", err)
	_, err = p.Publish(testCtx(t), Request{Items: treeGen1(), Canary: &manifest.Selection{Selector: "zone=a"}})
	refused("canary", err)
	_, err = p.Publish(testCtx(t), Request{Items: treeGen1(), Mode: manifest.ModeMarker})
	refused("marker mode", err)
	// A flat set minds no agent.
	flat = map[string][]byte{"app.json": []byte("flat 2")}
	liveGen = mustPublish(t, p, Request{Items: flat}).Generation

	res, err := p.Publish(testCtx(t), Request{Items: treeGen1(), AllowOldAgents: true})
	if err != nil || res.Manifest.Format != manifest.FormatTree {
		t.Fatalf("AllowOldAgents: %v", err)
	}
	checkLive(t, p, res.Generation, treeGen1())
	// A rollback to a flat generation needs format 1; back to the tree
	// it is refused again.
	rb, err := p.Rollback(testCtx(t), liveGen, Request{})
	if err != nil {
		t.Fatal(err)
	}
	liveGen = rb.Generation
	before, _ = rootState(t, conn, p.paths.Root)
	hist = historyList(t, conn, p.paths)
	_, err = p.Rollback(testCtx(t), res.Generation, Request{})
	refused("rollback to the tree", err)
	// A canary of a tree started anyway is promoted only anyway.
	flatAgain := mustPublish(t, p, Request{Items: flat}).Generation
	cr, err := p.Publish(testCtx(t), Request{Items: treeGen2(), Canary: &manifest.Selection{Selector: "zone=a"}, AllowOldAgents: true})
	if err != nil {
		t.Fatal(err)
	}
	liveGen = flatAgain
	before, _ = rootState(t, conn, p.paths.Root)
	hist = historyList(t, conn, p.paths)
	rs, err := p.Rollout(testCtx(t))
	if err != nil || rs.Canary == nil || rs.Canary.Generation != cr.Generation {
		t.Fatalf("rollout %+v: %v", rs, err)
	}
	_, err = p.Promote(testCtx(t), rs.Canary.RolloutID, Request{})
	refused("promote", err)
	pr, err := p.Promote(testCtx(t), rs.Canary.RolloutID, Request{AllowOldAgents: true})
	if err != nil {
		t.Fatal(err)
	}
	checkLive(t, p, pr.Generation, treeGen2())
}

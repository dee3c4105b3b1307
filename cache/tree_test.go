package cache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// Config trees (docs/design.md, "Config trees"): a cache reads
// <root>/<path> for each item the manifest names and nothing else (no
// listing), verifies it as before, and persists paths in its state file.

// TestCacheFollowsTree follows a tree published by package publish as it
// changes (a file moved between subdirectories, a subdirectory removed)
// and is rolled back: every snapshot is the published tree item for
// item; every request after the first snapshot is a root read or an item
// read (no listing of any directory); only changed contents are read; the
// state file, loaded again, holds the tree.
func TestCacheFollowsTree(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p, err := publish.New(zkclient.Fixed(conn, sess), "/tree")
	if err != nil {
		t.Fatal(err)
	}
	gen1 := map[string][]byte{"app.json": []byte(`{}`), "conf.d/a.conf": []byte("a"), "conf.d/sub/b.conf": []byte("b"),
		"conf.d/sub/deep/c.conf": []byte("c"), "other/x": []byte("x")}
	gen2 := map[string][]byte{"app.json": []byte(`{}`), "conf.d/a.conf": []byte("a"), "other/b.conf": []byte("b"), "other/x": []byte("x2")}
	if _, err := p.Publish(testCtx(t), publish.Request{Items: gen1}); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	log, _ := testLogger(t)
	c := newCache(t, "/tree", WithServers(zkc.Addrs(), 4*time.Second), WithStateFile(state), WithLogger(log))
	waitGen(t, c, 1, gen1)
	before := c.Stats()
	if _, err := p.Publish(testCtx(t), publish.Request{Items: gen2}); err != nil {
		t.Fatal(err)
	}
	waitGen(t, c, 2, gen2)
	if _, err := p.Rollback(testCtx(t), 1, publish.Request{}); err != nil {
		t.Fatal(err)
	}
	waitGen(t, c, 3, gen1)
	after := c.Stats()
	reads := (after.RootReads - before.RootReads) + (after.ItemRequests - before.ItemRequests) +
		(after.MarkerChecks - before.MarkerChecks) + (after.Syncs - before.Syncs)
	if got := after.Requests - before.Requests; got != reads {
		t.Fatalf("%d requests but %d root, marker and item reads: something listed a directory", got, reads)
	}
	// other/x changed, other/b.conf moved (same content, new path): two
	// reads; the rollback brings back x and the subdirectory's files
	// under their old paths, none of them new content but x's.
	if n := after.ItemsFetched - before.ItemsFetched; n > 6 {
		t.Fatalf("%d items read for two changes of a few items", n)
	}
	_ = c.Close()
	s, err := loadState(state, "/tree")
	if err != nil || s == nil {
		t.Fatalf("load state: %v", err)
	}
	if s.Generation() != 3 || s.m.Format != manifest.FormatTree {
		t.Fatalf("state holds generation %d format %d", s.Generation(), s.m.Format)
	}
	checkItems(t, s, gen1)
}

// TestStateFileTree: a snapshot with item paths persists and loads back
// whole; a nested item's file corrupted makes the whole state unusable
// (never served in part); a state whose manifest says format 1 but holds
// a path, in either state format, is refused as a whole too.
func TestStateFileTree(t *testing.T) {
	items := map[string][]byte{"a": []byte("a"), "conf.d/x.conf": []byte("x"), "conf.d/sub/y": []byte("y"), "z/same": []byte("a")}
	m := &manifest.Manifest{Format: manifest.FormatTree, Generation: 7, PublishID: "p", PublishedAt: time.Now().UTC(), Mode: manifest.ModeMulti,
		Items: map[string]manifest.Item{}}
	for n, d := range items {
		m.Items[n] = manifest.ItemOf(d)
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := writeState(path, "/r", newSnapshot(m, 99, items, false)); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(path, "/r")
	if err != nil || s == nil || s.Generation() != 7 || s.Zxid() != 99 {
		t.Fatalf("load: %v %v", s, err)
	}
	checkItems(t, s, items)
	pack := onlyPack(t, path)
	if fs, bs, _ := lastFrame(t, pack); bs-fs != 3 {
		t.Fatalf("frame of %d bytes of contents (want 3 contents, each once)", bs-fs)
	}
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	// A nested item's content corrupted: refused whole.
	b[committed(t, path, "/r").at[m.Items["conf.d/sub/y"].SHA256]] = 'Y'
	if err := os.WriteFile(pack, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := loadState(path, "/r"); !errors.Is(err, errStateFile) || s != nil || !strings.Contains(err.Error(), `item "conf.d/sub/y"`) {
		t.Fatalf("corrupted nested item: %v %v", s, err)
	}
	// Paths under format 1, in a format-2 state and in a format-1 state
	// (items inline): refused whole.
	one := *m
	one.Format = manifest.FormatVersion
	if err := writeState(path, "/r", newSnapshot(&one, 99, items, false)); err != nil {
		t.Fatal(err)
	}
	if s, err := loadState(path, "/r"); !errors.Is(err, errStateFile) || s != nil {
		t.Fatalf("paths in a format-1 manifest: %v %v", s, err)
	}
	v1 := encodeLegacyState(t, "/r", newSnapshot(&one, 99, items, false), time.Now())
	if err := os.WriteFile(path, v1, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := loadState(path, "/r"); !errors.Is(err, errStateFile) || s != nil {
		t.Fatalf("paths in a format-1 state: %v %v", s, err)
	}
}

// TestFutureFormatKeepsSnapshot: a root whose manifest is of a format this
// release does not read (what a release before config trees meets in a
// format-2 manifest: manifest TestPreviousReleaseRefusesFormat2) leaves
// the cache on the snapshot it holds, reporting ErrFutureFormat, its
// items whole; no item of the new generation is read.
func TestFutureFormatKeepsSnapshot(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 30*time.Second)
	rp := newRawPublisher(t, conn, "/future")
	gen1 := map[string][]byte{"a": []byte("a"), "b": []byte("b")}
	rp.publish(gen1)
	log, _ := testLogger(t)
	c := newCache(t, "/future", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	waitGen(t, c, 1, gen1)
	before := c.Stats()

	// The next generation, as a newer zkconf would write it: its items
	// in place (nested), then a manifest of format 3.
	old, ver, err := rp.current()
	if err != nil {
		t.Fatal(err)
	}
	next := map[string][]byte{"a": []byte("a2"), "conf.d/x": []byte("x")}
	m := nextManifest(old, next, manifest.ModeMulti)
	m.Format = manifest.MaxFormat + 1
	paths := layout.New("/future", layout.DefaultMeta)
	if _, err := conn.Multi(
		&zk.SetDataRequest{Path: paths.Root, Data: m.Encode(), Version: ver},
		&zk.SetDataRequest{Path: paths.Item("a"), Data: next["a"], Version: -1},
		&zk.CreateRequest{Path: paths.Item("conf.d"), Data: []byte{}, Acl: acl},
		&zk.CreateRequest{Path: paths.Item("conf.d/x"), Data: next["conf.d/x"], Acl: acl},
	); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "ErrFutureFormat", func(st StateInfo) bool { return errors.Is(st.Err, manifest.ErrFutureFormat) })
	if st.State == StateLive {
		t.Fatalf("state %v with %v", st.State, st.Err)
	}
	s := c.Snapshot()
	if s.Generation() != 1 {
		t.Fatalf("snapshot generation %d, want the held 1", s.Generation())
	}
	checkItems(t, s, gen1)
	if n := c.Stats().ItemsFetched - before.ItemsFetched; n != 0 {
		t.Fatalf("%d items of the refused generation read", n)
	}
}

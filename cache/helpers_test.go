package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/syncbuf"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// testTimeout bounds every wait in these tests: generous, because a JVM and
// -race on a small machine are slow, but a hang still fails.
const testTimeout = 60 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger returns a logger whose output is printed when the test fails,
// and the buffer it writes.
func testLogger(t *testing.T) (*slog.Logger, *syncbuf.Buffer) {
	t.Helper()
	b := &syncbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			s := b.String()
			if len(s) > 20000 {
				s = "...\n" + s[len(s)-20000:]
			}
			t.Logf("cache log:\n%s", s)
		}
	})
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo})), b
}

// newCache starts a cache and closes it in t.Cleanup.
func newCache(t *testing.T, root string, opts ...Option) *Cache {
	t.Helper()
	c, err := New(context.Background(), root, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitGen waits for generation gen and checks it holds exactly want.
func waitGen(t *testing.T, c *Cache, gen int64, want map[string][]byte) *Snapshot {
	t.Helper()
	s, err := c.Wait(testCtx(t), gen)
	if err != nil {
		t.Fatalf("Wait(%d): %v", gen, err)
	}
	if s.Generation() != gen {
		t.Fatalf("got generation %d, want %d", s.Generation(), gen)
	}
	if want != nil {
		checkItems(t, s, want)
	}
	return s
}

func checkItems(t *testing.T, s *Snapshot, want map[string][]byte) {
	t.Helper()
	if err := sameItems(s, want); err != nil {
		t.Fatalf("generation %d: %v", s.Generation(), err)
	}
}

func sameItems(s *Snapshot, want map[string][]byte) error {
	if got, w := s.Names(), slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
		return fmt.Errorf("names %v, want %v", got, w)
	}
	for name, w := range want {
		if got, _ := s.Get(name); !bytes.Equal(got, w) {
			return fmt.Errorf("item %q = %q, want %q", name, got, w)
		}
	}
	return nil
}

// waitState waits until cond holds for the cache's state, woken by
// StateChanges and by every applied snapshot (a new generation alone is
// no transition; it wakes Wait).
func waitState(t *testing.T, c *Cache, what string, cond func(StateInfo) bool) StateInfo {
	t.Helper()
	ctx := testCtx(t)
	for {
		c.mu.Lock()
		applied := c.appliedWake()
		c.mu.Unlock()
		if st := c.State(); cond(st) {
			return st
		}
		select {
		case <-applied:
		case <-c.StateChanges():
		case <-ctx.Done():
			st := c.State()
			t.Fatalf("waiting for %s: state %v (err %v, generation %d)", what, st.State, st.Err, st.Generation)
		}
	}
}

func isLive(st StateInfo) bool { return st.State == StateLive }

// rawPublisher writes publishes the way docs/design.md describes,
// with plain client calls, so that tests control every step (and can stop a
// marker-mode publish halfway).
type rawPublisher struct {
	t    testing.TB
	conn *zk.Conn
	p    layout.Paths
	// inc is the incarnation of a first publish (the live manifest's is
	// carried); "" publishes legacy manifests.
	inc string
}

func newRawPublisher(t testing.TB, conn *zk.Conn, root string) *rawPublisher {
	return &rawPublisher{t: t, conn: conn, p: layout.New(root, layout.DefaultMeta)}
}

var acl = zk.WorldACL(zk.PermAll)

// current returns the live manifest (nil if never published) and the
// root's data version, creating the root when it is missing.
func (rp *rawPublisher) current() (*manifest.Manifest, int32, error) {
	for {
		data, stat, err := rp.conn.Get(rp.p.Root)
		if errors.Is(err, zk.ErrNoNode) {
			if err := zkclient.EnsurePath(context.Background(), rp.conn, rp.p.Root, acl); err != nil {
				return nil, 0, err
			}
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		m, err := manifest.Decode(data)
		if errors.Is(err, manifest.ErrEmpty) {
			return nil, stat.Version, nil
		}
		return m, stat.Version, err
	}
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func nextManifest(old *manifest.Manifest, items map[string][]byte, mode manifest.Mode) *manifest.Manifest {
	m := &manifest.Manifest{Format: manifest.FormatVersion, Generation: 1, PublishID: newID(),
		PublishedAt: time.Now().UTC(), Publisher: "test@host", Mode: mode, Items: map[string]manifest.Item{}}
	if old != nil {
		m.Generation = old.Generation + 1
		m.Incarnation = old.Incarnation
	}
	for name, data := range items {
		m.Items[name] = manifest.ItemOf(data)
	}
	return m
}

// itemOps returns the writes that turn old's items into items.
func (rp *rawPublisher) itemOps(old *manifest.Manifest, items map[string][]byte) []any {
	var ops []any
	for _, name := range slices.Sorted(maps.Keys(items)) {
		data := items[name]
		if old != nil {
			if it, ok := old.Items[name]; ok {
				if it != manifest.ItemOf(data) {
					ops = append(ops, &zk.SetDataRequest{Path: rp.p.Item(name), Data: data, Version: -1})
				}
				continue
			}
		}
		ops = append(ops, &zk.CreateRequest{Path: rp.p.Item(name), Data: data, Acl: acl})
	}
	if old != nil {
		for name := range old.Items {
			if _, ok := items[name]; !ok {
				ops = append(ops, &zk.DeleteRequest{Path: rp.p.Item(name), Version: -1})
			}
		}
	}
	return ops
}

// publish commits items in one multi and returns the generation and the
// commit zxid.
func (rp *rawPublisher) publish(items map[string][]byte) (int64, int64) {
	rp.t.Helper()
	gen, zxid, err := rp.tryPublish(items)
	if err != nil {
		rp.t.Fatalf("publish: %v", err)
	}
	return gen, zxid
}

func (rp *rawPublisher) tryPublish(items map[string][]byte) (int64, int64, error) {
	old, ver, err := rp.current()
	if err != nil {
		return 0, 0, err
	}
	m := nextManifest(old, items, manifest.ModeMulti)
	if m.Incarnation == "" {
		m.Incarnation = rp.inc
	}
	ops := append([]any{&zk.SetDataRequest{Path: rp.p.Root, Data: m.Encode(), Version: ver}}, rp.itemOps(old, items)...)
	if old != nil && old.Canary != nil {
		// The end of a canary rollout: a generation above the candidate.
		m.Generation = old.Canary.Generation + 1
		ops[0] = &zk.SetDataRequest{Path: rp.p.Root, Data: m.Encode(), Version: ver}
		ops = append(ops, rp.endCanaryOps()...)
	}
	res, err := rp.conn.Multi(ops...)
	if err != nil {
		return 0, 0, fmt.Errorf("multi: %w", err)
	}
	return m.Generation, res[0].Stat.Mzxid, nil
}

// markerPublish is a marker-mode publish in progress.
type markerPublish struct {
	rp    *rawPublisher
	old   *manifest.Manifest
	ver   int32
	m     *manifest.Manifest
	ops   []any
	done  int
	items map[string][]byte
}

// beginMarker creates the publish's ephemeral liveness node, then the
// marker (atomically with a check of the root's version), in the protocol's
// order, and returns the publish, with no item written yet.
func (rp *rawPublisher) beginMarker(items map[string][]byte) *markerPublish {
	rp.t.Helper()
	old, ver, err := rp.current()
	if err != nil {
		rp.t.Fatalf("marker publish: %v", err)
	}
	mk, _ := json.Marshal(map[string]any{"publish_id": "test", "publisher": "test@host", "started_at": time.Now().UTC(), "base_generation": old.Generation})
	if err := zkclient.EnsurePath(context.Background(), rp.conn, rp.p.Publishing(), acl); err != nil {
		rp.t.Fatalf("liveness parent: %v", err)
	}
	if _, err := rp.conn.Create(rp.p.PublishingNode("test"), mk, zk.FlagEphemeral, acl); err != nil {
		rp.t.Fatalf("create liveness node: %v", err)
	}
	if _, err := rp.conn.Multi(&zk.CheckVersionRequest{Path: rp.p.Root, Version: ver},
		&zk.CreateRequest{Path: rp.p.Marker(), Data: mk, Acl: acl}); err != nil {
		rp.t.Fatalf("create marker: %v", err)
	}
	return &markerPublish{rp: rp, old: old, ver: ver, m: nextManifest(old, items, manifest.ModeMarker),
		ops: rp.itemOps(old, items), items: items}
}

// step writes the next n item changes one by one.
func (mp *markerPublish) step(n int) {
	mp.rp.t.Helper()
	for ; n > 0 && mp.done < len(mp.ops); n-- {
		if _, err := mp.rp.conn.Multi(mp.ops[mp.done]); err != nil {
			mp.rp.t.Fatalf("marker publish item write: %v", err)
		}
		mp.done++
	}
}

// commit writes the remaining items, then sets the manifest and deletes the
// marker in one multi.
func (mp *markerPublish) commit() int64 {
	mp.rp.t.Helper()
	mp.step(len(mp.ops))
	if _, err := mp.rp.conn.Multi(&zk.SetDataRequest{Path: mp.rp.p.Root, Data: mp.m.Encode(), Version: mp.ver},
		&zk.DeleteRequest{Path: mp.rp.p.Marker(), Version: -1}); err != nil {
		mp.rp.t.Fatalf("marker publish commit: %v", err)
	}
	if err := mp.rp.conn.Delete(mp.rp.p.PublishingNode("test"), -1); err != nil {
		mp.rp.t.Fatalf("delete liveness node: %v", err)
	}
	return mp.m.Generation
}

// set builds an item set: names n0..n{count-1} with content tagged by tag.
func set(count int, tag string) map[string][]byte {
	m := make(map[string][]byte, count)
	for i := range count {
		m[fmt.Sprintf("item%02d", i)] = fmt.Appendf(nil, "%s/item%02d", tag, i)
	}
	return m
}

func withItem(m map[string][]byte, name, v string) map[string][]byte {
	c := maps.Clone(m)
	if v == "" {
		delete(c, name)
	} else {
		c[name] = []byte(v)
	}
	return c
}

// fileMode returns path's permission bits.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

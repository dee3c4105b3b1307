package cache

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestLoadChangeAddRemove: initial load, then a change, an addition and a
// removal, each reflected with the right generation; Updates holds the
// newest snapshot; the state is Live.
func TestLoadChangeAddRemove(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/app/config")
	log, _ := testLogger(t)

	v1 := set(3, "v1")
	g1, z1 := pub.publish(v1)
	c := newCache(t, "/app/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))

	s := waitGen(t, c, g1, v1)
	if s.Zxid() != z1 || s.PublishID() == "" || s.PublishedAt().IsZero() || s.FromStateFile() {
		t.Fatalf("snapshot metadata: zxid %x (want %x), id %q, at %v, persisted %v", s.Zxid(), z1, s.PublishID(), s.PublishedAt(), s.FromStateFile())
	}
	waitState(t, c, "live", isLive)

	v2 := withItem(v1, "item01", "changed")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)

	v3 := withItem(v2, "new", "added")
	g3, _ := pub.publish(v3)
	waitGen(t, c, g3, v3)

	v4 := withItem(v3, "item00", "")
	g4, z4 := pub.publish(v4)
	s4 := waitGen(t, c, g4, v4)
	if s4.Zxid() != z4 || g4 != 4 {
		t.Fatalf("generation %d zxid %x, want 4 and %x", g4, s4.Zxid(), z4)
	}
	// Wait took what it returned off Updates.
	select {
	case u := <-c.Updates():
		t.Fatalf("Updates delivered generation %d, which Wait returned", u.Generation())
	default:
	}
	// Updates holds the newest value only.
	pub.publish(withItem(v4, "new", "again"))
	g6, _ := pub.publish(withItem(v4, "new", "and again"))
	st := waitState(t, c, "live at g6", func(st StateInfo) bool { return isLive(st) && st.Generation == g6 })
	select {
	case u := <-c.Updates():
		if u.Generation() != g6 {
			t.Fatalf("Updates gave generation %d, want the newest %d", u.Generation(), g6)
		}
	default:
		t.Fatal("Updates is empty after an update")
	}
	if st.Err != nil || st.Expiries != 0 {
		t.Fatalf("state %+v", st)
	}
	// An unchanged item's bytes are shared with the previous snapshot, not
	// re-read.
	a, _ := s.Get("item02")
	b, _ := s4.Get("item02")
	if &a[0] != &b[0] {
		t.Error("unchanged item was copied or re-read")
	}
	if m := s4.Manifest(); m.Generation != g4 || len(m.Items) != 3 {
		t.Fatalf("manifest %+v", m)
	}
}

// TestRequestsPerPublish counts what one publish costs a cache: one root
// read plus one request for the changed items (a Get for one, a multiRead
// for several small ones: each item still counts as read); adding or removing items costs one
// marker check more (the root's children changed).
func TestRequestsPerPublish(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	items := set(20, "v1")
	pub.publish(items)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	waitGen(t, c, 1, items)

	for _, tc := range []struct {
		name     string
		change   func(map[string][]byte) map[string][]byte
		items    uint64
		itemReqs uint64 // small items: one Get for one, one multiRead for several
		markers  uint64
	}{
		{"one changed", func(m map[string][]byte) map[string][]byte { return withItem(m, "item03", "x") }, 1, 1, 0},
		{"three changed", func(m map[string][]byte) map[string][]byte {
			return withItem(withItem(withItem(m, "item03", "y"), "item07", "y"), "item11", "y")
		}, 3, 1, 0},
		{"all changed", func(map[string][]byte) map[string][]byte { return set(20, "v9") }, 20, 1, 0},
		{"one added", func(m map[string][]byte) map[string][]byte { return withItem(m, "extra", "e") }, 1, 1, 1},
		{"one removed", func(m map[string][]byte) map[string][]byte { return withItem(m, "extra", "") }, 0, 0, 1},
	} {
		before := c.Stats()
		items = tc.change(items)
		gen, _ := pub.publish(items)
		waitGen(t, c, gen, items)
		after := c.Stats()
		root, fetched, markers, reqs := after.RootReads-before.RootReads, after.ItemsFetched-before.ItemsFetched,
			after.MarkerChecks-before.MarkerChecks, after.Requests-before.Requests
		t.Logf("%s: requests %d (root reads %d, items %d, marker checks %d)", tc.name, reqs, root, fetched, markers)
		if got := after.ItemRequests - before.ItemRequests; got != tc.itemReqs {
			t.Errorf("%s: %d item requests, want %d", tc.name, got, tc.itemReqs)
		}
		if root != 1 || fetched != tc.items || markers != tc.markers || reqs != 1+tc.itemReqs+tc.markers {
			t.Errorf("%s: requests %d (root reads %d, items %d, marker checks %d); want root 1, items %d in %d requests, markers %d",
				tc.name, reqs, root, fetched, markers, tc.items, tc.itemReqs, tc.markers)
		}
	}
}

// TestRootMissingEmptyForeign: a root that does not exist yet, then exists
// empty, then holds a foreign manifest, then a newer format: the cache
// reports each honestly, keeps the snapshot it holds, and follows once a
// real publish lands.
func TestRootMissingEmptyForeign(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 4*time.Second)
	log, buf := testLogger(t)
	c := newCache(t, "/later", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	waitState(t, c, "root missing", func(st StateInfo) bool {
		return st.State == StateStarting && errors.Is(st.Err, ErrRootMissing)
	})
	if _, err := conn.Create("/later", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "not published", func(st StateInfo) bool { return errors.Is(st.Err, ErrNotPublished) })

	pub := newRawPublisher(t, conn, "/later")
	v1 := set(2, "a")
	g1, _ := pub.publish(v1)
	waitGen(t, c, g1, v1)
	waitState(t, c, "live", isLive)

	if _, err := conn.Set("/later", []byte(`{"hello":"world"}`), -1); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "foreign", func(st StateInfo) bool { return errors.Is(st.Err, manifest.ErrForeign) })
	if st.State != StateStale || c.Snapshot().Generation() != g1 {
		t.Fatalf("state %v, generation %d; want stale, %d kept", st.State, c.Snapshot().Generation(), g1)
	}
	if _, err := conn.Set("/later", []byte(`{"format":99}`), -1); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "future format", func(st StateInfo) bool { return errors.Is(st.Err, manifest.ErrFutureFormat) })

	// Deleting the root keeps the snapshot too.
	for _, p := range []string{"/later/item00", "/later/item01", "/later"} {
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, c, "root deleted", func(st StateInfo) bool { return st.State == StateStale && errors.Is(st.Err, ErrRootMissing) })
	if c.Snapshot().Generation() != g1 {
		t.Fatal("snapshot dropped")
	}
	if !strings.Contains(buf.String(), "does not hold a manifest this zkconf can read") {
		t.Error("foreign manifest not logged")
	}
}

// TestFixedClientAndClose: a cache on the application's connection never
// closes it, and Close leaves no goroutine behind (goleak in TestMain).
func TestFixedClientAndClose(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pub := newRawPublisher(t, conn, "/config")
	v1 := set(5, "x")
	pub.publish(v1)
	log, _ := testLogger(t)
	c, err := New(testCtx(t), "/config", WithClient(zkclient.Fixed(conn, sess)), WithLogger(log), WithFetchConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	waitGen(t, c, 1, v1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(testCtx(t), 2); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, _, err := conn.Get("/config"); err != nil {
		t.Fatalf("the application's connection is unusable after Close: %v", err)
	}
	_ = c.Close() // idempotent
}

func TestNewValidates(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		root string
		opts []Option
	}{
		{"relative root", "config", []Option{WithServers([]string{"127.0.0.1:1"}, time.Second)}},
		{"no servers", "/config", nil},
		{"two sources", "/config", []Option{WithServers([]string{"127.0.0.1:1"}, time.Second), WithServers([]string{"127.0.0.1:2"}, time.Second)}},
		{"bad server", "/config", []Option{WithServers([]string{"nohostport"}, time.Second)}},
		{"nil conn", "/config", []Option{WithClient(zkclient.Fixed(nil, nil))}},
		{"bad concurrency", "/config", []Option{WithServers([]string{"127.0.0.1:1"}, time.Second), WithFetchConcurrency(0)}},
	} {
		if c, err := New(ctx, tc.root, tc.opts...); err == nil {
			c.Close()
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}

// TestPeriodicResync: the safety-net resync re-reads the root on its
// period even when nothing fired, costs one root read when nothing changed,
// and keeps the cache Live.
func TestPeriodicResync(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	v1 := set(3, "v1")
	pub.publish(v1)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithResyncInterval(200*time.Millisecond))
	waitGen(t, c, 1, v1)
	waitState(t, c, "live", isLive)
	before := c.Stats()
	// Stats have no change notification: poll them (bounded), the resync
	// itself is driven by the cache's own timer.
	ctx := testCtx(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for c.Stats().Resyncs < before.Resyncs+3 {
		select {
		case <-ctx.Done():
			t.Fatalf("no periodic resync: %+v", c.Stats())
		case <-tick.C:
		}
	}
	after := c.Stats()
	if after.ItemsFetched != before.ItemsFetched || after.RootReads < before.RootReads+2 {
		t.Fatalf("resyncs of an unchanged root: before %+v after %+v", before, after)
	}
	if st := c.State(); st.State != StateLive {
		t.Fatalf("state %v after resyncs", st.State)
	}
}

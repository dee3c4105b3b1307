package cache

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
)

// TestMarkerPublishNeverPartial: a marker-mode publish is stopped halfway
// (marker set, some items overwritten, manifest not yet switched).
//   - A cache that follows the root keeps serving the committed generation,
//     also through a forced resync, and never hands out a partial set (every
//     snapshot it applied is checked).
//   - A cache started during the publish waits (Starting,
//     ErrPublishInProgress, no snapshot) and then gets the complete new set.
func TestMarkerPublishNeverPartial(t *testing.T) {
	zkc := zktest.Start(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)

	published := map[int64]map[string][]byte{}
	v1 := set(10, "v1")
	g1, _ := pub.publish(v1)
	published[g1] = v1

	var mu sync.Mutex
	var seen []*Snapshot
	record := WithOnUpdate(func(s *Snapshot) { mu.Lock(); seen = append(seen, s); mu.Unlock() })
	proxy := faultproxy.Start(t, zkc.Addrs()[0])
	follower := newCache(t, "/config", WithServers([]string{proxy.Addr()}, 4*time.Second), WithLogger(log.With("cache", "follower")), record)
	waitGen(t, follower, g1, v1)
	waitState(t, follower, "live", isLive)

	// v2 changes six items, removes one and adds one.
	v2 := set(10, "v2")
	for _, n := range []string{"item00", "item01", "item02"} {
		v2[n] = v1[n]
	}
	delete(v2, "item09")
	v2["added"] = []byte("added in v2")

	mp := pub.beginMarker(v2)
	mp.step(4) // half the item writes

	// Force the follower to read the root again while the publish is half
	// done: a reconnect (proxy cut) makes it resync. It holds the committed
	// generation, so it stays Live with it.
	before := follower.Stats()
	proxy.Cut()
	waitState(t, follower, "live after the resync", func(st StateInfo) bool {
		s := follower.Stats()
		return isLive(st) && s.Resyncs > before.Resyncs && s.RootReads > before.RootReads
	})
	if s := follower.Snapshot(); s.Generation() != g1 {
		t.Fatalf("follower moved to generation %d during the marker publish", s.Generation())
	}

	// A cache started now waits for the publish to finish.
	late := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", "late")))
	st := waitState(t, late, "waiting for the marker", func(st StateInfo) bool { return errors.Is(st.Err, ErrPublishInProgress) })
	if st.State != StateStarting || late.Snapshot() != nil {
		t.Fatalf("late cache: state %v, snapshot %v", st.State, late.Snapshot())
	}

	mp.step(2)
	g2 := mp.commit()
	published[g2] = v2
	waitGen(t, late, g2, v2)
	waitGen(t, follower, g2, v2)
	waitState(t, late, "late live", isLive)
	if late.Stats().MarkerWaits < 1 {
		t.Fatal("late cache did not count a marker wait")
	}

	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if err := sameItems(s, published[s.Generation()]); err != nil {
			t.Fatalf("follower handed out a partial set at generation %d: %v", s.Generation(), err)
		}
	}
}

// TestMarkerBehindWaits: a cache that holds an older generation than the
// committed one when a marker publish starts (it cannot read the committed
// generation any more: items are being overwritten) keeps its snapshot,
// reports ErrPublishInProgress, and catches up when the marker goes.
func TestMarkerBehindWaits(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	dir := t.TempDir()
	state := dir + "/state.json"

	v1 := set(4, "v1")
	pub.publish(v1)
	c1 := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	waitGen(t, c1, 1, v1)
	c1.Close()

	v2 := set(4, "v2")
	g2, _ := pub.publish(v2)
	v3 := set(4, "v3")
	mp := pub.beginMarker(v3)
	mp.step(2)

	// Restarted from generation 1, the cache finds generation 2 committed
	// but half overwritten: it waits with its generation-1 snapshot.
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	st := waitState(t, c, "waiting for the marker", func(st StateInfo) bool { return errors.Is(st.Err, ErrPublishInProgress) })
	if st.State != StateStale || c.Snapshot().Generation() != 1 {
		t.Fatalf("state %v, generation %d", st.State, c.Snapshot().Generation())
	}
	g3 := mp.commit()
	if g3 != g2+1 {
		t.Fatalf("generation %d", g3)
	}
	waitGen(t, c, g3, v3)
	waitState(t, c, "live", isLive)
}

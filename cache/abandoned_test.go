package cache

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// TestAbandonedMarker: a marker without a live publisher never blocks a
// cache for good.
//   - A marker made by hand over a consistent root: the cache verifies every
//     item against the manifest and serves that generation.
//   - A marker-mode publish whose publisher dies halfway: the cache waits
//     while the publisher lives, notices its liveness node go (a watch, no
//     other event), and reports an abandoned marker naming the item that
//     does not verify, keeping its snapshot; the next publish takes the
//     marker over, says so, and the cache gets that generation.
//   - A hand-made marker over tampered items: reported the same way (not
//     written by confpush), and taken over by the next publish too (the old
//     code refused it as a live publish).
func TestAbandonedMarker(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, logs := testLogger(t)
	raw := zkc.Connect(t, 4*time.Second)

	v1 := set(4, "v1")
	g1, _ := pub.publish(v1)

	// A hand-made marker over a consistent root.
	if _, err := raw.Create(pub.p.Marker(), []byte("made by hand"), 0, acl); err != nil {
		t.Fatal(err)
	}
	a := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", "a")))
	waitGen(t, a, g1, v1)
	waitState(t, a, "live", isLive)
	if !strings.Contains(logs.String(), "abandoned marker") {
		t.Errorf("serving past an abandoned marker was not logged:\n%s", logs)
	}
	if err := raw.Delete(pub.p.Marker(), -1); err != nil {
		t.Fatal(err)
	}

	// A marker-mode publisher that dies halfway.
	v2 := set(4, "v2")
	g2, _ := pub.publish(v2)
	// The raw publisher keeps no history; store the live contents as
	// blobs, as a real publisher would have, so that the real publisher
	// below can take over.
	if err := zkclient.EnsurePath(context.Background(), raw, pub.p.Blobs(), acl); err != nil {
		t.Fatal(err)
	}
	for _, data := range v2 {
		if _, err := raw.Create(pub.p.Blob(manifest.Hash(data)), data, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	dying := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	mp := dying.beginMarker(set(4, "v3"))
	mp.step(2)
	b := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", "b")))
	waitState(t, b, "waiting for the live publish", func(st StateInfo) bool { return errors.Is(st.Err, ErrPublishInProgress) })
	dying.conn.Close() // its liveness node goes with the session
	st := waitState(t, b, "abandoned marker reported", func(st StateInfo) bool { return errors.Is(st.Err, ErrAbandonedMarker) })
	var ame *AbandonedMarkerError
	if !errors.As(st.Err, &ame) || ame.Generation != g2 || ame.PublishID != "test" || !strings.HasPrefix(ame.Item, "item0") {
		t.Fatalf("abandoned marker error: %#v", st.Err)
	}
	if st.State != StateStarting || b.Snapshot() != nil {
		t.Fatalf("state %v with snapshot %v: a torn set was served", st.State, b.Snapshot())
	}
	for _, w := range []string{"abandoned marker /config/invalid", "next confpush publish takes the marker over", ame.Item} {
		if !strings.Contains(st.Err.Error(), w) {
			t.Errorf("error %q does not say %q", st.Err, w)
		}
	}

	p := newPublisher(t, zkc)
	v4 := set(4, "v4")
	res, err := p.Publish(testCtx(t), publish.Request{Items: v4})
	if err != nil {
		t.Fatalf("publish over the abandoned marker: %v", err)
	}
	if !strings.Contains(res.TookOver, "took over an abandoned marker") || !strings.Contains(res.TookOver, "test@host") {
		t.Errorf("the publish does not say it took the marker over: %q", res.TookOver)
	}
	waitGen(t, b, res.Generation, v4)

	// A hand-made marker over a tampered item.
	if _, err := raw.Set(pub.p.Item("item02"), []byte("edited by hand"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(pub.p.Marker(), []byte("{}"), 0, acl); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", "c")))
	st = waitState(t, c, "foreign abandoned marker reported", func(st StateInfo) bool { return errors.Is(st.Err, ErrAbandonedMarker) })
	if !errors.As(st.Err, &ame) || !ame.Foreign || ame.Item != "item02" || !strings.Contains(st.Err.Error(), "not written by confpush") {
		t.Fatalf("foreign abandoned marker error: %v", st.Err)
	}
	v5 := set(4, "v5")
	res, err = p.Publish(testCtx(t), publish.Request{Items: v5})
	if err != nil {
		t.Fatalf("publish over a hand-made marker: %v", err)
	}
	if !strings.Contains(res.TookOver, "not written by confpush") {
		t.Errorf("the publish does not say it took the hand-made marker over: %q", res.TookOver)
	}
	waitGen(t, c, res.Generation, v5)
	if ok, _, err := raw.Exists(pub.p.Marker()); err != nil || ok {
		t.Fatalf("marker still there after the publish (%v)", err)
	}
}

// newPublisher is a real confpush publisher on its own session.
func newPublisher(t *testing.T, zkc *zktest.Cluster) *publish.Publisher {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := publish.New(zkclient.Fixed(conn, sess), "/config")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHugeGeneration: a manifest claiming generation 2^63-1 wraps nothing
// on the reading side: the cache serves it, persists it and loads it back,
// and a real publisher refuses to go past it without writing.
func TestHugeGeneration(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	raw := zkc.Connect(t, 4*time.Second)
	log, _ := testLogger(t)
	state := t.TempDir() + "/state"
	v1 := set(2, "v1")
	pub.publish(v1)
	m, _, err := pub.current()
	if err != nil {
		t.Fatal(err)
	}
	m.Generation = math.MaxInt64
	if _, err := raw.Set("/config", m.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	waitGen(t, c, math.MaxInt64, v1)
	c.Close()
	again := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	if s := again.Snapshot(); s == nil || s.Generation() != math.MaxInt64 {
		t.Fatalf("persisted generation 2^63-1 not loaded back: %v", s)
	}
	waitState(t, again, "live", isLive)
	_, err = newPublisher(t, zkc).Publish(testCtx(t), publish.Request{Items: set(2, "v2")})
	if !errors.Is(err, publish.ErrGenerationExhausted) {
		t.Fatalf("publish past 2^63-1: %v", err)
	}
	if s := again.Snapshot(); s.Generation() != math.MaxInt64 {
		t.Fatalf("generation %d after the refused publish", s.Generation())
	}
}

package cache

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// TestWithRealPublisher follows publishes made by package publish, in multi
// and in marker mode, back to back, with several caches: every snapshot
// handed out is a published generation item for item, with the commit's
// zxid, and all caches converge to the last one.
func TestWithRealPublisher(t *testing.T) {
	const (
		caches = 5
		rounds = 40
		items  = 12
	)
	zkc := sharedZooKeeper.For(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	log, _ := testLogger(t)
	p, err := publish.New(zkclient.Fixed(conn, sess), "/real", publish.WithLogger(log.With("who", "publisher")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)

	type gen struct {
		items map[string][]byte
		zxid  int64
		id    string
	}
	var mu sync.Mutex
	published := map[int64]gen{}
	do := func(round int, mode manifest.Mode) int64 {
		v := make(map[string][]byte, items)
		for i := range items {
			// Some items change every round, some every other round.
			v[fmt.Sprintf("item%02d", i)] = fmt.Appendf(nil, "round %d item %d", round/(1+i%2), i)
		}
		res, err := p.Publish(ctx, publish.Request{Items: v, Mode: mode})
		if err != nil {
			t.Fatalf("publish round %d (%v): %v", round, mode, err)
		}
		mu.Lock()
		published[res.Generation] = gen{items: v, zxid: res.Zxid, id: res.PublishID}
		mu.Unlock()
		return res.Generation
	}
	do(0, manifest.ModeMulti)

	seen := make([][]*Snapshot, caches)
	cs := make([]*Cache, caches)
	for i := range cs {
		cs[i] = newCache(t, "/real", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", i)),
			WithOnUpdate(func(s *Snapshot) {
				mu.Lock()
				seen[i] = append(seen[i], s)
				mu.Unlock()
			}))
		waitGen(t, cs[i], 1, published[1].items)
	}

	var last int64
	for round := 1; round <= rounds; round++ {
		mode := manifest.ModeMulti
		if round%2 == 0 {
			mode = manifest.ModeMarker
		}
		last = do(round, mode)
	}
	for _, c := range cs {
		waitGen(t, c, last, published[last].items)
	}

	mu.Lock()
	defer mu.Unlock()
	var total, markerWaits, torn uint64
	for i, snaps := range seen {
		for _, s := range snaps {
			g, ok := published[s.Generation()]
			if !ok {
				t.Fatalf("cache %d: generation %d was not published", i, s.Generation())
			}
			if err := sameItems(s, g.items); err != nil {
				t.Fatalf("cache %d: torn generation %d: %v", i, s.Generation(), err)
			}
			if s.Zxid() != g.zxid || s.PublishID() != g.id {
				t.Fatalf("cache %d: generation %d zxid %x id %s; publisher said %x %s", i, s.Generation(), s.Zxid(), s.PublishID(), g.zxid, g.id)
			}
		}
		total += uint64(len(snaps))
		st := cs[i].Stats()
		markerWaits += st.MarkerWaits
		torn += st.TornRetries
	}
	t.Logf("%d publishes (half marker mode); %d snapshots handed out by %d caches; marker waits %d, torn reads retried %d",
		rounds+1, total, caches, markerWaits, torn)
}

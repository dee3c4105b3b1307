package cache

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestFetchReadsChangedItemsAtOnce: with the default options, the 20 items
// a publish changed are all read at once (one round trip, as confd's
// backends read theirs), not a few at a time. Every read waits at a barrier
// until all 20 have started: reads bounded below 20 in flight never get
// there, and the barrier gives up after 30 s.
func TestFetchReadsChangedItemsAtOnce(t *testing.T) {
	const n = 20
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/app/config")
	log, _ := testLogger(t)

	v1 := set(n, "v1")
	g1, _ := pub.publish(v1)
	c := newCache(t, "/app/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	waitGen(t, c, g1, v1)

	var (
		mu       sync.Mutex
		started  int // reads that reached the barrier
		inFlight int // reads waiting at it
		maxSeen  int // the most ever waiting at once
	)
	all := make(chan struct{})
	giveUp, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hook := func() {
		mu.Lock()
		started++
		inFlight++
		maxSeen = max(maxSeen, inFlight)
		if started == n && giveUp.Err() == nil {
			close(all) // all n in flight before the barrier gave up
		}
		mu.Unlock()
		select {
		case <-all:
		case <-giveUp.Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	c.beforeItemRead.Store(&hook)

	v2 := set(n, "v2")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)
	select {
	case <-all:
	default:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the %d changed items were never all in flight at once: at most %d were", n, maxSeen)
	}
	if st := c.Stats(); st.ItemsFetched != 2*n {
		t.Fatalf("items fetched %d, want %d (each item read once per generation)", st.ItemsFetched, 2*n)
	}
}

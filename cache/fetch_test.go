package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// TestFetchReadsChangedItemsAtOnce: with the default options, the 20 items
// a publish changed are all read at once (one round trip, as confd's
// backends read theirs), not a few at a time, when each is a read of its
// own (items too large to share a multiRead; here every item, by the
// test's batch bound of one byte). Every read waits at a barrier until all
// 20 have started: reads bounded below 20 in flight never get there, and
// the barrier gives up after 30 s.
func TestFetchReadsChangedItemsAtOnce(t *testing.T) {
	const n = 20
	pub, c := followedSet(t, n)
	c.batchBytes.Store(1)

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

// TestFetchReadsSmallItemsInOneRequest: the 20 small items a publish
// changed are read with one request (a multiRead), not 20 Gets: the read
// hook, which runs once before every item request, runs once, and each
// item is counted as read and handed out with its content.
func TestFetchReadsSmallItemsInOneRequest(t *testing.T) {
	const n = 20
	pub, c := followedSet(t, n)

	var reads atomic.Int64
	hook := func() { reads.Add(1) }
	c.beforeItemRead.Store(&hook)
	before := c.Stats()
	v2 := set(n, "v2")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)
	after := c.Stats()
	if r := reads.Load(); r != 1 {
		t.Errorf("the %d changed items took %d item requests, want 1", n, r)
	}
	if got := after.ItemsFetched - before.ItemsFetched; got != n {
		t.Errorf("items fetched %d, want %d", got, n)
	}
	if got := after.Requests - before.Requests; got != 2 {
		t.Errorf("requests %d for the publish, want 2 (the root, the items)", got)
	}
}

// TestFetchBatchVerifiesEachItem: an item of a multiRead that does not
// match the manifest (changed behind the publisher's back) or is missing
// makes the read torn, as a Get's would: the held generation is kept and
// the state names the item (the first in sort order of the torn ones);
// once the item is repaired the new generation is handed out whole.
func TestFetchBatchVerifiesEachItem(t *testing.T) {
	const n = 20
	pub, c := followedSet(t, n)
	conn := pub.conn

	for _, tc := range []struct {
		name    string
		missing bool
	}{{"changed", false}, {"missing", true}} {
		t.Run(tc.name, func(t *testing.T) {
			held := c.Snapshot()
			next := set(n, "next-"+tc.name)
			// Break item07 and item13 before each item request, until
			// the test repairs them.
			var mu sync.Mutex // held while breaking, and while repairing
			broken := true
			hook := func() {
				mu.Lock()
				defer mu.Unlock()
				if !broken {
					return
				}
				for _, name := range []string{"item13", "item07"} {
					var err error
					if tc.missing {
						err = conn.Delete(pub.p.Item(name), -1)
					} else {
						_, err = conn.Set(pub.p.Item(name), []byte("behind the back"), -1)
					}
					if err != nil && !errors.Is(err, zk.ErrNoNode) {
						t.Errorf("break %s: %v", name, err)
					}
				}
			}
			c.beforeItemRead.Store(&hook)
			gen, _ := pub.publish(next)
			st := waitState(t, c, "torn item named", func(st StateInfo) bool {
				var mm *manifest.ItemMismatchError
				return errors.As(st.Err, &mm) && mm.Generation == gen
			})
			var mm *manifest.ItemMismatchError
			errors.As(st.Err, &mm)
			if mm.Item != "item07" || mm.Missing != tc.missing {
				t.Errorf("torn item %q (missing %v), want item07 (missing %v)", mm.Item, mm.Missing, tc.missing)
			}
			if s := c.Snapshot(); s.Generation() != held.Generation() {
				t.Fatalf("generation %d handed out from a torn read; want %d kept", s.Generation(), held.Generation())
			}
			checkItems(t, c.Snapshot(), itemsOf(held))
			repair := func() error {
				mu.Lock()
				defer mu.Unlock()
				broken = false
				for _, name := range []string{"item07", "item13"} {
					var err error
					if tc.missing {
						_, err = conn.Create(pub.p.Item(name), next[name], 0, acl)
					} else {
						_, err = conn.Set(pub.p.Item(name), next[name], -1)
					}
					if err != nil {
						return err
					}
				}
				return nil
			}
			if err := repair(); err != nil {
				t.Fatal(err)
			}
			waitGen(t, c, gen, next)
		})
	}
}

// followedSet publishes n items under /app/config and returns the
// publisher and a cache that holds them.
func followedSet(t *testing.T, n int) (*rawPublisher, *Cache) {
	t.Helper()
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/app/config")
	log, _ := testLogger(t)
	v1 := set(n, "v1")
	g1, _ := pub.publish(v1)
	c := newCache(t, "/app/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	waitGen(t, c, g1, v1)
	return pub, c
}

// itemsOf returns s's items by name.
func itemsOf(s *Snapshot) map[string][]byte {
	m := make(map[string][]byte, s.Len())
	for _, name := range s.Names() {
		data, _ := s.Get(name)
		m[name] = data
	}
	return m
}

// TestBatches: consecutive items share a read up to the batch bound, an
// item larger than the bound is read alone, every position once and in
// order; without multiRead every item is a read of its own.
func TestBatches(t *testing.T) {
	// Each item counts its size, its name (2 bytes) and 128.
	sizes := []int64{100, 200, 300, 1000, 50, 50, 0, 89}
	names := make([]string, len(sizes))
	items := make([]entry, len(sizes))
	for i, n := range sizes {
		names[i] = fmt.Sprintf("n%d", i)
		items[i].meta = manifest.Item{Size: n}
	}
	todo := []int{0, 1, 2, 3, 4, 5, 6, 7}
	c := &Cache{}
	c.batchBytes.Store(1000)
	got := fmt.Sprint(c.batches(names, todo, items))
	if want := "[[0 1 2] [3] [4 5 6 7]]"; got != want {
		t.Errorf("batches %s, want %s", got, want)
	}
	if got := fmt.Sprint(c.batches(names, []int{3, 2}, items)); got != "[[3] [2]]" {
		t.Errorf("batches of a large item and another %s, want [[3] [2]]", got)
	}
	c.noMultiRead.Store(true)
	var flat []int
	for _, b := range c.batches(names, todo, items) {
		if len(b) != 1 {
			t.Fatalf("without multiRead a batch of %d items", len(b))
		}
		flat = append(flat, b...)
	}
	if !slices.Equal(flat, todo) {
		t.Errorf("without multiRead positions %v, want %v", flat, todo)
	}
}

// TestFetchWithoutMultiRead: once a server has answered a multiRead
// "unimplemented" (older than 3.6; noMultiRead), the changed items are read
// with a Get each and handed out verified.
func TestFetchWithoutMultiRead(t *testing.T) {
	const n = 20
	pub, c := followedSet(t, n)

	c.noMultiRead.Store(true)
	before := c.Stats()
	v2 := set(n, "v2")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)
	after := c.Stats()
	if got := after.ItemRequests - before.ItemRequests; got != n {
		t.Errorf("%d item requests without multiRead, want %d (a Get per item)", got, n)
	}
	if got := after.ItemsFetched - before.ItemsFetched; got != n {
		t.Errorf("items fetched %d, want %d", got, n)
	}
}

// TestFetchBatchNoAuth: an item of a multiRead the cache may not read
// fails that item alone with NoAuth (the server checks each read's ACL),
// which the cache reports as a permission problem, as it would a Get's;
// nothing of the generation is handed out.
func TestFetchBatchNoAuth(t *testing.T) {
	const n = 5
	pub, c := followedSet(t, n)
	if err := pub.conn.AddAuth("digest", []byte("pub:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.conn.SetACL(pub.p.Item("item03"), zk.DigestACL(zk.PermAll, "pub", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	held := c.Snapshot()
	gen, _ := pub.publish(set(n, "v2")) // five small items: one multiRead
	st := waitState(t, c, "no permission", func(st StateInfo) bool { return errors.Is(st.Err, zk.ErrNoAuth) })
	if st.State != StateStale {
		t.Errorf("state %v, want stale", st.State)
	}
	if s := c.Snapshot(); s.Generation() != held.Generation() || gen == held.Generation() {
		t.Fatalf("generation %d handed out; want %d kept", s.Generation(), held.Generation())
	}
}

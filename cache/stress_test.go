package cache

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// TestTornReadStress: a publisher (package publish, multi mode) commits
// 100 generations (ZKCONF_STRESS_GENERATIONS; make stress: 5,000) of a
// 20-item set back to back while 20 caches, each with
// its own session, follow; one of them reads every item only after the
// next publish has landed, so that its reads are torn, deterministically,
// whatever the machine's load. Every snapshot any cache hands out
// (recorded by OnUpdate, and what Updates delivers) must equal a published
// generation item for item, generations must never go back, and every
// cache must converge to the last generation.
func TestTornReadStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	zkc := sharedZooKeeper.For(t)
	log, _ := testLogger(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p, err := publish.New(zkclient.Fixed(conn, sess), "/stress", publish.WithLogger(log.With("who", "publisher")))
	if err != nil {
		t.Fatal(err)
	}
	n := stressGenerations(t, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(n)*250*time.Millisecond)
	defer cancel()
	runStress(t, zkc, log, "/stress", n, func(v map[string][]byte) int64 {
		t.Helper()
		res, err := p.Publish(ctx, publish.Request{Items: v, Mode: manifest.ModeMulti})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		return res.Generation
	})
}

// TestTornReadStressHighRate: the same with a bare publisher that commits
// only the root and the items in each multi (no history, no blob store), so
// that generations land about ten times faster than package publish does
// and most reads are torn: the retry path and its backoff are exercised
// hard, and caches must still converge.
func TestTornReadStressHighRate(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	zkc := sharedZooKeeper.For(t)
	log, _ := testLogger(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/fast")
	runStress(t, zkc, log, "/fast", stressGenerations(t, 300), func(v map[string][]byte) int64 {
		t.Helper()
		g, _ := pub.publish(v)
		return g
	})
}

// stressGenerations is how many generations a stress test publishes: def
// in make test, ZKCONF_STRESS_GENERATIONS when set (make stress).
func stressGenerations(t *testing.T, def int64) int64 {
	v := os.Getenv("ZKCONF_STRESS_GENERATIONS")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("ZKCONF_STRESS_GENERATIONS=%q is not a positive number", v)
	}
	return n
}

func runStress(t *testing.T, zkc *zktest.Cluster, log *slog.Logger, root string, generations int64, publishFn func(map[string][]byte) int64) {
	const (
		items  = 20
		caches = 20
	)
	// Generation g changes every item when g%3 == 0 and three items (in
	// rotation) otherwise: wholesale changes make every mix of two
	// generations detectable, small ones let caches complete reads often.
	// Sizes vary with the generation, so a mix would also fail the size
	// check, not only the hash.
	next := func(prev map[string][]byte, gen int64) map[string][]byte {
		m := make(map[string][]byte, items)
		for i := range items {
			name := fmt.Sprintf("item%02d", i)
			if prev == nil || gen%3 == 0 || (i+int(gen))%7 == 0 {
				m[name] = fmt.Appendf(nil, "generation %d item %d %0*d", gen, i, int(gen%7)*8, gen)
			} else {
				m[name] = prev[name]
			}
		}
		return m
	}

	var pmu sync.Mutex
	published := map[int64]map[string][]byte{}
	publishIDs := map[int64]string{}
	record := func(gen int64, m map[string][]byte) {
		pmu.Lock()
		published[gen] = m
		pmu.Unlock()
	}
	v := next(nil, 1)
	g := publishFn(v)
	record(g, v)
	landed := newPublishSignal()
	defer landed.finish() // never leave the laggard waiting, even on t.Fatal

	type seen struct {
		mu    sync.Mutex
		snaps []*Snapshot
	}
	recs := make([]*seen, caches)
	cs := make([]*Cache, caches)
	for i := range cs {
		r := &seen{}
		recs[i] = r
		cs[i] = newCache(t, root, WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log.With("cache", i)),
			WithOnUpdate(func(s *Snapshot) {
				r.mu.Lock()
				r.snaps = append(r.snaps, s)
				r.mu.Unlock()
			}))
	}
	for _, c := range cs {
		waitGen(t, c, 1, v)
	}
	// Cache 0 is the laggard: the first item read after each publish it
	// has not yet waited out waits until a newer generation than the
	// root it read has landed, so the items it then reads are that
	// generation's wherever it changed them (every item, every third
	// generation): a torn read it must detect and retry, never hand out.
	laggard := landed.holdReads()
	cs[0].beforeItemRead.Store(&laggard)

	// Pollers read Snapshot() as an application would, while publishing.
	stop := make(chan struct{})
	var pollers sync.WaitGroup
	polled := make([][]*Snapshot, caches)
	for i, c := range cs {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			var last *Snapshot
			for {
				select {
				case <-stop:
					return
				case s := <-c.Updates():
					if s != last {
						polled[i] = append(polled[i], s)
						last = s
					}
				}
			}
		}()
	}

	start := time.Now()
	for gen := int64(2); gen <= generations; gen++ {
		v = next(v, gen)
		g := publishFn(v)
		if g != gen {
			t.Fatalf("published generation %d, want %d", g, gen)
		}
		record(g, v)
		landed.fire()
	}
	landed.finish()
	pubDur := time.Since(start)
	for _, c := range cs {
		waitGen(t, c, generations, v)
	}
	convDur := time.Since(start)
	close(stop)
	pollers.Wait()

	check := func(who string, snaps []*Snapshot) {
		var prev int64
		for _, s := range snaps {
			want, ok := published[s.Generation()]
			if !ok {
				t.Fatalf("%s: generation %d was never published", who, s.Generation())
			}
			if err := sameItems(s, want); err != nil {
				t.Fatalf("%s: torn snapshot of generation %d: %v", who, s.Generation(), err)
			}
			if id, ok := publishIDs[s.Generation()]; ok && id != s.PublishID() {
				t.Fatalf("%s: generation %d has publish id %s, another snapshot of it %s", who, s.Generation(), s.PublishID(), id)
			}
			publishIDs[s.Generation()] = s.PublishID()
			if s.Generation() < prev {
				t.Fatalf("%s: generation went back from %d to %d", who, prev, s.Generation())
			}
			prev = s.Generation()
		}
	}
	if lag := cs[0].Stats().TornRetries; lag == 0 {
		t.Errorf("the laggard cache never retried a torn read: the test did not exercise what it guards")
	}
	var total, torn, reqs, applied uint64
	distinct := map[int64]bool{}
	for i := range cs {
		recs[i].mu.Lock()
		snaps := recs[i].snaps
		recs[i].mu.Unlock()
		check(fmt.Sprintf("cache %d (OnUpdate)", i), snaps)
		check(fmt.Sprintf("cache %d (Updates)", i), polled[i])
		for _, s := range snaps {
			distinct[s.Generation()] = true
		}
		st := cs[i].Stats()
		total += uint64(len(snaps))
		torn += st.TornRetries
		reqs += st.Requests
		applied += st.Applied
	}
	t.Logf("%d generations x %d items published in %v (%.0f/s); all %d caches converged after %v",
		generations, items, pubDur.Round(time.Millisecond), float64(generations-1)/pubDur.Seconds(), caches, convDur.Round(time.Millisecond))
	t.Logf("snapshots applied %d (via OnUpdate %d, %d distinct generations), torn reads retried %d (by the laggard %d), requests %d (%.1f per applied snapshot)",
		applied, total, len(distinct), torn, cs[0].Stats().TornRetries, reqs, float64(reqs)/float64(applied))
}

// publishSignal tells a stress test's laggard cache that a publish landed.
type publishSignal struct {
	mu    sync.Mutex
	count int64         // publishes landed
	next  chan struct{} // closed when the next one lands, or at finish
	done  bool
}

func newPublishSignal() *publishSignal { return &publishSignal{next: make(chan struct{})} }

// fire reports a publish landed.
func (p *publishSignal) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.count++
	close(p.next)
	p.next = make(chan struct{})
}

// finish ends the publishing: no read waits any more.
func (p *publishSignal) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.done = true
		close(p.next)
	}
}

// holdReads returns the laggard's item-read hook: a read that comes after
// a publish the hook has not waited out yet waits until two more land
// (once per publish, so the cache still keeps up between its torn reads).
// Two, because the root the cache read may be the one whose publish has
// not returned yet: the second is newer than that root in any case.
func (p *publishSignal) holdReads() func() {
	var mu sync.Mutex // the fetch's readers call the hook concurrently
	waited := int64(-1)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.count == waited {
			return
		}
		for target := p.count + 2; !p.done && p.count < target; {
			next := p.next
			p.mu.Unlock()
			<-next
			p.mu.Lock()
		}
		waited = p.count
	}
}

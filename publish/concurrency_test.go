package publish

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/manifest"
	"github.com/zkconf/zkconf/internal/zktest"
)

// digest is a set as item name -> sha256, for item-for-item comparison.
type digest map[string]string

func digestOf(items map[string][]byte) digest {
	d := make(digest, len(items))
	for n, b := range items {
		d[n] = manifest.Hash(b)
	}
	return d
}

// TestTornReadChecker runs 1,000 publishes of a 20-item set, each changing
// a random subset (and now and then replacing an item by a new one), while
// two readers re-read the root: one agent-style (root, then every item,
// verified against the manifest, retried when torn), one through
// Publisher.Read. No reader may ever accept a set that differs, item for
// item, from what was published as that generation.
func TestTornReadChecker(t *testing.T) {
	t.Parallel()
	const publishes = 1000
	// What is tested is what readers see, not durability: skipping the
	// transaction log's fsync keeps the test fast on a busy disk.
	c := zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second, Config: map[string]string{"forceSync": "no"}})
	ctx := testCtx(t)
	pub := newPub(t, c, "/torn")
	readerConn, _ := dial(t, testSession, c.Addrs()...)
	libReader := mustNew(t, readerConn, nil, "/torn")

	var (
		mu        sync.Mutex
		published = map[int64]digest{}
	)
	rng := rand.New(rand.NewPCG(1, 2))
	set := map[string][]byte{}
	for i := range 20 {
		set[fmt.Sprintf("svc-%02d.yaml", i)] = content(100+rng.IntN(1900), fmt.Sprintf("init/%d", i))
	}
	res := mustPublish(t, pub, Request{Items: clone(set)})
	published[res.Generation] = digestOf(set)

	done := make(chan struct{})
	type readerStats struct {
		accepted map[int64]digest
		torn     int
		reads    int
		err      error
	}
	agent := &readerStats{accepted: map[int64]digest{}}
	lib := &readerStats{accepted: map[int64]digest{}}
	var wg sync.WaitGroup

	// The agent-style reader: exactly what a consumer that verifies does.
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			data, _, err := readerConn.Get("/torn")
			if err != nil {
				agent.err = err
				return
			}
			m, err := manifest.Decode(data)
			if err != nil {
				agent.err = err
				return
			}
			got := map[string][]byte{}
			torn := false
			for _, n := range m.Names() {
				b, _, err := readerConn.Get("/torn/" + n)
				if errors.Is(err, zk.ErrNoNode) || (err == nil && !m.Matches(n, b)) {
					torn = true
					break
				}
				if err != nil {
					agent.err = err
					return
				}
				got[n] = b
			}
			agent.reads++
			if torn {
				agent.torn++ // retried: never accepted
				continue
			}
			d := digestOf(got)
			if prev, ok := agent.accepted[m.Generation]; ok && !maps.Equal(prev, d) {
				agent.err = fmt.Errorf("generation %d accepted twice with different content", m.Generation)
				return
			}
			agent.accepted[m.Generation] = d
		}
	})
	// The library reader.
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			m, got, err := libReader.Read(ctx, 0)
			if err != nil {
				lib.err = err
				return
			}
			lib.reads++
			lib.accepted[m.Generation] = digestOf(got)
		}
	})

	start := time.Now()
	names := sortedNames(set)
	for i := range publishes - 1 {
		next := clone(set)
		for range 1 + rng.IntN(5) {
			n := names[rng.IntN(len(names))]
			next[n] = content(100+rng.IntN(1900), fmt.Sprintf("p%d/%s", i, n))
		}
		if rng.IntN(10) == 0 { // replace an item by a new one
			old := names[rng.IntN(len(names))]
			delete(next, old)
			next[fmt.Sprintf("new-%04d.yaml", i)] = content(200, fmt.Sprintf("new/%d", i))
		}
		res, err := pub.Publish(ctx, Request{Items: next})
		if err != nil {
			close(done)
			wg.Wait()
			t.Fatalf("publish %d: %v", i, err)
		}
		mu.Lock()
		published[res.Generation] = digestOf(next)
		mu.Unlock()
		set, names = next, sortedNames(next)
	}
	elapsed := time.Since(start)
	close(done)
	wg.Wait()

	for name, r := range map[string]*readerStats{"agent-style": agent, "Publisher.Read": lib} {
		if r.err != nil {
			t.Fatalf("%s reader: %v", name, r.err)
		}
		mismatches := 0
		for g, d := range r.accepted {
			want, ok := published[g]
			if !ok || !maps.Equal(want, d) {
				mismatches++
				t.Errorf("%s reader accepted generation %d with content that was not published as it", name, g)
			}
		}
		t.Logf("%s reader: %d verified reads, %d of them torn and retried (Publisher.Read retries inside), %d generations accepted, %d mismatches accepted",
			name, r.reads, r.torn, len(r.accepted), mismatches)
		if len(r.accepted) < 20 {
			t.Errorf("%s reader accepted only %d generations: it did not run alongside the publishes", name, len(r.accepted))
		}
	}
	if len(published) != publishes {
		t.Fatalf("%d generations published, want %d", len(published), publishes)
	}
	t.Logf("%d publishes in %v (%v each)", publishes, elapsed, elapsed/time.Duration(publishes))
	checkLive(t, pub, publishes, set)
	if h := historyList(t, pub.conn, pub.paths); len(h) != DefaultRetention || h[len(h)-1] != publishes {
		t.Fatalf("history %v: want the newest %d generations", h, DefaultRetention)
	}
}

// TestRacingPublishers starts 8 publishers, each on its own session, on a
// root that does not exist yet, each publishing its own content repeatedly.
// Every success must have a distinct generation, the generations must be
// 1..N without a gap, each generation must hold its winner's content, and
// every loser must get ErrConflict.
func TestRacingPublishers(t *testing.T) {
	const (
		publishers = 8
		attempts   = 12
	)
	c := startZK(t)
	ctx := testCtx(t)
	type win struct {
		gen    int64
		id     string
		digest digest
	}
	var (
		mu        sync.Mutex
		wins      []win
		conflicts atomic.Int64
		others    []error
	)
	pubs := make([]*Publisher, publishers)
	for i := range pubs {
		pubs[i] = newPub(t, c, "/race/root", WithRetention(1000), WithPublisherName(fmt.Sprintf("p%d@test", i)))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range pubs {
		wg.Go(func() {
			<-start
			for a := range attempts {
				set := items(5, 64, fmt.Sprintf("p%d-a%d", i, a))
				res, err := p.Publish(ctx, Request{Items: set})
				mu.Lock()
				switch {
				case err == nil:
					wins = append(wins, win{res.Generation, res.PublishID, digestOf(set)})
				case errors.Is(err, ErrConflict):
					var ce *ConflictError
					if !errors.As(err, &ce) || ce.Actual <= ce.Expected {
						others = append(others, fmt.Errorf("conflict without a newer winner: %v", err))
					}
					conflicts.Add(1)
				default:
					others = append(others, err)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range others {
		t.Errorf("publisher error other than ErrConflict: %v", err)
	}
	gens := make([]int64, 0, len(wins))
	for _, w := range wins {
		gens = append(gens, w.gen)
	}
	slices.Sort(gens)
	live, _, err := pubs[0].Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gens {
		if g != int64(i+1) {
			t.Fatalf("winning generations %v: want 1..%d, distinct and without gaps", gens, len(gens))
		}
	}
	if live.Generation != int64(len(gens)) {
		t.Fatalf("live generation %d, but %d publishes succeeded", live.Generation, len(gens))
	}
	if conflicts.Load() == 0 {
		t.Fatal("no publisher lost a race: the test did not race")
	}
	if int(conflicts.Load())+len(wins) != publishers*attempts {
		t.Fatalf("%d wins + %d conflicts != %d attempts", len(wins), conflicts.Load(), publishers*attempts)
	}
	// Every generation holds exactly its winner's content.
	for _, w := range wins {
		m, got, err := pubs[0].Read(ctx, w.gen)
		if err != nil {
			t.Fatalf("read generation %d: %v", w.gen, err)
		}
		if m.PublishID != w.id || !maps.Equal(digestOf(got), w.digest) {
			t.Fatalf("generation %d does not hold its winner's content", w.gen)
		}
	}
	t.Logf("%d publishers x %d attempts: %d generations, %d conflicts", publishers, attempts, len(wins), conflicts.Load())
}

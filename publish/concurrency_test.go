package publish

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
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
//
// That the readers really read across publishes is not left to the
// scheduler: every tenth publish is straddled by each reader in turn. The
// reader has read the root (the live generation's manifest) and holds its
// first item read until the publisher has committed the next generation,
// which changes at least one of the items that manifest names, so the read
// is torn by construction and must be seen as torn: the agent-style reader
// must count it torn, Publisher.Read must return a later generation than
// the one whose root it first read. Between straddles both readers run
// freely, as before, for the overlaps the scheduler happens to make.
func TestTornReadChecker(t *testing.T) {
	t.Parallel()
	const (
		publishes   = 1000
		straddleGap = 10 // a straddled publish per reader every straddleGap
	)
	// What is tested is what readers see, not durability: skipping the
	// transaction log's fsync keeps the test fast on a busy disk.
	c := zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second, Config: map[string]string{"forceSync": "no"}})
	// 1,000 publishes with the race detector on a loaded 2-core machine
	// take minutes: the context bounds a hang, not the speed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	pub := newPub(t, c, "/torn")
	readerConn, _ := dial(t, testSession, c.Addrs()...)
	gate := &itemReadGate{prefix: "/torn/"}
	libReader := mustNew(t, dialObserved(t, c.Addrs(), gate.sent), nil, "/torn")

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
	live := res.Generation

	done := make(chan struct{})
	type readerStats struct {
		accepted  map[int64]digest
		torn      int
		reads     int
		issued    int // straddles handed to the reader
		straddled int // reads held across a publish, each seen as torn
		err       error
		straddle  chan *straddle
		exited    chan struct{}
	}
	newStats := func() *readerStats {
		return &readerStats{accepted: map[int64]digest{}, straddle: make(chan *straddle), exited: make(chan struct{})}
	}
	agent, lib := newStats(), newStats()
	var wg sync.WaitGroup

	// The agent-style reader: exactly what a consumer that verifies does.
	wg.Go(func() {
		defer close(agent.exited)
		for {
			var st *straddle
			select {
			case <-done:
				return
			case st = <-agent.straddle:
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
			if st != nil && !st.hold(done) {
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
			if st != nil {
				if !torn {
					agent.err = fmt.Errorf("the root of generation %d read before a publish and its items after it were not seen as torn", m.Generation)
					return
				}
				agent.straddled++
			}
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
	// The library reader. Its connection's gate holds the first item read
	// of a straddled Read, after Read has read the root.
	wg.Go(func() {
		defer close(lib.exited)
		for {
			var st *straddle
			select {
			case <-done:
				return
			case st = <-lib.straddle:
				gate.arm(st, done)
			default:
			}
			m, got, err := libReader.Read(ctx, 0)
			if err != nil {
				lib.err = err
				return
			}
			lib.reads++
			if st != nil {
				if gate.armed() {
					lib.err = errors.New("a straddled Publisher.Read read no item")
					return
				}
				// Read first read the root of st.before; had it accepted
				// that generation, it would have accepted the next one's
				// items under it.
				if m.Generation <= st.before {
					lib.err = fmt.Errorf("Publisher.Read held across the publish after generation %d returned generation %d", st.before, m.Generation)
					return
				}
				lib.straddled++
			}
			lib.accepted[m.Generation] = digestOf(got)
		}
	})
	stop := func(format string, args ...any) {
		t.Helper()
		close(done)
		wg.Wait()
		for name, r := range map[string]*readerStats{"agent-style": agent, "Publisher.Read": lib} {
			if r.err != nil {
				t.Errorf("%s reader: %v", name, r.err)
			}
		}
		t.Fatalf(format, args...)
	}

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
		// Straddle this publish with one reader: hand it the straddle, and
		// publish once it holds the live root and no item yet.
		var r *readerStats
		switch i % straddleGap {
		case 3:
			r = agent
		case 8:
			r = lib
		}
		var st *straddle
		if r != nil {
			st = &straddle{before: live, ready: make(chan struct{}), done: make(chan struct{})}
			select {
			case r.straddle <- st:
			case <-r.exited:
				stop("publish %d: the straddling reader stopped", i)
			case <-ctx.Done():
				stop("publish %d: the reader did not take up the straddle: %v", i, ctx.Err())
			}
			select {
			case <-st.ready:
			case <-r.exited:
				stop("publish %d: the straddling reader stopped", i)
			case <-ctx.Done():
				stop("publish %d: the reader did not reach the straddle: %v", i, ctx.Err())
			}
			r.issued++
		}
		res, err := pub.Publish(ctx, Request{Items: next})
		if st != nil {
			close(st.done)
		}
		if err != nil {
			stop("publish %d: %v", i, err)
		}
		mu.Lock()
		published[res.Generation] = digestOf(next)
		mu.Unlock()
		set, names, live = next, sortedNames(next), res.Generation
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
		t.Logf("%s reader: %d verified reads, %d of them torn and retried (Publisher.Read retries inside), %d held across a publish, %d generations accepted, %d mismatches accepted",
			name, r.reads, r.torn, r.straddled, len(r.accepted), mismatches)
		if r.issued < publishes/straddleGap-1 || r.straddled != r.issued {
			t.Errorf("%s reader: %d of %d reads held across a publish seen as torn, want all of about %d", name, r.straddled, r.issued, publishes/straddleGap)
		}
	}
	if len(published) != publishes {
		t.Fatalf("%d generations published, want %d", len(published), publishes)
	}
	t.Logf("%d publishes in %v (%v each)", publishes, elapsed, elapsed/time.Duration(publishes))
	checkLive(t, pub, publishes, set)
	// The GC deletes in batches: the newest retention to retention + a
	// quarter of it generations, contiguous.
	h := historyList(t, pub.conn(), pub.paths)
	if len(h) < defaultRetention || len(h) > defaultRetention+defaultRetention/4 || h[len(h)-1] != publishes || h[len(h)-1]-h[0] != int64(len(h)-1) {
		t.Fatalf("history %v: want the newest %d to %d generations", h, defaultRetention, defaultRetention+defaultRetention/4)
	}
}

// straddle is one read forced across a publish: the reader, having read the
// root of generation before, signals ready and reads no item until done.
type straddle struct {
	before int64
	ready  chan struct{}
	done   chan struct{}
}

// hold signals that the reader holds the root and waits for the publish;
// false when the test is stopping.
func (s *straddle) hold(stop <-chan struct{}) bool {
	close(s.ready)
	select {
	case <-s.done:
		return true
	case <-stop:
		return false
	}
}

// itemReadGate holds, when armed, the first getData request for a path
// under prefix that a connection sends, until the armed straddle is done.
// Publisher.Read reads the root before any item, so the hold falls between
// its root read and its item reads, which no timing could guarantee.
type itemReadGate struct {
	prefix string
	mu     sync.Mutex
	st     *straddle
	stop   <-chan struct{}
}

func (g *itemReadGate) arm(st *straddle, stop <-chan struct{}) {
	g.mu.Lock()
	g.st, g.stop = st, stop
	g.mu.Unlock()
}

func (g *itemReadGate) armed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st != nil
}

// sent is called with every request frame before it is written.
func (g *itemReadGate) sent(frame []byte) {
	// A request frame: length, xid, opcode, then for getData the path as
	// length and bytes (the ZooKeeper wire protocol).
	const opGetData = 4
	if len(frame) < 16 || binary.BigEndian.Uint32(frame[8:12]) != opGetData {
		return
	}
	n := int(binary.BigEndian.Uint32(frame[12:16]))
	if n > len(frame)-16 || !strings.HasPrefix(string(frame[16:16+n]), g.prefix) {
		return
	}
	g.mu.Lock()
	st, stop := g.st, g.stop
	g.st = nil
	g.mu.Unlock()
	if st != nil {
		st.hold(stop)
	}
}

// observedConn shows each request frame the client writes to observe. The
// client writes one frame per Write; the first is the connect request,
// which has no opcode.
type observedConn struct {
	net.Conn
	observe   func(frame []byte)
	connected bool // the connect request is written
}

func (c *observedConn) Write(b []byte) (int, error) {
	if c.connected {
		c.observe(b)
	}
	c.connected = true
	return c.Conn.Write(b)
}

// dialObserved connects to addrs with every request frame (after the
// connect request) shown to observe before it is sent, and waits for the
// session. observe runs on the client's send loop: while it blocks, the
// client sends nothing, not even a ping, hence the servers' 30 s maximum
// as the session timeout.
func dialObserved(t testing.TB, addrs []string, observe func(frame []byte)) *zk.Conn {
	t.Helper()
	sess := zkclient.NewSession()
	conn, _, err := zk.Connect(addrs, 30*time.Second,
		zk.WithEventCallback(sess.Callback),
		zk.WithLogger(quiet{}),
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			nc, err := net.DialTimeout(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return &observedConn{Conn: nc, observe: observe}, nil
		}))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatalf("wait for session: %v", err)
	}
	return conn
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

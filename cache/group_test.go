package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// cutTimeout bounds the waits of the publish-loop test: a hang fails, a
// slow machine does not.
const cutTimeout = 4 * time.Minute

// pubRecord is one acknowledged publish: its commit zxid (the result's
// fencing token), its id and the content of its item "v".
type pubRecord struct {
	zxid    int64
	id      string
	content string
}

// publishLog is every acknowledged publish of each root: root name →
// generation → record.
type publishLog struct {
	mu    sync.Mutex
	roots map[string]map[int64]pubRecord
}

func newPublishLog(names ...string) *publishLog {
	l := &publishLog{roots: map[string]map[int64]pubRecord{}}
	for _, n := range names {
		l.roots[n] = map[int64]pubRecord{}
	}
	return l
}

func (l *publishLog) add(name string, gen int64, r pubRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roots[name][gen] = r
}

// interval is when generation gen of root name was live, as commit zxids:
// [its commit, the next generation's commit); the next one is +inf when
// it was never published.
func (l *publishLog) interval(name string, gen int64) (lo, hi int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.roots[name][gen]
	if !ok {
		return 0, 0, fmt.Errorf("root %s: generation %d was never published", name, gen)
	}
	hi = math.MaxInt64
	if next, ok := l.roots[name][gen+1]; ok {
		hi = next.zxid
	}
	return r.zxid, hi, nil
}

// cutRecord is what a reader saw of one root in a cut.
type cutRecord struct {
	gen, zxid   int64
	id, content string
}

// checkCut reports whether the generations of cut were all live at one
// moment: their intervals overlap (the latest commit precedes the earliest
// replacement). It also checks each snapshot against its publish.
func (l *publishLog) checkCut(cut map[string]cutRecord) error {
	var lo, hi int64 = math.MinInt64, math.MaxInt64
	for name, c := range cut {
		a, b, err := l.interval(name, c.gen)
		if err != nil {
			return err
		}
		l.mu.Lock()
		r := l.roots[name][c.gen]
		l.mu.Unlock()
		if c.zxid != r.zxid || c.id != r.id || c.content != r.content {
			return fmt.Errorf("root %s generation %d: zxid %x id %s content %q; the publisher committed %x %s %q",
				name, c.gen, c.zxid, c.id, c.content, r.zxid, r.id, r.content)
		}
		lo, hi = max(lo, a), min(hi, b)
	}
	if lo >= hi {
		return fmt.Errorf("not a cut: the generations %v were never live together (the latest commit 0x%x is not before the earliest replacement 0x%x)",
			describeCut(cut), lo, hi)
	}
	return nil
}

func describeCut(cut map[string]cutRecord) string {
	var parts []string
	for name, c := range cut {
		parts = append(parts, fmt.Sprintf("%s=%d", name, c.gen))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func recordCut(c Cut) map[string]cutRecord {
	r := make(map[string]cutRecord, len(c))
	for name, s := range c {
		v, _ := s.Get("v")
		r[name] = cutRecord{gen: s.Generation(), zxid: s.Zxid(), id: s.PublishID(), content: string(v)}
	}
	return r
}

// newGroup starts a group and closes it in t.Cleanup.
func newGroup(t *testing.T, roots map[string]string, opts ...Option) *Group {
	t.Helper()
	g, err := NewGroup(context.Background(), roots, opts...)
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// waitCut waits for a cut reaching min.
func waitCut(t *testing.T, g *Group, min map[string]int64) Cut {
	t.Helper()
	c, err := g.Wait(testCtx(t), min)
	if err != nil {
		t.Fatalf("Wait(%v): %v", min, err)
	}
	return c
}

// TestCutChecker: the check the publish-loop test applies can fail. Root a
// committed generation 1 at 10 and 2 at 20, root b 1 at 15 and 2 at 30:
// (a1, b2) were never live together, (a2, b1) were (from 20 to 30).
func TestCutChecker(t *testing.T) {
	l := newPublishLog("a", "b")
	for name, commits := range map[string][]int64{"a": {10, 20}, "b": {15, 30}} {
		for i, z := range commits {
			l.add(name, int64(i+1), pubRecord{zxid: z, id: "x", content: "c"})
		}
	}
	rec := func(gen, zxid int64) cutRecord { return cutRecord{gen: gen, zxid: zxid, id: "x", content: "c"} }
	if err := l.checkCut(map[string]cutRecord{"a": rec(1, 10), "b": rec(2, 30)}); err == nil {
		t.Fatal("(a1, b2) accepted: a1 was replaced at 20, before b2's commit at 30")
	}
	for _, ok := range []map[string]cutRecord{
		{"a": rec(2, 20), "b": rec(1, 15)},
		{"a": rec(1, 10), "b": rec(1, 15)},
		{"a": rec(2, 20), "b": rec(2, 30)},
	} {
		if err := l.checkCut(ok); err != nil {
			t.Fatalf("%v refused: %v", describeCut(ok), err)
		}
	}
	if err := l.checkCut(map[string]cutRecord{"a": rec(3, 40)}); err == nil {
		t.Fatal("an unpublished generation accepted")
	}
	if err := l.checkCut(map[string]cutRecord{"a": {gen: 2, zxid: 20, id: "x", content: "other"}}); err == nil {
		t.Fatal("a snapshot whose content is not its generation's accepted")
	}
}

// loopPublisher publishes to one root as fast as it can, alternating multi
// and marker mode, and logs every acknowledged publish.
func loopPublisher(t *testing.T, ctx context.Context, cl *zkclient.Client, name, root string, l *publishLog, stop <-chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	p, err := publish.New(cl, root)
	if err != nil {
		t.Fatal(err)
	}
	do := func(n int) error {
		mode := manifest.ModeMulti
		if n%3 == 2 {
			mode = manifest.ModeMarker
		}
		content := fmt.Sprintf("%s-%d", name, n)
		res, err := p.Publish(ctx, publish.Request{Mode: mode, Items: map[string][]byte{
			"v": []byte(content), "fixed": []byte("unchanged"), fmt.Sprintf("n%d", n%4): []byte(content)}})
		if err != nil {
			return fmt.Errorf("publish %s #%d: %w", name, n, err)
		}
		l.add(name, res.Generation, pubRecord{zxid: res.Zxid, id: res.PublishID, content: content})
		return nil
	}
	if err := do(0); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := do(n); err != nil {
				t.Error(err)
				return
			}
		}
	}()
}

// cutReader records every cut a group hands out, in order.
type cutReader struct {
	mu       sync.Mutex
	cuts     []map[string]cutRecord
	progress chan struct{} // 1 slot: a cut was recorded
}

func (r *cutReader) add(c map[string]cutRecord) {
	r.mu.Lock()
	r.cuts = append(r.cuts, c)
	r.mu.Unlock()
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

func (r *cutReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cuts)
}

// waitCuts waits until at least n cuts are recorded and cond holds.
func (r *cutReader) waitCuts(t *testing.T, ctx context.Context, n int, what string, cond func() bool) {
	t.Helper()
	for r.count() < n || !cond() {
		select {
		case <-r.progress:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %d cuts recorded, want %d", what, r.count(), n)
		}
	}
}

// TestGroupCutsUnderPublishLoop is the cut's proof against real ZooKeeper:
// two roots are published in a tight loop (multi and marker mode) while a
// group, on one session through a fault proxy, hands out cuts. Every cut
// must be a combination of generations that were live together, checked
// against the publish log's commit zxids; per root the generations never
// go back; cuts keep coming while both roots are being published (the
// cut does not starve), across a session expiry in the middle of the
// loop; and once the loop stops the last generations of both are handed
// out (never lost). Two plain caches combined naively (the latest of
// each, no confirm) are recorded beside it: their combinations are
// checked the same way and only counted, as they may be invalid.
func TestGroupCutsUnderPublishLoop(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := faultproxy.Start(t, zkc.Addrs()[0])
	log, _ := testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), cutTimeout)
	defer cancel()
	roots := map[string]string{"a": "/cut/a", "b": "/cut/b"}

	pubClient, err := zkclient.Dial(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pubClient.Close)
	l := newPublishLog("a", "b")
	stop := make(chan struct{})
	var pubs sync.WaitGroup
	stopPublishers := sync.OnceFunc(func() { close(stop); pubs.Wait() })
	t.Cleanup(stopPublishers)

	g, err := NewGroup(ctx, roots, WithServers([]string{proxy.Addr()}, 2*time.Second), WithLogger(log.With("who", "group")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })

	// The naive reader: two caches, the latest of each, no confirm.
	naiveClient, err := zkclient.Dial(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(naiveClient.Close)
	naiveA := newCache(t, roots["a"], WithClient(naiveClient), WithLogger(log.With("who", "naive-a")))
	naiveB := newCache(t, roots["b"], WithClient(naiveClient), WithLogger(log.With("who", "naive-b")))

	reader := &cutReader{progress: make(chan struct{}, 1)}
	var naive []map[string]cutRecord
	readers := make(chan struct{})
	var readersDone sync.WaitGroup
	readersDone.Add(2)
	go func() {
		defer readersDone.Done()
		for {
			select {
			case c := <-g.Updates():
				reader.add(recordCut(c))
			case <-readers:
				return
			}
		}
	}()
	go func() {
		defer readersDone.Done()
		var a, b *Snapshot
		for {
			select {
			case a = <-naiveA.Updates():
			case b = <-naiveB.Updates():
			case <-readers:
				return
			}
			if a != nil && b != nil {
				naive = append(naive, recordCut(Cut{"a": a, "b": b}))
			}
		}
	}()
	stopReaders := sync.OnceFunc(func() { close(readers); readersDone.Wait() })
	t.Cleanup(stopReaders)

	loopPublisher(t, ctx, pubClient, "a", roots["a"], l, stop, &pubs)
	loopPublisher(t, ctx, pubClient, "b", roots["b"], l, stop, &pubs)

	// Progress while both roots are published continuously.
	const perPhase = 30
	reader.waitCuts(t, ctx, perPhase, "cuts under the publish loop", func() bool { return true })

	// The group's session expires in the middle of the loop.
	probe := "/cut-probe"
	if _, err := g.client.Conn().Create(probe, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	ok, _, gone, err := zkc.Connect(t, 10*time.Second).ExistsW(probe)
	if err != nil || !ok {
		t.Fatalf("probe: %v %v", ok, err)
	}
	proxy.Blackhole(true)
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("the server did not expire the group's session")
	}
	proxy.Blackhole(false)
	before := reader.count()
	expired := func() bool {
		for _, st := range g.States() {
			if st.Expiries == 0 {
				return false
			}
		}
		return true
	}
	reader.waitCuts(t, ctx, before+perPhase, "cuts after the session expiry", expired)

	stopPublishers()
	if t.Failed() {
		return
	}
	l.mu.Lock()
	final := map[string]int64{}
	for name, gens := range l.roots {
		for gen := range gens {
			final[name] = max(final[name], gen)
		}
	}
	l.mu.Unlock()
	last, err := g.Wait(ctx, final)
	if err != nil {
		t.Fatalf("the last generations %v: %v", final, err)
	}
	if got := last.Generations(); got["a"] != final["a"] || got["b"] != final["b"] {
		t.Fatalf("last cut %v, want %v", got, final)
	}
	stopReaders()

	reader.mu.Lock()
	cuts := reader.cuts
	reader.mu.Unlock()
	prev := map[string]int64{}
	for i, c := range cuts {
		if err := l.checkCut(c); err != nil {
			t.Errorf("cut %d: %v", i, err)
		}
		for name, r := range c {
			if r.gen < prev[name] {
				t.Errorf("cut %d: root %s went back from generation %d to %d", i, name, prev[name], r.gen)
			}
			prev[name] = r.gen
		}
	}
	invalid := 0
	for _, c := range naive {
		if l.checkCut(c) != nil {
			invalid++
		}
	}
	st := g.Stats()
	t.Logf("publishes: a %d, b %d; cuts %d; naive combinations %d, of which %d never live together",
		final["a"], final["b"], len(cuts), len(naive), invalid)
	t.Logf("group: confirms %d, confirm reads %d, moved %d, syncs %d, errors %d; expiries a %d b %d",
		st.Confirms, st.ConfirmReads, st.Moved, st.Syncs, st.Errors, st.Roots["a"].Expiries, st.Roots["b"].Expiries)
}

// TestGroupCost: a group of one root confirms nothing; with two roots, a
// publish to one costs exactly one Exists of the other, and each root's
// cache pays what a lone cache pays.
func TestGroupCost(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 10*time.Second)
	pa, pb := newRawPublisher(t, conn, "/cost/a"), newRawPublisher(t, conn, "/cost/b")
	log, _ := testLogger(t)
	va := set(2, "a1")
	pa.publish(va)
	pb.publish(set(2, "b1"))

	one := newGroup(t, map[string]string{"a": "/cost/a"}, WithServers(zkc.Addrs(), 10*time.Second), WithLogger(log))
	two := newGroup(t, map[string]string{"a": "/cost/a", "b": "/cost/b"}, WithServers(zkc.Addrs(), 10*time.Second), WithLogger(log))
	waitCut(t, two, map[string]int64{"a": 1, "b": 1})
	start := two.Stats()
	const n = 10
	for i := range n {
		v := withItem(va, "item00", fmt.Sprintf("a%d", i+2)) // one item changes: a root read and an item read
		gen, _ := pa.publish(v)
		for _, g := range []*Group{one, two} {
			if err := sameItems(waitCut(t, g, map[string]int64{"a": gen})["a"], v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st := one.Stats(); st.Confirms != 0 || st.ConfirmReads != 0 {
		t.Fatalf("a group of one root confirmed: %+v", st)
	}
	end := two.Stats()
	confirms := end.Confirms - start.Confirms
	if end.Errors != 0 || end.Syncs > 1 {
		t.Logf("connection trouble (errors %d, syncs %d): not counting confirms", end.Errors, end.Syncs)
	} else if confirms != n || end.ConfirmReads != 0 {
		t.Fatalf("%d publishes to a cost %d confirms and %d confirm reads, want %d and 0", n, confirms, end.ConfirmReads, n)
	}
	ra, rb := end.Roots["a"].Requests-start.Roots["a"].Requests, end.Roots["b"].Requests-start.Roots["b"].Requests
	if float64(ra)/n != 2 || rb != 0 {
		t.Fatalf("per publish to a: root a's cache %.2f requests (want 2.00, a lone cache's), root b's %d (want 0)", float64(ra)/n, rb)
	}
}

// TestGroupConfirmWithoutNewGeneration: a canary step and a marker move
// root a's znode (its data, its children) without a new stable
// generation; a publish to b must still give a cut, confirmed through a
// root read that finds a's manifest naming the held generation (canary)
// or through the unchanged data (marker).
func TestGroupConfirmWithoutNewGeneration(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 10*time.Second)
	pa, pb := newRawPublisher(t, conn, "/step/a"), newRawPublisher(t, conn, "/step/b")
	pa.inc = manifest.NewIncarnation()
	log, _ := testLogger(t)
	va := set(2, "a1")
	pa.publish(va)
	pb.publish(set(2, "b1"))
	g := newGroup(t, map[string]string{"a": "/step/a", "b": "/step/b"}, WithServers(zkc.Addrs(), 10*time.Second), WithLogger(log))
	waitCut(t, g, map[string]int64{"a": 1, "b": 1})

	mp := pa.beginMarker(withItem(va, "item00", "marker"))
	gb, _ := pb.publish(set(2, "b2"))
	c := waitCut(t, g, map[string]int64{"b": gb})
	if c["a"].Generation() != 1 {
		t.Fatalf("cut holds a at generation %d during a marker publish, want 1", c["a"].Generation())
	}
	if st := g.Stats(); st.ConfirmReads != 0 || st.Moved != 0 {
		t.Fatalf("a marker (no data change) cost a confirm read: %+v", st)
	}
	ga := mp.commit()
	c = waitCut(t, g, map[string]int64{"a": ga, "b": gb})
	checkItems(t, c["a"], withItem(va, "item00", "marker"))

	pa.startCanary(manifest.Selection{Selector: "role=none"}, set(2, "a-candidate"))
	gb, _ = pb.publish(set(2, "b3"))
	c = waitCut(t, g, map[string]int64{"b": gb})
	if c["a"].Generation() != ga || c["a"].Candidate() {
		t.Fatalf("cut holds a at generation %d (candidate %v), want the stable %d", c["a"].Generation(), c["a"].Candidate(), ga)
	}
	if st := g.Stats(); st.ConfirmReads != 1 || st.Moved != 0 {
		t.Fatalf("a's data changed without a new generation: want one confirm read and no move: %+v", st)
	}
}

// TestGroupStateFiles: each root's cache of a group may persist its
// snapshots (WithRootOptions, WithStateFile). Restarted while ZooKeeper is
// down, the caches serve their state files at once, but the group hands
// out no cut of them (they were written at different moments); once
// ZooKeeper is back, one Exists per root confirms them and the first cut
// holds the persisted snapshots.
func TestGroupStateFiles(t *testing.T) {
	zkc := zktest.Start(t)
	conn := zkc.Connect(t, 10*time.Second)
	pa, pb := newRawPublisher(t, conn, "/sf/a"), newRawPublisher(t, conn, "/sf/b")
	log, _ := testLogger(t)
	ctx := testCtx(t)
	va, vb := set(2, "a1"), set(3, "b1")
	pa.publish(va)
	pb.publish(vb)
	dir := t.TempDir()
	roots := map[string]string{"a": "/sf/a", "b": "/sf/b"}
	opts := []Option{WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log),
		WithRootOptions("a", WithStateFile(dir+"/a.state")), WithRootOptions("b", WithStateFile(dir+"/b.state"))}

	g1, err := NewGroup(ctx, roots, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g1.Wait(ctx, map[string]int64{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	_ = g1.Close()

	zkc.Stop(0)
	g2, err := NewGroup(ctx, roots, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	for name, st := range g2.States() {
		if st.Generation != 1 || !errors.Is(st.Err, ErrNotSynced) && !errors.Is(st.Err, ErrDisconnected) {
			t.Fatalf("root %s restarted with ZooKeeper down: %v, want its state file's generation 1", name, st)
		}
	}
	for name, snap := range g2.Snapshots() {
		if snap == nil || !snap.FromStateFile() || snap.Generation() != 1 {
			t.Fatalf("root %s: Snapshots with ZooKeeper down: %v, want its state file's generation 1", name, snap)
		}
	}
	if c, st := g2.Cut(), g2.Stats(); c != nil || st.Cuts != 0 {
		t.Fatalf("a cut of unconfirmed state files while ZooKeeper is down: %v (%d cuts)", c.Generations(), st.Cuts)
	}
	zkc.Restart(0)
	c, err := g2.Wait(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, c["a"], va)
	checkItems(t, c["b"], vb)
	// Nothing was published meanwhile: the caches find their generations
	// and hand out nothing new, so the cut is of the state files.
	if !c["a"].FromStateFile() || !c["b"].FromStateFile() {
		t.Fatalf("first cut: a from state file %v, b %v", c["a"].FromStateFile(), c["b"].FromStateFile())
	}
	_ = g2.Close()

	// With ZooKeeper up: each state file's snapshot gets a witness (a,
	// then b), and a is confirmed again after b's, since two single
	// moments alone are no common one: 3 confirms.
	g3, err := NewGroup(ctx, roots, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer g3.Close()
	if c, err = g3.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
	st := g3.Stats()
	switch {
	case !c["a"].FromStateFile() || !c["b"].FromStateFile():
		t.Fatalf("first cut: a from state file %v, b %v", c["a"].FromStateFile(), c["b"].FromStateFile())
	case st.Errors != 0:
		t.Logf("connection trouble (%d errors): not counting confirms", st.Errors)
	case st.Confirms != 3:
		t.Fatalf("%d confirms of two persisted snapshots, want 3", st.Confirms)
	}
}

// TestNewGroupErrors: every problem of a group's configuration is
// reported at once, and nothing is started.
func TestNewGroupErrors(t *testing.T) {
	_, err := NewGroup(context.Background(), map[string]string{"a": "/x", "b": "/x", "bad name": "/y", "c": "relative"},
		WithStateFile("/tmp/s"), WithRootOptions("a", WithServers([]string{"127.0.0.1:1"}, 0), WithOnUpdate(func(*Snapshot) {})),
		WithRootOptions("b", WithFetchConcurrency(0), WithStateFile("/tmp/s")), WithRootOptions("c", WithStateFile("/tmp/s")),
		WithRootOptions("d", WithStateFile("/tmp/d")))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`"a" and "b" are both /x`, `name "bad name"`, `root "c"`, "no ZooKeeper given",
		"WithStateFile per root only", `root "a": the connection is the group's`, `root "a": a group takes no WithOnUpdate`,
		`root "b": cache: fetch concurrency 0`, `names "d", which is not a root`, `roots "b" and "c" have the same state file /tmp/s`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := NewGroup(context.Background(), nil, WithServers([]string{"127.0.0.1:1"}, 0)); err == nil {
		t.Error("a group without roots accepted")
	}
	if _, err := New(context.Background(), "/x", WithServers([]string{"127.0.0.1:1"}, 0), WithRootOptions("a")); err == nil ||
		!strings.Contains(err.Error(), "WithRootOptions is for NewGroup") {
		t.Errorf("New with WithRootOptions: %v", err)
	}
}

// TestGroupWaitUnknownRoot: Wait names a root the group does not have.
func TestGroupWaitUnknownRoot(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	g, err := NewGroup(context.Background(), map[string]string{"a": "/w"}, WithServers(zkc.Addrs(), 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Wait(testCtx(t), map[string]int64{"nope": 1}); err == nil || !strings.Contains(err.Error(), `no root "nope"`) {
		t.Fatalf("Wait(nope) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a root never published, ctx cancelled: %v", err)
	}
	_ = g.Close()
	if _, err := g.Wait(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
}

// TestGroupRootUpdates: RootUpdates delivers each root's newest snapshot
// without waiting for a cut: root b was never published, so no cut can
// be handed out, yet a's generations arrive (every value holding every
// root, b nil) and StateChanges says b is not live.
func TestGroupRootUpdates(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 10*time.Second)
	pa := newRawPublisher(t, conn, "/ru/a")
	va := set(2, "a1")
	pa.publish(va)
	log, _ := testLogger(t)
	g := newGroup(t, map[string]string{"a": "/ru/a", "b": "/ru/b"}, WithServers(zkc.Addrs(), 10*time.Second), WithLogger(log))
	ctx := testCtx(t)
	want := int64(1)
	for i := range 3 {
		if i > 0 {
			want, _ = pa.publish(withItem(va, "item00", fmt.Sprintf("a%d", i)))
		}
		for {
			var snaps map[string]*Snapshot
			select {
			case snaps = <-g.RootUpdates():
			case <-ctx.Done():
				t.Fatalf("RootUpdates never delivered root a's generation %d", want)
			}
			if _, ok := snaps["b"]; !ok || snaps["b"] != nil {
				t.Fatalf("a value without root b, or with a snapshot of it: %v", snaps)
			}
			if snaps["a"] != nil && snaps["a"].Generation() == want {
				break
			}
		}
	}
	if c := g.Cut(); c != nil {
		t.Fatalf("a cut without root b: %v", c.Generations())
	}
	for {
		var st map[string]StateInfo
		select {
		case st = <-g.StateChanges():
		case <-ctx.Done():
			t.Fatal("StateChanges never said root b is missing")
		}
		if st["a"].State == StateLive && errors.Is(st["b"].Err, ErrRootMissing) {
			break
		}
	}
}

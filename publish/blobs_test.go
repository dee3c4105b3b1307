package publish

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/syncbuf"
	"github.com/zkconf/zkconf/manifest"
)

// The history invariant: every content a retained history entry references
// is stored as a blob, or is the content of a live item of the current
// generation, or both. The blobs of a multi-mode publish's new contents are
// created by its commit (when read missing and small: plan.carried) or
// stored after its acknowledgement; these tests cut a publisher right
// there (withAfterCommit) and check that nothing is lost.

// dieAfterAck makes every publish of the Publisher stop right after its
// commit is acknowledged: no blob stored, no GC. Its commits carry no
// blob (withoutCarry), as those of a publisher from before commits
// carried the new contents' blobs, or of a set beyond carryBytes: what
// these tests cut is the case the departing Checks exist for.
func dieAfterAck() Option {
	return func(c *config) {
		withAfterCommit(func() bool { return true })(c)
		withoutCarry()(c)
	}
}

// blobExists reports whether content data is stored as a blob.
func blobExists(t testing.TB, p *Publisher, data []byte) bool {
	t.Helper()
	ok, _, err := p.conn().Exists(p.paths.Blob(manifest.Hash(data)))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// checkInvariant reads every retained history entry and checks that each
// content it references is a blob or a live item of the live generation.
func checkInvariant(t testing.TB, p *Publisher) {
	t.Helper()
	live, _, err := p.Current(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	liveContent := map[string]bool{}
	for n, it := range live.Items {
		d, _, err := p.conn().Get(p.paths.Item(n))
		if err == nil && manifest.Hash(d) == it.SHA256 {
			liveContent[it.SHA256] = true
		}
	}
	blobs, _, err := p.conn().Children(p.paths.Blobs())
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, b := range blobs {
		stored[b] = true
	}
	for _, g := range historyList(t, p.conn(), p.paths) {
		data, _, err := p.conn().Get(p.paths.HistoryNode(g))
		if err != nil {
			t.Fatal(err)
		}
		m, err := manifest.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		for n, it := range m.Items {
			if !stored[it.SHA256] && !liveContent[it.SHA256] {
				t.Fatalf("generation %d item %q: content %.12s is neither a blob nor live (live generation %d)", g, n, it.SHA256, live.Generation)
			}
		}
	}
}

// TestDiedAfterAckNextPublishBackfills: a publisher acknowledged generation
// 2 and died before storing its blobs. Generation 2 stays readable (from
// the live items); the next publish, which overwrites some of its items,
// finds the departing blobs missing, sends its commit again creating them
// from the live items, and lands exactly once; a rollback to 2 then
// restores 2's content from the blobs.
func TestDiedAfterAckNextPublishBackfills(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/died/root"
	good := newPub(t, c, root)
	dying := newPub(t, c, root, dieAfterAck())

	g1 := items(6, 300, "g1")
	mustPublish(t, good, Request{Items: g1})
	g2 := items(6, 300, "g2")
	g2["shared.conf"] = []byte("kept by generation 3 under another name\n")
	if res := mustPublish(t, dying, Request{Items: g2}); res.Generation != 2 {
		t.Fatalf("generation %d, want 2", res.Generation)
	}
	for n, d := range g2 {
		if blobExists(t, good, d) {
			t.Fatalf("item %s of generation 2 is stored although its publisher died before storing blobs", n)
		}
	}
	checkInvariant(t, good)

	// Generation 2 is readable while its content is only live.
	if m, got, err := good.Read(ctx, 2); err != nil || m.Generation != 2 || !sameItems(got, g2) {
		t.Fatalf("read generation 2 (content only live): %v", err)
	}

	// Generation 3 overwrites half the items, keeps the others, and moves
	// shared.conf's content to a new name.
	g3 := clone(g2)
	for i := range 3 {
		g3[fmt.Sprintf("item-%02d.conf", i)] = content(300, fmt.Sprintf("g3/%d", i))
	}
	g3["moved.conf"] = g3["shared.conf"]
	delete(g3, "shared.conf")
	var sends atomic.Int64
	counting := newPub(t, c, root, withBeforeCommit(func(stage string) {
		if stage == "multi" {
			sends.Add(1)
		}
	}))
	res := mustPublish(t, counting, Request{Items: g3})
	if res.Generation != 3 || res.CommitAttempts != 2 || sends.Load() != 2 {
		t.Fatalf("generation %d after %d attempts (%d sends); want 3 after 2 (the second creating the departing blobs)",
			res.Generation, res.CommitAttempts, sends.Load())
	}
	checkLive(t, counting, 3, g3)
	if h := historyList(t, good.conn(), good.paths); !slices.Equal(h, []int64{1, 2, 3}) {
		t.Fatalf("history %v, want 1..3: the publish landed more than once or not at all", h)
	}
	// The departing contents were stored by the commit; the kept ones are
	// live (and stored after the acknowledgement only when new).
	for i := range 3 {
		if !blobExists(t, good, g2[fmt.Sprintf("item-%02d.conf", i)]) {
			t.Fatalf("departing content of item-%02d.conf is not stored", i)
		}
	}
	checkInvariant(t, good)

	rb, err := good.Rollback(ctx, 2, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Generation != 4 || rb.Manifest.RollbackOf != 2 {
		t.Fatalf("rollback: %+v", rb)
	}
	checkLive(t, good, 4, g2)
	checkInvariant(t, good)
	for g, want := range map[int64]map[string][]byte{1: g1, 2: g2, 3: g3} {
		if _, got, err := good.Read(ctx, g); err != nil || !sameItems(got, want) {
			t.Fatalf("generation %d read back: %v", g, err)
		}
	}
}

// TestRollbackToOnlyLiveContent rolls back to a generation none of whose
// content is stored as a blob: all of it is still held by the live items
// (the live generation added an item).
func TestRollbackToOnlyLiveContent(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/onlylive"
	dying := newPub(t, c, root, dieAfterAck())
	good := newPub(t, c, root)
	g1 := items(5, 200, "g1")
	mustPublish(t, dying, Request{Items: g1})
	g2 := clone(g1)
	g2["extra.conf"] = []byte("added by generation 2\n")
	mustPublish(t, dying, Request{Items: g2})
	for n, d := range g2 {
		if blobExists(t, good, d) {
			t.Fatalf("content of %s is stored: the test needs it only live", n)
		}
	}
	checkInvariant(t, good)
	rb, err := good.Rollback(ctx, 1, Request{})
	if err != nil {
		t.Fatalf("rollback to a generation whose content is only live: %v", err)
	}
	if rb.Generation != 3 || rb.Manifest.RollbackOf != 1 {
		t.Fatalf("rollback: %+v", rb)
	}
	checkLive(t, good, 3, g1)
	checkInvariant(t, good)
	if _, got, err := good.Read(ctx, 2); err != nil || !sameItems(got, g2) {
		t.Fatalf("generation 2 after the rollback: %v", err)
	}
}

// TestMissingDepartingBlobRace: the commit finds a departing blob missing
// and is sent again creating it; before that second send, someone else
// stores the blob (as a late post-acknowledgement store would), so the
// second send fails on NodeExists and the third checks it instead. The
// publish lands exactly once.
func TestMissingDepartingBlobRace(t *testing.T) {
	c := startZK(t)
	const root = "/blobrace"
	dying := newPub(t, c, root, dieAfterAck())
	g1 := items(3, 100, "g1")
	mustPublish(t, dying, Request{Items: g1})
	var sends atomic.Int64
	var p *Publisher
	p = newPub(t, c, root, withBeforeCommit(func(stage string) {
		if sends.Add(1) == 2 {
			for _, d := range g1 {
				if _, err := p.conn().Create(p.paths.Blob(manifest.Hash(d)), d, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Errorf("store blob behind the publisher's back: %v", err)
				}
			}
		}
	}))
	g2 := items(3, 100, "g2")
	checkSecondLandedOnce(t, p, mustPublish(t, p, Request{Items: g2}), 3, g2)
}

// checkSecondLandedOnce checks that res is generation 2, landed after
// attempts commit attempts, exactly once (history 1 and 2), with want
// live and the history invariant kept.
func checkSecondLandedOnce(t *testing.T, p *Publisher, res *Result, attempts int, want map[string][]byte) {
	t.Helper()
	if res.Generation != 2 || res.CommitAttempts != attempts {
		t.Fatalf("generation %d after %d commit attempts, want 2 after %d", res.Generation, res.CommitAttempts, attempts)
	}
	if h := historyList(t, p.conn(), p.paths); !slices.Equal(h, []int64{1, 2}) {
		t.Fatalf("history %v, want [1 2]: the publish landed more than once or not at all", h)
	}
	checkLive(t, p, 2, want)
	checkInvariant(t, p)
}

// TestMarkerModeBackfillsBeforeOverwriting: after a multi-mode publisher
// died past its acknowledgement, a marker-mode publish stores the live
// contents it is about to overwrite before writing any item, so a crash in
// the middle of its item writes loses no retained generation's content.
func TestMarkerModeBackfillsBeforeOverwriting(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/markerfill"
	dying := newPub(t, c, root, dieAfterAck())
	g1 := items(6, 200, "g1")
	mustPublish(t, dying, Request{Items: g1})
	g2 := items(6, 200, "g2")
	g2["item-05.conf"] = g1["item-00.conf"] // a live content moving to another name
	crashConn, crashSess := dial(t, testSession, c.Addrs()...)
	crash := mustNew(t, crashConn, crashSess, root, withMarkerWrite(func(n int) error {
		if n == 2 {
			crashConn.Close() // its liveness node goes with its session
			return errSimulatedCrash
		}
		return nil
	}))
	if _, err := crash.Publish(ctx, Request{Items: g2, Mode: manifest.ModeMarker}); !errors.Is(err, errSimulatedCrash) {
		t.Fatalf("marker publish with a simulated crash: %v", err)
	}
	good := newPub(t, c, root)
	// Generation 1 is still the live one, its items partly overwritten: it
	// must be readable whole (from blobs and untouched items).
	if m, got, err := good.Read(ctx, 0); err != nil || m.Generation != 1 || !sameItems(got, g1) {
		t.Fatalf("live generation 1 during the dead marker publish: %v", err)
	}
	// The next publish takes the marker over and completes; generation 1
	// stays readable and can be rolled back to.
	res := mustPublish(t, good, Request{Items: g2, Mode: manifest.ModeMarker})
	checkLive(t, good, res.Generation, g2)
	checkInvariant(t, good)
	if _, err := good.Rollback(ctx, 1, Request{}); err != nil {
		t.Fatal(err)
	}
	checkLive(t, good, res.Generation+1, g1)
	checkInvariant(t, good)
}

// TestMarkerFinalCommitWithoutDepartingChecks: when the departing
// contents' Checks would not fit the final marker-mode commit (a large
// generation replaced by a small one under a small transaction budget),
// the commit goes without them. The departing blobs were stored under the
// marker before any item was overwritten, so the history invariant holds
// and the large generation can be rolled back to, even though its own
// publisher died before storing a single blob.
func TestMarkerFinalCommitWithoutDepartingChecks(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/markerbudget"
	dying := newPub(t, c, root, dieAfterAck())
	big := items(60, 100, "big")
	mustPublish(t, dying, Request{Items: big})
	for n, d := range big {
		if blobExists(t, dying, d) {
			t.Fatalf("item %s is stored although its publisher died before storing blobs", n)
		}
	}
	var logs syncbuf.Buffer
	small := newPub(t, c, root, withMultiBudget(4096),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	one := items(1, 100, "small")
	res := mustPublish(t, small, Request{Items: one, Mode: manifest.ModeMarker})
	if res.Generation != 2 {
		t.Fatalf("generation %d, want 2", res.Generation)
	}
	if !strings.Contains(logs.String(), "without them") {
		t.Fatalf("the final commit carried the departing checks; the test does not reach its case. Log:\n%s", logs.String())
	}
	checkLive(t, small, 2, one)
	checkInvariant(t, small)
	for n, d := range big {
		if !blobExists(t, small, d) {
			t.Fatalf("departing content of %s is not stored", n)
		}
	}
	good := newPub(t, c, root)
	if _, err := good.Rollback(ctx, 1, Request{}); err != nil {
		t.Fatal(err)
	}
	checkLive(t, good, 3, big)
}

// TestGCKeepsNeededBlobsUnderRacingPublishers races publishers with a
// short retention over contents drawn from a small pool (so contents come
// back, move between items and are shared by generations); a third of
// the publishes stop right after their acknowledgement, leaving their
// blobs to the next publishers. After every round, every retained
// generation must read back as its winner published it, and the history
// invariant must hold.
func TestGCKeepsNeededBlobsUnderRacingPublishers(t *testing.T) {
	const (
		publishers = 6
		rounds     = 4
		attempts   = 6
		retention  = 3
	)
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/gcrace"
	pubs := make([]*Publisher, publishers)
	for i := range pubs {
		var n atomic.Int64
		pubs[i] = newPub(t, c, root, WithRetention(retention), WithPublisherName(fmt.Sprintf("p%d@test", i)),
			withAfterCommit(func() bool { return n.Add(1)%3 == 0 }))
	}
	var (
		mu   sync.Mutex
		sets = map[int64]map[string][]byte{}
	)
	pool := func(r *rand.Rand) map[string][]byte {
		set := map[string][]byte{}
		for i := range 5 {
			set[fmt.Sprintf("item-%d.conf", i)] = content(150, fmt.Sprintf("pool-%d", r.IntN(6)))
		}
		if r.IntN(2) == 0 {
			set["unique.conf"] = content(100, fmt.Sprintf("unique-%d", r.Uint64()))
		}
		return set
	}
	wins := 0
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, publishers*attempts)
		for i, p := range pubs {
			r := rand.New(rand.NewPCG(uint64(round), uint64(i)))
			wg.Go(func() {
				for range attempts {
					set := pool(r)
					res, err := p.Publish(ctx, Request{Items: set, Force: true})
					switch {
					case err == nil:
						mu.Lock()
						sets[res.Generation] = set
						wins++
						mu.Unlock()
					case !errors.Is(err, ErrConflict):
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: publish error other than a conflict: %v", round, err)
		}
		checkInvariant(t, pubs[0])
		for _, g := range historyList(t, pubs[0].conn(), pubs[0].paths) {
			_, got, err := pubs[0].Read(ctx, g)
			if err != nil {
				t.Fatalf("round %d: retained generation %d unreadable: %v", round, g, err)
			}
			if !sameItems(got, sets[g]) {
				t.Fatalf("round %d: generation %d reads back as %v, published %v", round, g, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(sets[g])))
			}
		}
	}
	if wins < rounds {
		t.Fatalf("only %d publishes won", wins)
	}
	t.Logf("%d generations published by %d racing publishers", wins, publishers)
}

// TestGCStaleHistoryListKeepsBlobs: the state a publisher reads lists the
// history beside the root, so a commit landing between the two reads can
// be in the root and missing from the list. GC after the next commit must
// not trust that list: here generation 3 (the only holder of "unique.conf"'s
// content) is missing from the state's list when generation 4's GC runs
// with a retention of 2; the blob must stay, and the invariant hold. On the
// old code the GC kept [2, 4], dropped 1, and deleted generation 3's blob
// while g-3 stayed retained.
func TestGCStaleHistoryListKeepsBlobs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/gcstale"
	p := newPub(t, c, root) // default retention: nothing is dropped here
	base := map[string][]byte{"a.conf": content(50, "a")}
	mustPublish(t, p, Request{Items: base})
	mustPublish(t, p, Request{Items: map[string][]byte{"a.conf": content(50, "b")}})
	unique := content(80, "only-in-3")
	g3 := clone(base)
	g3["unique.conf"] = unique
	mustPublish(t, p, Request{Items: g3})
	res := mustPublish(t, p, Request{Items: base})
	if res.Generation != 4 {
		t.Fatalf("generation %d, want 4", res.Generation)
	}
	_, rs, err := p.conn().Get(p.paths.Root)
	if err != nil {
		t.Fatal(err)
	}
	gc := newPub(t, c, root, WithRetention(2))
	// Generation 4's GC, on a state listed before generation 3 landed.
	gc.gc(ctx, &state{history: []int64{1, 2}}, &plan{gen: 4, next: res.Manifest, rootVersion: rs.Version}, nil)
	if ok, _, err := gc.conn().Exists(gc.paths.Blob(manifest.Hash(unique))); err != nil || !ok {
		t.Fatalf("generation 3's blob deleted by a GC on a stale history list (exists %v, %v)", ok, err)
	}
	if got := historyList(t, gc.conn(), gc.paths); !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("history after GC = %v, want [3 4]", got)
	}
	checkInvariant(t, gc)
}

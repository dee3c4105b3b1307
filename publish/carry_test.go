package publish

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// TestCommitCarriesNewBlobs: the blobs of a small publish's new contents
// are created by its commit, so a publisher that dies right after its
// acknowledgement leaves none missing; a content whose blob would take
// the commit over the multi budget is left to the store after the
// acknowledgement (missing here), and a content whose blob exists (a
// rollback's) costs no second commit.
func TestCommitCarriesNewBlobs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/carry"
	dying := newPub(t, c, root, withAfterCommit(func() bool { return true }))
	g1 := items(4, 500, "g1")
	mustPublish(t, dying, Request{Items: g1})
	for n, d := range g1 {
		if !blobExists(t, dying, d) {
			t.Fatalf("content of %s is not stored: the commit did not carry it", n)
		}
	}
	checkInvariant(t, dying)

	g2 := clone(g1)
	g2["item-00.conf"] = content(400, "g2")
	res := mustPublish(t, dying, Request{Items: g2})
	if res.Generation != 2 || res.CommitAttempts != 1 || !blobExists(t, dying, g2["item-00.conf"]) {
		t.Fatalf("generation %d after %d attempts, want 2 after 1, its new content stored", res.Generation, res.CommitAttempts)
	}
	checkInvariant(t, dying)

	// Back to generation 1's content: its blob exists already, so the
	// commit carries none (it would fail on NodeExists and be sent again).
	good := newPub(t, c, root)
	rb, err := good.Rollback(ctx, 1, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Generation != 3 || rb.CommitAttempts != 1 {
		t.Fatalf("rollback: generation %d after %d commit attempts, want 3 after 1", rb.Generation, rb.CommitAttempts)
	}
	checkLive(t, good, 3, g1)
	checkInvariant(t, good)

	// A small new content beside one whose blob does not fit the budget
	// beside its own item (the commit writes the item, 12 KiB, then would
	// create its blob, 12 KiB more, in a budget of 16 KiB): the small one
	// is carried, the large one left to the store after the
	// acknowledgement.
	tight := newPub(t, c, root, withAfterCommit(func() bool { return true }), withMultiBudget(16<<10))
	g4 := clone(g1)
	g4["item-02.conf"] = content(300, "g4/small")
	g4["big.conf"] = content(12<<10, "g4/big")
	if res := mustPublish(t, tight, Request{Items: g4}); res.Generation != 4 || res.Mode != manifest.ModeMulti {
		t.Fatalf("generation %d in mode %s, want 4 in multi mode", res.Generation, res.Mode)
	}
	if !blobExists(t, tight, g4["item-02.conf"]) {
		t.Fatal("the small new content is not stored: the commit did not carry it")
	}
	if blobExists(t, tight, g4["big.conf"]) {
		t.Fatal("a content whose blob does not fit the budget was carried by the commit")
	}
	checkInvariant(t, tight)

	// A small set (speculate's: the blob store is listed) whose entering
	// contents are more than the 64 KiB a commit carried until issue 27's
	// twelfth part: 20 changed 4 KiB items, 80 KiB of blobs. All fit the
	// budget, so the commit carries them all and the store after the
	// acknowledgement has nothing left to write.
	g5 := items(20, 4096, "g5")
	if res := mustPublish(t, dying, Request{Items: g5}); res.Generation != 5 || res.Mode != manifest.ModeMulti {
		t.Fatalf("generation %d in mode %s, want 5 in multi mode", res.Generation, res.Mode)
	}
	for n, d := range g5 {
		if !blobExists(t, dying, d) {
			t.Fatalf("content of %s (a set of 20 × 4 KiB) is not stored: the commit did not carry it", n)
		}
	}
	checkInvariant(t, dying)
}

// TestCarriedBlobStoredMeanwhile: a blob the commit is about to create is
// stored by someone else after the publish read it missing; the commit
// fails on NodeExists with nothing applied, is sent again without that
// blob, and lands exactly once.
func TestCarriedBlobStoredMeanwhile(t *testing.T) {
	c := startZK(t)
	const root = "/carryrace"
	g1 := items(3, 100, "g1")
	mustPublish(t, newPub(t, c, root), Request{Items: g1})
	g2 := clone(g1)
	g2["item-01.conf"] = content(100, "g2")
	var sends atomic.Int64
	var p *Publisher
	p = newPub(t, c, root, withBeforeCommit(func(string) {
		if sends.Add(1) == 1 {
			d := g2["item-01.conf"]
			if _, err := p.conn().Create(p.paths.Blob(manifest.Hash(d)), d, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Errorf("store the blob behind the publisher's back: %v", err)
			}
		}
	}))
	checkSecondLandedOnce(t, p, mustPublish(t, p, Request{Items: g2}), 2, g2)
}

// TestCarriedBlobsStoredMeanwhile: more blobs than a commit has rounds
// for (maxBlobRaces) are stored by someone else after the publish read
// them missing; the commit is sent again once, without any carried blob,
// lands exactly once, and the blobs are all there.
func TestCarriedBlobsStoredMeanwhile(t *testing.T) {
	c := startZK(t)
	const root = "/carryraces"
	g1 := items(8, 100, "g1")
	mustPublish(t, newPub(t, c, root), Request{Items: g1})
	g2 := items(8, 100, "g2") // eight entering contents, all carried
	var sends atomic.Int64
	var p *Publisher
	p = newPub(t, c, root, withBeforeCommit(func(string) {
		if sends.Add(1) != 1 {
			return
		}
		for _, d := range g2 {
			if _, err := p.conn().Create(p.paths.Blob(manifest.Hash(d)), d, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Errorf("store a blob behind the publisher's back: %v", err)
			}
		}
	}))
	checkSecondLandedOnce(t, p, mustPublish(t, p, Request{Items: g2}), 2, g2)
	if n := sends.Load(); n != 2 {
		t.Fatalf("the commit was sent %d times, want 2 (once more, without the carried blobs)", n)
	}
	for n, d := range g2 {
		if !blobExists(t, p, d) {
			t.Errorf("content of %s has no blob", n)
		}
	}
}

// TestPrefetchThenPublish: a publish takes the reads Prefetch sent as its
// own; a commit landing between the two makes its compare-and-swap fail
// (a conflict, nothing applied), and a tampered item is found from the
// prefetched read as from its own.
func TestPrefetchThenPublish(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/prefetch"
	p := newPub(t, c, root)
	other := newPub(t, c, root)
	g1 := items(5, 100, "g1")
	mustPublish(t, p, Request{Items: g1})

	g2 := clone(g1)
	g2["item-00.conf"] = content(100, "g2")
	p.Prefetch(ctx, g2)
	<-p.prefetched.done // answered: the commit below lands after these reads
	g3 := clone(g1)
	g3["item-01.conf"] = content(100, "g3")
	mustPublish(t, other, Request{Items: g3})
	_, err := p.Publish(ctx, Request{Items: g2})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Actual != 2 {
		t.Fatalf("publish on reads from before a commit: %v, want a conflict with generation 2", err)
	}
	checkLive(t, p, 2, g3)

	// A plain write behind confpush's back, then a prefetched publish
	// that leaves that item alone: it is found and rewritten.
	if _, err := p.conn().Set(p.paths.Item("item-03.conf"), []byte("tampered"), -1); err != nil {
		t.Fatal(err)
	}
	g4 := clone(g3)
	g4["item-00.conf"] = content(100, "g4")
	p.Prefetch(ctx, g4)
	res := mustPublish(t, p, Request{Items: g4})
	if !slices.Equal(res.Repaired, []string{"item-03.conf"}) {
		t.Fatalf("repaired %v, want [item-03.conf]", res.Repaired)
	}
	checkLive(t, p, 3, g4)
	checkInvariant(t, p)

	// A publish whose context ended fails with its error; reads that
	// failed so (Prefetch's) are sent again by the publish that takes
	// them.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	g5 := clone(g4)
	g5["item-00.conf"] = content(100, "g5")
	if _, err := p.Publish(dead, Request{Items: g5}); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish with an ended context: %v, want context.Canceled", err)
	}
	p.Prefetch(dead, g5)
	if res := mustPublish(t, p, Request{Items: g5}); res.Generation != 4 {
		t.Fatalf("publish after a failed prefetch: generation %d, want 4", res.Generation)
	}
	checkLive(t, p, 4, g5)
}

// TestPrefetchReadsItemsAndBlobs: the prefetched reads of the set's items
// and blobs (each a go-zookeeper call on a goroutine of its own, not
// through read) record what Publisher.get and Publisher.exists tell: a
// live item's data, an item with no node as not existing, whether each
// content's blob exists; and an ended context leaves them all out.
func TestPrefetchReadsItemsAndBlobs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	p := newPub(t, c, "/prefetchreads")
	g1 := items(3, 100, "g1")
	mustPublish(t, p, Request{Items: g1})

	next := clone(g1)
	next["item-01.conf"] = content(100, "next") // a content with no blob yet
	next["new.conf"] = content(100, "new")      // an item with no node
	p.Prefetch(ctx, next)
	r := p.takePrefetch()
	<-r.done
	if r.stErr != nil {
		t.Fatalf("state read: %v", r.stErr)
	}
	for name := range next {
		want, _, err := p.conn().Exists(p.paths.Item(name))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.items[name]
		if !ok {
			t.Errorf("%s: not read", name)
			continue
		}
		if got.exists != want {
			t.Errorf("%s: exists %v, want %v", name, got.exists, want)
		}
		if want && !bytes.Equal(got.data, g1[name]) {
			t.Errorf("%s: read %q, want the live %q", name, got.data, g1[name])
		}
	}
	for _, it := range hashItems(next) {
		want, _, err := p.conn().Exists(p.paths.Blob(it.SHA256))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := r.blobs[it.SHA256]; !ok || got != want {
			t.Errorf("blob %s: recorded %v (read: %v), want %v", it.SHA256, got, ok, want)
		}
	}
	if r.blobs[hashItems(next)["new.conf"].SHA256] {
		t.Errorf("the new content's blob is recorded as existing")
	}

	// A root never published has no blob store: every content is read
	// as having no blob (read, not left out).
	fresh := newPub(t, c, "/prefetchfresh")
	first := items(2, 100, "fresh")
	fresh.Prefetch(ctx, first)
	fr := fresh.takePrefetch()
	<-fr.done
	for _, it := range hashItems(first) {
		if got, ok := fr.blobs[it.SHA256]; !ok || got {
			t.Errorf("fresh root, blob %s: recorded %v (read: %v), want read as missing", it.SHA256, got, ok)
		}
	}

	dead, cancel := context.WithCancel(ctx)
	cancel()
	p.Prefetch(dead, next)
	r = p.takePrefetch()
	<-r.done
	if len(r.items) != 0 || len(r.blobs) != 0 || !errors.Is(r.stErr, context.Canceled) {
		t.Errorf("with an ended context: %d items, %d blobs, state error %v; want none and context.Canceled", len(r.items), len(r.blobs), r.stErr)
	}
}

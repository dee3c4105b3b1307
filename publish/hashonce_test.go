package publish

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
)

// TestLargeSetCommitCarriesEnteringBlob: a set larger than step 2
// speculates on (70 items) gets the blob of its one new content created by
// its commit (read missing beside the verification of its unchanged
// items), so a publisher that dies right after its acknowledgement leaves
// no blob missing; a content whose blob exists already (a content coming
// back) is read as stored and costs no second send of the commit.
func TestLargeSetCommitCarriesEnteringBlob(t *testing.T) {
	c := startZK(t)
	const root = "/carrylarge"
	g1 := items(speculateItems+6, 200, "g1")
	mustPublish(t, newPub(t, c, root), Request{Items: g1})

	dying := newPub(t, c, root, withAfterCommit(func() bool { return true }))
	g2 := clone(g1)
	g2["item-03.conf"] = content(200, "g2")
	res := mustPublish(t, dying, Request{Items: g2})
	if res.Generation != 2 || res.CommitAttempts != 1 {
		t.Fatalf("generation %d after %d commit attempts, want 2 after 1", res.Generation, res.CommitAttempts)
	}
	if !blobExists(t, dying, g2["item-03.conf"]) {
		t.Fatal("the new content's blob is missing after the acknowledgement: the commit did not carry it")
	}
	checkInvariant(t, dying)

	// Back to generation 1's content: its blob is stored (generation 1's
	// publisher stored it), so the commit must not create it again.
	res = mustPublish(t, dying, Request{Items: g1})
	if res.Generation != 3 || res.CommitAttempts != 1 {
		t.Fatalf("generation %d after %d commit attempts, want 3 after 1 (a stored blob read as missing is a NodeExists and a second send)",
			res.Generation, res.CommitAttempts)
	}
	checkLive(t, dying, 3, g1)
	checkInvariant(t, dying)

	// Nine new contents, more than enteringReads (8): not read, so not
	// carried (the store after the acknowledgement, which this publisher
	// skips, has them).
	g4 := clone(g1)
	for i := range 9 {
		g4[fmt.Sprintf("item-%02d.conf", i)] = content(200, fmt.Sprint("g4/", i))
	}
	if res := mustPublish(t, dying, Request{Items: g4}); res.Generation != 4 {
		t.Fatalf("generation %d, want 4", res.Generation)
	}
	if blobExists(t, dying, g4["item-00.conf"]) {
		t.Fatal("a publish of 9 new contents carried their blobs: more Exists than enteringReads (8) were sent")
	}
}

// TestVerifyUnchangedSameSize: an unchanged item overwritten by hand with
// other bytes of the same size is found and rewritten, whether step 2
// read it (a small set) or the verification did (a set larger than step
// 2 speculates on): the live bytes are compared with the kept content.
func TestVerifyUnchangedSameSize(t *testing.T) {
	c := startZK(t)
	for _, n := range []int{5, speculateItems + 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			root := fmt.Sprintf("/samesize%d", n)
			p := newPub(t, c, root)
			g1 := items(n, 300, "g1")
			mustPublish(t, p, Request{Items: g1})
			edited := bytes.Clone(g1["item-01.conf"])
			edited[len(edited)/2] ^= 1
			if _, err := p.conn().Set(p.paths.Item("item-01.conf"), edited, -1); err != nil {
				t.Fatal(err)
			}
			g2 := clone(g1)
			g2["item-00.conf"] = content(300, "g2")
			res := mustPublish(t, p, Request{Items: g2})
			if len(res.Repaired) != 1 || res.Repaired[0] != "item-01.conf" {
				t.Fatalf("repaired %v, want [item-01.conf]", res.Repaired)
			}
			checkLive(t, p, 2, g2)
		})
	}
}

// TestPrefetchOfAnotherSet: the hashes Prefetch computed are taken only
// for the very set it was given; a publish of a set whose item was
// replaced since (or a set of other names) hashes its own items, so its
// manifest describes what it wrote.
func TestPrefetchOfAnotherSet(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	for _, size := range []int{100, 64 << 10} { // step 2 reads the items of the first set, not of the second
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			root := fmt.Sprintf("/prefetchother%d", size)
			p := newPub(t, c, root)
			g1 := items(6, size, "g1")
			mustPublish(t, p, Request{Items: g1})

			g2 := clone(g1)
			g2["item-02.conf"] = content(size, "g2")
			p.Prefetch(ctx, g2)
			g2["item-02.conf"] = content(size, "g2, replaced after the prefetch")
			mustPublish(t, p, Request{Items: g2})
			checkLive(t, p, 2, g2) // a manifest-verified read: every hash is its item's

			g3 := clone(g2)
			p.Prefetch(ctx, g3)
			g3["item-09.conf"] = content(size, "g3, added after the prefetch")
			mustPublish(t, p, Request{Items: g3})
			checkLive(t, p, 3, g3)

			// The same set: its hashes are taken.
			g4 := clone(g3)
			g4["item-00.conf"] = content(size, "g4")
			p.Prefetch(ctx, g4)
			mustPublish(t, p, Request{Items: g4})
			checkLive(t, p, 4, g4)
		})
	}
}

// TestSetHashEntriesFor: a setHash gives its entries for the set it hashed
// (the same slices under the same names, in any map), and nothing for a
// set with an item replaced, added or removed.
func TestSetHashEntriesFor(t *testing.T) {
	set := items(4, 100, "a")
	for _, h := range []*setHash{hashAhead(set), hashedSet(set, hashItems(set))} {
		got := h.entriesFor(maps.Clone(set))
		if !maps.Equal(got, hashItems(set)) {
			t.Fatalf("entries for the same set: %v, want its hashes", got)
		}
		replaced := maps.Clone(set)
		replaced["item-01.conf"] = bytes.Clone(set["item-01.conf"]) // equal bytes, another slice
		added := maps.Clone(set)
		added["new"] = []byte("x")
		removed := maps.Clone(set)
		delete(removed, "item-00.conf")
		renamed := maps.Clone(removed)
		renamed["other"] = set["item-00.conf"]
		for name, other := range map[string]map[string][]byte{"replaced": replaced, "added": added, "removed": removed, "renamed": renamed} {
			if got := h.entriesFor(other); got != nil {
				t.Errorf("%s: entries %v, want none", name, got)
			}
		}
	}
	var none *setHash
	if none.entriesFor(set) != nil {
		t.Error("a nil setHash gave entries")
	}
}

// TestSizedEntries: Validate's entries without SHA-256 have the sizes of
// the real ones, equal placeholders exactly for equal contents, and so the
// same manifest size check.
func TestSizedEntries(t *testing.T) {
	sets := map[string]map[string][]byte{
		"distinct":  items(10, 300, "d"),
		"all equal": {"a": []byte("same"), "b": []byte("same"), "c/d": []byte("same")},
		"mixed": {"a": []byte("one"), "b": []byte("two"), "c": []byte("one"), "d": []byte("owt"),
			"e": {}, "f": nil, "g": []byte("two")},
		"empty": {},
	}
	l := layout.New("/r", "/m")
	for name, set := range sets {
		got, want := sizedEntries(set), hashItems(set)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", name, len(got), len(want))
		}
		for a, ia := range want {
			if got[a].Size != ia.Size || len(got[a].SHA256) != len(ia.SHA256) {
				t.Errorf("%s: %s is %+v, want the size and digest length of %+v", name, a, got[a], ia)
			}
			for b, ib := range want {
				if (got[a].SHA256 == got[b].SHA256) != (ia.SHA256 == ib.SHA256) {
					t.Errorf("%s: %s and %s: placeholders equal %v, contents equal %v", name, a, b,
						got[a].SHA256 == got[b].SHA256, ia.SHA256 == ib.SHA256)
				}
			}
		}
		ws, gs := worstCase(want, "p", 0, ""), worstCase(got, "p", 0, "")
		if encodedSize(ws) != encodedSize(gs) {
			t.Errorf("%s: manifest size %d, want %d", name, encodedSize(gs), encodedSize(ws))
		}
		// The check's verdict, and at a budget of 0 its error naming the size.
		for _, budget := range []int{1 << 20, 0} {
			e1 := manifestProblem(want, "p", 0, "", l, nil, budget)
			e2 := manifestProblem(got, "p", 0, "", l, nil, budget)
			if fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Errorf("%s, budget %d: %v, want %v", name, budget, e2, e1)
			}
		}
	}
}

// TestPrefetchReadsUnchangedItems: for a set larger than step 2
// speculates on, the reads Prefetch sends include the live items the
// publish verifies (those the set leaves unchanged), in multiReads sent
// once the root's manifest is in, so the publish sends none of its own;
// an item tampered with behind the publisher's back is still found and
// rewritten; a set whose items all change reads no item.
func TestPrefetchReadsUnchangedItems(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/prefetchunchanged"
	direct := newPub(t, c, root)
	set := items(100, 1024, "v1")
	mustPublish(t, direct, Request{Items: set})
	if _, err := direct.conn().Set(direct.paths.Item("item-57.conf"), []byte("edited by hand"), -1); err != nil {
		t.Fatal(err)
	}

	counter := zktest.CountRequests(t, c.Addrs()[0])
	conn, sess := dial(t, testSession, counter.Addr())
	// It dies right after its acknowledgement: what it did not store
	// before (in its commit) stays missing.
	p := mustNew(t, conn, sess, root, withAfterCommit(func() bool { return true }))

	next := clone(set)
	next["item-00.conf"] = content(1024, "v2")
	p.Prefetch(ctx, next)
	if _, ok := p.PrefetchACLs(ctx); !ok { // waits for the prefetch's reads
		t.Fatal("no pending prefetch")
	}
	if m := counter.Count(zktest.OpMultiRead); m != 3 {
		t.Fatalf("the prefetch sent %d multiReads, want 3 (the state's, and the 99 unchanged items: 64 + 35)", m)
	}
	exists := counter.Count(zktest.OpExists)
	res := mustPublish(t, p, Request{Items: next})
	if !slices.Equal(res.Repaired, []string{"item-57.conf"}) {
		t.Fatalf("repaired %v, want [item-57.conf]", res.Repaired)
	}
	checkLive(t, direct, 2, next)
	if m, g := counter.Count(zktest.OpMultiRead), counter.Count(zktest.OpGetData); m != 3 || g > 0 {
		t.Fatalf("after the publish: %d multiReads and %d getData, want 3 and none (the root's data rides the state's multiRead)", m, g)
	}
	// The new content's blob: read missing among the prefetch's reads (no
	// Exists of the publish's own) and created by the commit.
	if e := counter.Count(zktest.OpExists); e != exists {
		t.Fatalf("the publish sent %d Exists of its own, want 0 (the entering blob's was the prefetch's)", e-exists)
	}
	if !blobExists(t, direct, next["item-00.conf"]) {
		t.Fatal("the new content's blob is missing: the commit did not carry it")
	}
	checkInvariant(t, direct)

	counter.Reset()
	all := items(100, 1024, "v3")
	p.Prefetch(ctx, all)
	p.PrefetchACLs(ctx) // waits for the prefetch's reads (the ACLs are held: not read again)
	mustPublish(t, p, Request{Items: all})
	if m := counter.Count(zktest.OpMultiRead); m != 1 {
		t.Fatalf("a set whose items all change sent %d multiReads, want 1 (the state's: no item read)", m)
	}
	checkLive(t, direct, 3, all)
}

// TestSetWithin: a set is hashed ahead only when within the set limit.
func TestSetWithin(t *testing.T) {
	set := items(4, 100, "w")
	for _, tc := range []struct {
		limit int64
		want  bool
	}{{400, true}, {399, false}, {0, true}} {
		if got := setWithin(set, tc.limit); got != tc.want {
			t.Errorf("setWithin(400 bytes, %d) = %v, want %v", tc.limit, got, tc.want)
		}
	}
}

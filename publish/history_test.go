package publish

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// TestHistoryRetentionRollback checks that retention is honoured, that GC
// leaves every retained generation readable (and removes every blob no
// retained generation needs), and that rollback --to G makes a new
// generation with G's content.
func TestHistoryRetentionRollback(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	p := newPub(t, c, "/hist", WithRetention(3))
	published := map[int64]map[string][]byte{}
	genSet := func(g int) map[string][]byte {
		set := items(4, 200, fmt.Sprintf("g%d", g))
		set["shared.conf"] = []byte("the same in every generation\n")
		if g%2 == 0 {
			set["even.conf"] = []byte("only in even generations\n")
		}
		return set
	}
	for g := 1; g <= 6; g++ {
		set := genSet(g)
		res := mustPublish(t, p, Request{Items: set})
		if res.Generation != int64(g) {
			t.Fatalf("generation %d, want %d", res.Generation, g)
		}
		published[res.Generation] = set
	}
	// An orphan blob (say, from a marker publish that died before its
	// commit) is collected too.
	orphan := manifest.Hash([]byte("orphan"))
	if _, err := p.conn().Create(p.paths.Blob(orphan), []byte("orphan"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	res := mustPublish(t, p, Request{Items: genSet(7)})
	published[7] = genSet(7)
	if res.Generation != 7 {
		t.Fatal(res)
	}

	checkRetained := func(want []int64) {
		t.Helper()
		if h := historyList(t, p.conn(), p.paths); !slices.Equal(h, want) {
			t.Fatalf("history %v, want %v", h, want)
		}
		needed := map[string]bool{}
		for _, g := range want {
			for _, d := range published[g] {
				needed[manifest.Hash(d)] = true
			}
		}
		blobs, _, err := p.conn().Children(p.paths.Blobs())
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(blobs)
		if wantBlobs := slices.Sorted(maps.Keys(needed)); !slices.Equal(blobs, wantBlobs) {
			t.Fatalf("blob store holds %d blobs, want exactly the %d retained generations need", len(blobs), len(wantBlobs))
		}
		for _, g := range want {
			m, got, err := p.Read(ctx, g)
			if err != nil {
				t.Fatalf("retained generation %d unreadable: %v", g, err)
			}
			if m.Generation != g || !sameItems(got, published[g]) {
				t.Fatalf("generation %d read back differs from what was published", g)
			}
		}
		hist, err := p.History(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var gens []int64
		for _, m := range hist {
			gens = append(gens, m.Generation)
		}
		newestFirst := slices.Clone(want)
		slices.Reverse(newestFirst)
		if !slices.Equal(gens, newestFirst) {
			t.Fatalf("History() generations %v, want %v newest first", gens, want)
		}
	}
	checkRetained([]int64{5, 6, 7})
	if _, _, err := p.Read(ctx, 4); !errors.Is(err, ErrGenerationNotFound) {
		t.Fatalf("reading a generation past retention: %v", err)
	}

	// Rollback to 5: a new generation 8 with 5's content.
	before := treeSnapshot(t, p.conn(), "/hist", p.paths.Base())
	dry, err := p.Rollback(ctx, 5, Request{DryRun: true})
	if err != nil || !dry.DryRun || dry.Generation != 8 {
		t.Fatalf("dry-run rollback: %+v %v", dry, err)
	}
	if !equalSnap(before, treeSnapshot(t, p.conn(), "/hist", p.paths.Base())) {
		t.Fatal("dry-run rollback wrote")
	}
	if _, err := p.Rollback(ctx, 5, Request{ExpectGeneration: 6}); !errors.Is(err, ErrConflict) {
		t.Fatalf("rollback with a stale expectation: %v", err)
	}
	rb, err := p.Rollback(ctx, 5, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Generation != 8 || rb.Manifest.RollbackOf != 5 {
		t.Fatalf("rollback result %+v", rb)
	}
	published[8] = published[5]
	checkLive(t, p, 8, published[5])
	m, _, err := p.Current(ctx)
	if err != nil || m.RollbackOf != 5 {
		t.Fatalf("live manifest after rollback: %+v %v", m, err)
	}
	checkRetained([]int64{6, 7, 8})

	// Rolling back to the live content is unchanged; a generation past
	// retention cannot be rolled back to.
	if r, err := p.Rollback(ctx, 8, Request{}); err != nil || !r.Unchanged || r.Generation != 8 {
		t.Fatalf("rollback to the live content: %+v %v", r, err)
	}
	if _, err := p.Rollback(ctx, 2, Request{}); !errors.Is(err, ErrGenerationNotFound) {
		t.Fatalf("rollback past retention: %v", err)
	}
	if _, err := p.Rollback(ctx, 0, Request{}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("rollback to 0: %v", err)
	}
}

// TestGenerationsOnlyGoUp deletes a published root and publishes again: the
// history keeps the numbering going instead of restarting at 1.
func TestGenerationsOnlyGoUp(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/up")
	mustPublish(t, p, Request{Items: items(2, 10, "a")})
	mustPublish(t, p, Request{Items: items(2, 10, "b")})
	for _, n := range []string{"/up/item-00.conf", "/up/item-01.conf", "/up"} {
		if err := p.conn().Delete(n, -1); err != nil {
			t.Fatal(err)
		}
	}
	res := mustPublish(t, p, Request{Items: items(2, 10, "c")})
	if res.Generation != 3 {
		t.Fatalf("generation after the root was recreated: %d, want 3", res.Generation)
	}
	checkLive(t, p, 3, items(2, 10, "c"))
}

// TestHistoryDeletesInBatches checks the GC's batching: with a retention
// of 8 the history grows to 8 + 2 generations without a deletion, the
// publish that would make it 11 deletes down to 8, and every retained
// generation stays readable.
func TestHistoryDeletesInBatches(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const retention = 8
	p := newPub(t, c, "/batches", WithRetention(retention))
	want := func(from, to int64) []int64 {
		var gens []int64
		for g := from; g <= to; g++ {
			gens = append(gens, g)
		}
		return gens
	}
	for g := int64(1); g <= retention+retention/4; g++ {
		mustPublish(t, p, Request{Items: items(2, 100, fmt.Sprintf("g%d", g))})
		if h := historyList(t, p.conn(), p.paths); !slices.Equal(h, want(1, g)) {
			t.Fatalf("after generation %d: history %v, want every generation (no deletion before %d + %d)", g, h, retention, retention/4)
		}
	}
	res := mustPublish(t, p, Request{Items: items(2, 100, "last")})
	if h := historyList(t, p.conn(), p.paths); !slices.Equal(h, want(res.Generation-retention+1, res.Generation)) {
		t.Fatalf("after generation %d: history %v, want the last %d", res.Generation, h, retention)
	}
	for _, g := range want(res.Generation-retention+1, res.Generation) {
		if _, _, err := p.Read(ctx, g); err != nil {
			t.Fatalf("retained generation %d unreadable: %v", g, err)
		}
	}
	if _, _, err := p.Read(ctx, 1); !errors.Is(err, ErrGenerationNotFound) {
		t.Fatalf("generation 1 read after the batch: %v, want ErrGenerationNotFound", err)
	}
}

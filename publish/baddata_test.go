package publish

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// TestGenerationExhausted: a root at generation 2^63-1 (in its manifest, or
// only in its history) refuses every further publish, in every mode, with
// a clear error and without writing anything: the next generation would
// wrap to -2^63 (which the old code reported as a successful publish).
func TestGenerationExhausted(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/max")
	mustPublish(t, p, Request{Items: items(2, 10, "g1")})
	m, _, err := p.Current(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	huge := *m
	huge.Generation = math.MaxInt64
	if _, err := p.conn().Set("/max", huge.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	// A second root whose manifest is ordinary but whose history already
	// reached the top (a recreated root keeps its history).
	q := newPub(t, c, "/maxhist")
	mustPublish(t, q, Request{Items: items(1, 10, "h1")})
	hm, _, err := q.Current(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	top := *hm
	top.Generation = math.MaxInt64
	if _, err := q.conn().Create(q.paths.HistoryNode(math.MaxInt64), top.Encode(), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	before := treeSnapshot(t, p.conn(), "/max", "/maxhist", p.paths.Base(), q.paths.Base())
	other := items(3, 10, "next")
	for _, tc := range []struct {
		name string
		run  func() (*Result, error)
	}{
		{"Multi", func() (*Result, error) { return p.Publish(testCtx(t), Request{Items: other, Mode: manifest.ModeMulti}) }},
		{"Marker", func() (*Result, error) {
			return p.Publish(testCtx(t), Request{Items: other, Mode: manifest.ModeMarker})
		}},
		{"DryRun", func() (*Result, error) { return p.Publish(testCtx(t), Request{Items: other, DryRun: true}) }},
		{"ForceSame", func() (*Result, error) {
			return p.Publish(testCtx(t), Request{Items: items(2, 10, "g1"), Force: true})
		}},
		{"Rollback", func() (*Result, error) { return p.Rollback(testCtx(t), 1, Request{Force: true}) }},
		{"HistoryAtTop", func() (*Result, error) { return q.Publish(testCtx(t), Request{Items: other}) }},
		{"HistoryAtTopMarker", func() (*Result, error) {
			return q.Publish(testCtx(t), Request{Items: other, Mode: manifest.ModeMarker})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.run()
			if !errors.Is(err, ErrGenerationExhausted) {
				t.Fatalf("publish at generation 2^63-1: result %+v, error %v; want ErrGenerationExhausted", res, err)
			}
			if !strings.Contains(err.Error(), "9223372036854775807") || !strings.Contains(err.Error(), "no further generation") {
				t.Errorf("message does not say why: %v", err)
			}
		})
	}
	if after := treeSnapshot(t, p.conn(), "/max", "/maxhist", p.paths.Base(), q.paths.Base()); !maps.Equal(before, after) {
		t.Fatalf("a refused publish changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	// The same set is still "unchanged", not an error: nothing to write.
	res, err := p.Publish(testCtx(t), Request{Items: items(2, 10, "g1")})
	if err != nil || !res.Unchanged || res.Generation != math.MaxInt64 {
		t.Fatalf("unchanged publish at the top: %+v, %v", res, err)
	}
	if _, err := manifest.Decode(huge.Encode()); err != nil {
		t.Fatal(err)
	}
}

// TestTamperedItemRepaired: an item changed behind confpush's back with a
// plain ZooKeeper set is found by reads (which name it instead of
// answering from stored copies) and rewritten by the next publish of the
// same set (the old code compared manifests only and answered
// "unchanged"), with --force, in marker mode, and reported by a dry run
// without writing.
func TestTamperedItemRepaired(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/tamper")
	set := items(3, 50, "v1")
	mustPublish(t, p, Request{Items: set})
	tamper := func(name string) {
		t.Helper()
		if _, err := p.conn().Set(p.paths.Item(name), []byte("edited by hand "+secret), -1); err != nil {
			t.Fatal(err)
		}
	}

	tamper("item-01.conf")
	_, _, err := p.Read(testCtx(t), 0)
	var me *manifest.ItemMismatchError
	if !errors.As(err, &me) || me.Item != "item-01.conf" || me.Generation != 1 || !errors.Is(err, manifest.ErrTorn) {
		t.Fatalf("live read of a tampered root: %v, want an ItemMismatchError naming item-01.conf", err)
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "changed outside confpush") {
		t.Fatalf("message: %v", err)
	}

	before := treeSnapshot(t, p.conn(), "/tamper", p.paths.Base())
	res, err := p.Publish(testCtx(t), Request{Items: set, DryRun: true})
	if err != nil || res.Unchanged || !slices.Equal(res.Repaired, []string{"item-01.conf"}) {
		t.Fatalf("dry run over a tampered item: %+v, %v", res, err)
	}
	if after := treeSnapshot(t, p.conn(), "/tamper", p.paths.Base()); !maps.Equal(before, after) {
		t.Fatal("a dry run wrote")
	}

	for i, req := range []Request{
		{Items: set},
		{Items: set, Force: true},
		{Items: set, Mode: manifest.ModeMarker},
	} {
		if i > 0 {
			tamper("item-02.conf")
		}
		res := mustPublish(t, p, req)
		want := "item-01.conf"
		if i > 0 {
			want = "item-02.conf"
		}
		if res.Unchanged || !slices.Equal(res.Repaired, []string{want}) {
			t.Fatalf("publish %d of the same set over tampered %s: %+v", i, want, res)
		}
		checkLive(t, p, res.Generation, set)
	}
	// Nothing tampered: the same set is unchanged again.
	if res := mustPublish(t, p, Request{Items: set}); !res.Unchanged || len(res.Repaired) != 0 {
		t.Fatalf("clean root: %+v", res)
	}
}

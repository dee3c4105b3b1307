package publish

import (
	"errors"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/manifest"
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
	if _, err := p.conn.Set("/max", huge.Encode(), -1); err != nil {
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
	if _, err := q.conn.Create(q.paths.HistoryNode(math.MaxInt64), top.Encode(), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	before := treeSnapshot(t, p.conn, "/max", "/maxhist", p.paths.Base(), q.paths.Base())
	other := items(3, 10, "next")
	for _, tc := range []struct {
		name string
		run  func() (*Result, error)
	}{
		{"Multi", func() (*Result, error) { return p.Publish(testCtx(t), Request{Items: other, Mode: ModeMulti}) }},
		{"Marker", func() (*Result, error) { return p.Publish(testCtx(t), Request{Items: other, Mode: ModeMarker}) }},
		{"DryRun", func() (*Result, error) { return p.Publish(testCtx(t), Request{Items: other, DryRun: true}) }},
		{"ForceSame", func() (*Result, error) {
			return p.Publish(testCtx(t), Request{Items: items(2, 10, "g1"), Force: true})
		}},
		{"Rollback", func() (*Result, error) { return p.Rollback(testCtx(t), 1, Request{Force: true}) }},
		{"HistoryAtTop", func() (*Result, error) { return q.Publish(testCtx(t), Request{Items: other}) }},
		{"HistoryAtTopMarker", func() (*Result, error) {
			return q.Publish(testCtx(t), Request{Items: other, Mode: ModeMarker})
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
	if after := treeSnapshot(t, p.conn, "/max", "/maxhist", p.paths.Base(), q.paths.Base()); !maps.Equal(before, after) {
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

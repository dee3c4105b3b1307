package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReuseHeldAgreesWithLookup holds reuseHeld's walk of two sorted
// lists equal to what looking every name up in the held snapshot gives,
// over random pairs of sets (names kept, added, removed; contents kept,
// changed, moved to another name): every entry is the root's, an item's
// content is the held one exactly when the held snapshot has that name
// with the same sha256 and size, every other item is to be read, and the
// held names are shared exactly when the set of names is the same.
func TestReuseHeldAgreesWithLookup(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pool := []string{"a", "a.conf", "b", "c", "d.json", "e", "f-01", "f-02", "f-03", "g", "zz"}
	random := func(gen int64) *Snapshot {
		items := map[string][]byte{}
		for range r.IntN(len(pool) + 1) {
			items[pool[r.IntN(len(pool))]] = fmt.Appendf(nil, "content %d", r.IntN(4))
		}
		return newTestSnapshot(t, gen, items)
	}
	shared, reused := 0, 0
	for range 3000 {
		held, next := random(1), random(2)
		if r.IntN(3) == 0 {
			next = newTestSnapshot(t, 2, held.itemMap()) // the same names
		}
		for _, h := range []*Snapshot{held, nil} {
			names := next.names
			items, todo := reuseHeld(names, next.metas(), h)
			if len(items) != len(names) {
				t.Fatalf("%d entries for names %q", len(items), names)
			}
			sameSet := h != nil && slices.Equal(h.names, next.names)
			var wantTodo []int
			for i, name := range names {
				if items[i].meta != next.items[i].meta {
					t.Fatalf("entry %s is %v, want %v", name, items[i].meta, next.items[i].meta)
				}
				var hit bool
				if h != nil {
					if j, ok := h.index(name); ok && h.items[j].meta == items[i].meta {
						hit = true
						if &items[i].data[0] != &h.items[j].data[0] {
							t.Fatalf("item %s not reused from the held snapshot", name)
						}
					}
				}
				if !hit {
					wantTodo = append(wantTodo, i)
					if items[i].data != nil {
						t.Fatalf("item %s to read already has content %q", name, items[i].data)
					}
				}
			}
			if !slices.Equal(todo, wantTodo) {
				t.Fatalf("held %v, next %v: reads %v, want %v", h.itemMap(), next.itemMap(), todo, wantTodo)
			}
			if sameSet && len(names) > 0 {
				shared++
			}
			reused += len(names) - len(todo)
		}
	}
	if shared < 500 || reused < 2000 {
		t.Fatalf("only %d same name sets and %d reused items, want 500 and 2000", shared, reused)
	}
}

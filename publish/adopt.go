package publish

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/manifest"
)

// This file is Request.Adopt: the first generation of a root published
// over a key tree another tool wrote (confd's layout: a node with
// children is a directory, a leaf's data its value), without rewriting
// what is already there (docs/design.md, "Adopting a key tree").

// maxAdoptDiffs bounds the paths a refused adoption names.
const maxAdoptDiffs = 10

// checkAdopt runs step 3 for an adopting publish: the root must hold no
// manifest and no node named like the marker; the whole tree under it is
// walked, and every path of the set must be a leaf holding exactly the
// set's content.
func (p *Publisher) checkAdopt(ctx context.Context, st *state, hashed map[string]manifest.Item) error {
	if st.live != nil {
		return &InputError{Err: fmt.Errorf("root %s already holds a zkconf manifest (generation %d): only a root's first generation adopts the nodes under it; publish to it instead",
			p.paths.Root, st.live.Generation)}
	}
	if st.marker != nil {
		// A key named "invalid" written by another tool would be taken
		// for an abandoned marker and deleted by a plain publish.
		return &InputError{Err: fmt.Errorf("root %s has a child %q, the name of zkconf's marker: rename that key before adopting the tree (a publish would take it for an abandoned marker and delete it)",
			p.paths.Root, manifest.MarkerName)}
	}
	if len(st.children) == 0 {
		return p.listDirs(ctx, st.tree, treeDirs(hashed))
	}
	actual, err := p.walkActual(ctx, st.tree)
	if err != nil {
		return err
	}
	var differ []string
	for _, n := range slices.Sorted(maps.Keys(hashed)) {
		if it, ok := actual.items[n]; !ok || it != hashed[n] {
			differ = append(differ, n)
		}
	}
	if len(differ) > 0 {
		shown := differ[:min(len(differ), maxAdoptDiffs)]
		more := ""
		if len(differ) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(differ)-len(shown))
		}
		return &ConflictError{Reason: fmt.Sprintf("the nodes under root %s do not hold the set to adopt (changed since it was read?): %d paths differ (%s%s); read the tree again",
			p.paths.Root, len(differ), strings.Join(shown, ", "), more)}
	}
	st.adopted = actual
	return nil
}

// adoptBase is the base an adopting plan starts from: the walked items
// at the set's paths. The set's items are all there with their content
// (checkAdopt), so the plan writes none, and since no other node is in
// the base none is deleted.
func adoptBase(actual *actualTree, hashed map[string]manifest.Item) map[string]manifest.Item {
	base := make(map[string]manifest.Item, len(hashed))
	for n := range hashed {
		if it, ok := actual.items[n]; ok {
			base[n] = it
		}
	}
	return base
}

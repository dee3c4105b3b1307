package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/zkconf/zkconf/internal/textdiff"
	"github.com/zkconf/zkconf/manifest"
)

// SetDiff is the difference between two sets of items.
type SetDiff struct {
	// Added, Changed and Removed are the item paths, sorted.
	Added, Changed, Removed []string
	// Text is the unified diff of every differing item, in path order
	// ("" when the sets are equal); a binary item is one summary line.
	Text string
}

// Empty reports whether the two sets were equal.
func (d SetDiff) Empty() bool { return len(d.Added)+len(d.Changed)+len(d.Removed) == 0 }

// DiffSets compares two sets item by item, old on the "-" side of the
// unified diff; oldLabel and newLabel prefix the item paths in its
// headers.
func DiffSets(old, cur map[string][]byte, oldLabel, newLabel string) SetDiff {
	var d SetDiff
	var b strings.Builder
	names := slices.Sorted(maps.Keys(old))
	for n := range cur {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		o, inOld := old[n]
		c, inCur := cur[n]
		switch {
		case !inOld:
			d.Added = append(d.Added, n)
		case !inCur:
			d.Removed = append(d.Removed, n)
		case string(o) == string(c):
			continue
		default:
			d.Changed = append(d.Changed, n)
		}
		from, to := oldLabel+"/"+n, newLabel+"/"+n
		if !inOld {
			from = "/dev/null"
		}
		if !inCur {
			to = "/dev/null"
		}
		if isBinary(o) || isBinary(c) {
			fmt.Fprintf(&b, "Binary item %s differs (%d -> %d bytes)\n", n, len(o), len(c))
			continue
		}
		b.WriteString(textdiff.Unified(from, to, o, c))
	}
	d.Text = b.String()
	return d
}

func isBinary(b []byte) bool {
	return !utf8.Valid(b) || slices.Contains(b, 0)
}

// GenerationDiff is a generation's difference from the generation
// before it.
type GenerationDiff struct {
	// Against is the generation compared with (0: the empty set, for
	// generation 1).
	Against int64
	// Retained reports whether Against was retained (or is 0), so that
	// the diff was computed; SetDiff is empty when it was not.
	Retained bool
	SetDiff
}

// HistoryDiffs computes, for every generation of hist (as History
// returns it), its diff against the generation before it, read from the
// history and blob store. The oldest retained generation's predecessor
// may be gone: its entry is not Retained, and neither is one whose
// generations retention removed while they were read.
func (p *Publisher) HistoryDiffs(ctx context.Context, hist []*manifest.Manifest) (map[int64]GenerationDiff, error) {
	retained := map[int64]bool{}
	for _, m := range hist {
		retained[m.Generation] = true
	}
	contents := map[int64]map[string][]byte{0: {}}
	read := func(g int64) (map[string][]byte, error) {
		if c, ok := contents[g]; ok {
			return c, nil
		}
		_, items, err := p.Read(ctx, g)
		if err != nil {
			return nil, err
		}
		contents[g] = items
		return items, nil
	}
	out := map[int64]GenerationDiff{}
	for _, m := range hist {
		d := GenerationDiff{Against: m.Generation - 1}
		d.Retained = d.Against == 0 || retained[d.Against]
		if d.Retained {
			cur, err := read(m.Generation)
			if err == nil {
				var prev map[string][]byte
				if prev, err = read(d.Against); err == nil {
					d.SetDiff = DiffSets(prev, cur, fmt.Sprintf("gen-%d", d.Against), fmt.Sprintf("gen-%d", m.Generation))
				}
			}
			if errors.Is(err, ErrGenerationNotFound) {
				// Removed by retention while we read.
				d = GenerationDiff{Against: d.Against}
			} else if err != nil {
				return nil, err
			}
		}
		out[m.Generation] = d
	}
	return out, nil
}

// Generations lists the generations the history retains, ascending
// (none before the first publish). Every entry is a generation that was
// committed.
func (p *Publisher) Generations(ctx context.Context) ([]int64, error) {
	gens, _, err := p.historyGens(ctx) // its errors name the history node
	return gens, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// diffGenerations is `diff --from A --to B`: the unified diff between two
// generations, A on the "-" side. --to defaults to the live generation,
// --from to the generation before --to (--to − 1; generation 1 is compared
// with the empty set). Content is shown as `diff` shows it: the operator
// asked for it, like `get`.
func (a *app) diffGenerations(cmd *cobra.Command, from, to int64) error {
	if from < 0 || to < 0 {
		return usagef("--from and --to must be positive")
	}
	ctx, p, _, done, err := a.session(cmd)
	if err != nil {
		return err
	}
	defer done()
	var toItems map[string][]byte
	var m *manifest.Manifest
	if to == 0 {
		m, toItems, err = p.Read(ctx, 0)
	} else {
		m, toItems, err = p.Read(ctx, to)
	}
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	to = m.Generation
	defaulted := from == 0
	if defaulted {
		from = to - 1
	}
	fromItems := map[string][]byte{}
	if from > 0 {
		if _, fromItems, err = p.Read(ctx, from); err != nil {
			if defaulted {
				return fmt.Errorf("--from (default: --to − 1): %w", err)
			}
			return fmt.Errorf("--from: %w", err)
		}
	}
	added, changed, removed, text := diffSets(fromItems, toItems, fmt.Sprintf("gen-%d", from), fmt.Sprintf("gen-%d", to))
	a.emit(map[string]any{
		"root": p.Root(), "from": from, "to": to,
		"added": nonNil(added), "changed": nonNil(changed), "removed": nonNil(removed),
		"unchanged": len(added)+len(changed)+len(removed) == 0, "diff": text,
	}, func(w io.Writer) {
		if text == "" {
			fmt.Fprintf(w, "no differences between generation %d and generation %d of %s\n", from, to, p.Root())
			return
		}
		_, _ = io.WriteString(w, text)
	})
	return a.diffExit(len(added)+len(changed)+len(removed) == 0)
}

// genDiff is one history entry's difference from the generation before it.
type genDiff struct {
	against                 int64 // the generation compared with (0: the empty set)
	retained                bool  // against is retained (or 0), so the diff was computed
	added, changed, removed []string
	text                    string
}

func (d genDiff) json() map[string]any {
	obj := map[string]any{"against": d.against, "previous_retained": d.retained}
	if d.retained {
		obj["added"], obj["changed"], obj["removed"], obj["diff"] = nonNil(d.added), nonNil(d.changed), nonNil(d.removed), d.text
	}
	return obj
}

// historyDiffs computes `history --diff`: every retained generation
// against the generation before it (generation 1 against the empty set),
// read from the history and blob store. The oldest retained generation's
// predecessor may be gone: that entry says so.
func historyDiffs(ctx context.Context, p *publish.Publisher, hist []*manifest.Manifest) (map[int64]genDiff, error) {
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
	out := map[int64]genDiff{}
	for _, m := range hist {
		d := genDiff{against: m.Generation - 1}
		d.retained = d.against == 0 || retained[d.against]
		if d.retained {
			cur, err := read(m.Generation)
			if err == nil {
				var prev map[string][]byte
				if prev, err = read(d.against); err == nil {
					d.added, d.changed, d.removed, d.text = diffSets(prev, cur,
						fmt.Sprintf("gen-%d", d.against), fmt.Sprintf("gen-%d", m.Generation))
				}
			}
			if errors.Is(err, publish.ErrGenerationNotFound) {
				// Removed by retention while we read.
				d = genDiff{against: d.against}
			} else if err != nil {
				return nil, err
			}
		}
		out[m.Generation] = d
	}
	return out, nil
}

// printHistoryDiffs prints history --diff's entries after the table,
// newest first.
func printHistoryDiffs(w io.Writer, hist []*manifest.Manifest, diffs map[int64]genDiff) {
	for _, m := range hist {
		d := diffs[m.Generation]
		fmt.Fprintf(w, "\ngeneration %d", m.Generation)
		if m.RollbackOf > 0 {
			fmt.Fprintf(w, " (rollback of %d)", m.RollbackOf)
		}
		switch {
		case !d.retained:
			fmt.Fprintf(w, ": generation %d is no longer retained, no diff\n", d.against)
			continue
		case d.against == 0:
			fmt.Fprint(w, " against the empty set")
		default:
			fmt.Fprintf(w, " against generation %d", d.against)
		}
		fmt.Fprintf(w, ": %d added, %d changed, %d removed\n", len(d.added), len(d.changed), len(d.removed))
		_, _ = io.WriteString(w, d.text)
	}
}

package main

import (
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
	d := publish.DiffSets(fromItems, toItems, fmt.Sprintf("gen-%d", from), fmt.Sprintf("gen-%d", to))
	obj := diffJSON(d)
	obj["root"], obj["from"], obj["to"] = p.Root(), from, to
	a.emit(obj, func(w io.Writer) {
		if d.Empty() {
			fmt.Fprintf(w, "no differences between generation %d and generation %d of %s\n", from, to, p.Root())
			return
		}
		_, _ = io.WriteString(w, d.Text)
	})
	return a.diffExit(d.Empty())
}

// diffJSON is a set diff's fields for --json.
func diffJSON(d publish.SetDiff) map[string]any {
	return map[string]any{"added": nonNil(d.Added), "changed": nonNil(d.Changed), "removed": nonNil(d.Removed),
		"unchanged": d.Empty(), "diff": d.Text}
}

// genDiffJSON is a history entry's diff for history --diff --json.
func genDiffJSON(d publish.GenerationDiff) map[string]any {
	obj := map[string]any{"against": d.Against, "previous_retained": d.Retained}
	if d.Retained {
		obj["added"], obj["changed"], obj["removed"], obj["diff"] = nonNil(d.Added), nonNil(d.Changed), nonNil(d.Removed), d.Text
	}
	return obj
}

// printHistoryDiffs prints history --diff's entries after the table,
// newest first.
func printHistoryDiffs(w io.Writer, hist []*manifest.Manifest, diffs map[int64]publish.GenerationDiff) {
	for _, m := range hist {
		d := diffs[m.Generation]
		fmt.Fprintf(w, "\ngeneration %d", m.Generation)
		if m.RollbackOf > 0 {
			fmt.Fprintf(w, " (rollback of %d)", m.RollbackOf)
		}
		switch {
		case !d.Retained:
			fmt.Fprintf(w, ": generation %d is no longer retained, no diff\n", d.Against)
			continue
		case d.Against == 0:
			fmt.Fprint(w, " against the empty set")
		default:
			fmt.Fprintf(w, " against generation %d", d.Against)
		}
		fmt.Fprintf(w, ": %d added, %d changed, %d removed\n", len(d.Added), len(d.Changed), len(d.Removed))
		_, _ = io.WriteString(w, d.Text)
	}
}

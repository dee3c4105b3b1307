package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
)

func parseMode(s string) (manifest.Mode, error) {
	m, err := manifest.ParseMode(s)
	if err != nil {
		return m, usagef("--mode: %v", err)
	}
	return m, nil
}

func (a *app) publishCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish DIR | FILE...",
		Short: "Publish a directory or files as the root's next generation",
		Long: `Publish DIR's regular files (hidden ones skipped), or the FILEs given, as
the next generation of the root. Items are named by their path in DIR:
conf.d/site.conf is the file site.conf of the set's directory conf.d
(--flatten names it conf.d_site.conf instead, a flat set). A directory is
not an item: one that holds no file is noted and not published. FILEs are
named by their base name.

Editor and tool leftovers in DIR (app.conf~, #app.conf#, *.swp, *.tmp,
*.bak, ...) are skipped and named; --ignore GLOB skips more,
--no-default-ignore none of them. A symbolic link in DIR whose target
resolves outside DIR is refused (a link to /etc/shadow would publish it to
every host, and keep it in history) unless --follow-external-symlinks.

Everything is checked before anything is written: names, sizes, an empty set
(refused unless --allow-empty) and that .json, .yaml/.yml and .toml files
parse (--no-validate skips this). Identical content is a no-op ("unchanged") unless
--force. Sets too large for one transaction are published with the marker
protocol (--mode auto); --mode forces either protocol.

The set replaces the live one whole, so a publish that would remove live
items (a single file published, a file missing from DIR) is refused, exit 2,
listing them, unless --prune; --dry-run shows the same refusal. --message
stores who and why with the generation (shown by history).

--render-with AGENTCONFIG (repeatable) renders the set with the targets of
that agent configuration first, as the agents would render it ('confagent
render' without checks), and refuses it (exit 2, nothing written) when a
target fails, naming the configuration, the target and the template error.

With --wait, confpush then follows the agents' status nodes until every
registered agent (--all, the default) or at least --min N agents report the
new generation, showing progress on stderr; it exits 5 naming the agents
that failed (with their errors), left, or did not apply it within --timeout,
and prints the rollback command that undoes the publish. With --json the one
object printed holds the rollout as "rollout".

With --canary SELECTOR, --canary-percent P and/or --canary-agents ID,...
(ANDed) the set becomes the candidate of a canary rollout: the agents the
selection selects apply it, every other agent stays on the live (stable)
generation; finish it with 'confpush rollout promote' or 'abort'. A
selection that selects no expected agent is refused (exit 2) unless
--allow-empty-canary. While a rollout is in progress every publish,
rollback, put, delete and watch publish is refused (exit 4) unless
--supersede: a plain publish then ends the rollout, a canary replaces it.

With --auto (and --bake D) publish then drives the canary: it aborts as
soon as one canary agent fails on the candidate (exit 9) and promotes once
every expected selected agent applied it and stayed healthy for D (exit 0).
--steps 1%,10%,50% starts at the first percent (ANDed with --canary) and
widens step by step, baking each, then promotes. Progress goes to stderr,
one line per change; ctrl-C leaves the rollout as it is.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := parseMode(a.v.GetString("mode"))
			if err != nil {
				return err
			}
			if a.v.GetInt64("expect-generation") < 0 {
				return usagef("--expect-generation must not be negative")
			}
			// The session is established while the input is read and
			// checked; it is used only once the input passed. The
			// collector is relaxed before the dial allocates its buffers.
			settleGC := relaxGCForPublish()
			a.startDial(cmd)
			msg, msgErr := a.message()
			items, ignored, emptyDirs, err := loadInput(args, a.loadOptions(), a.validating(), a.v.GetBool("allow-empty"))
			a.ignored, a.emptyDirs = ignored, emptyDirs
			renderErr := a.renderWith(cmd, items)
			canary, canaryErr := a.canarySelection()
			var waitErr error
			if canary != nil && a.v.GetBool("wait") {
				waitErr = usagef("--wait does not apply to --canary (follow it with 'confpush rollout status')")
			}
			var rp *publish.RolloutPlan
			var planErr error
			if canaryErr == nil {
				canary, rp, planErr = a.driverPlan(canary)
			}
			if err := errlist.Join(msgErr, err, renderErr, canaryErr, waitErr, planErr); err != nil {
				a.early.abandon()
				return err
			}
			settleGC(items)
			a.prefetch = items
			ctx, p, cl, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			f, err := a.fleetOf(cl)
			if err != nil {
				return err
			}
			res, err := rollout.Start(ctx, p, f, publish.Request{
				Items: items, Mode: mode, ExpectGeneration: a.v.GetInt64("expect-generation"),
				Force: a.v.GetBool("force"), AllowEmpty: a.v.GetBool("allow-empty"),
				OverrideMarker: a.v.GetBool("override-marker"), DryRun: a.v.GetBool("dry-run"),
				Message: msg, NoRemove: !a.v.GetBool("prune"),
				Canary: canary, Supersede: a.v.GetBool("supersede"), RolloutPlan: rp,
				AllowOldAgents: a.v.GetBool("allow-old-agents"),
			}, a.v.GetBool("allow-empty-canary"))
			if err != nil {
				return err
			}
			if rp != nil {
				return a.drive(cmd, p, f, res, *canary, rp, msg)
			}
			return a.reportAndWait(ctx, cmd, p, cl, res, 0)
		},
	}
	f := cmd.Flags()
	f.Bool("wait", false, "after the commit, wait until the agents applied the generation (see --all, --min)")
	a.rolloutFlags(cmd)
	f.Bool("dry-run", false, "show what would change; write nothing")
	f.Bool("force", false, "publish a new generation even if the content is unchanged")
	f.Bool("allow-empty", false, "allow publishing a set with no items")
	f.Int64("expect-generation", 0, "fail (exit 3) unless the live generation is this one (0: no check)")
	f.String("mode", "auto", "commit protocol: auto, multi or marker")
	f.Bool("override-marker", false, "take over the marker of a live marker-mode publish")
	validateFlags(cmd)
	f.Bool("flatten", false, "name the files of sub-directories dir_file (a flat set) instead of by their path dir/file")
	inputFlags(cmd)
	f.Bool("prune", false, "allow the publish to remove live items missing from the set (refused otherwise, exit 2)")
	renderWithFlag(cmd)
	messageFlag(cmd)
	canaryFlags(cmd)
	driverFlags(cmd)
	supersedeFlag(cmd)
	allowOldAgentsFlag(cmd)
	return cmd
}

func (a *app) rollbackCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollback --to G",
		Short: "Publish generation G's content as a new generation",
		Long: `Publish the content of retained generation G as the root's next
generation (generations only go up; the new manifest records rollback_of G).
Rolling back to content identical to the live one is "unchanged" unless --force.
A rollback restores G's whole set: items added since G are removed (no
--prune needed). Without --message the generation's message is "rollback
to generation G". --wait follows the rollout as for publish.`,
		Args: generationAsFlag,
		RunE: func(cmd *cobra.Command, _ []string) error {
			to := a.v.GetInt64("to")
			if to < 1 {
				return usagef("--to G is required (a generation number, see 'confpush history')")
			}
			mode, err := parseMode(a.v.GetString("mode"))
			if err != nil {
				return err
			}
			msg, err := a.message()
			if err != nil {
				return err
			}
			ctx, p, cl, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			res, err := p.Rollback(ctx, to, publish.Request{
				Mode: mode, ExpectGeneration: a.v.GetInt64("expect-generation"),
				Force: a.v.GetBool("force"), OverrideMarker: a.v.GetBool("override-marker"),
				DryRun: a.v.GetBool("dry-run"), Message: msg, Supersede: a.v.GetBool("supersede"),
				AllowOldAgents: a.v.GetBool("allow-old-agents"),
			})
			if err != nil {
				return err
			}
			return a.reportAndWait(ctx, cmd, p, cl, res, to)
		},
	}
	f := cmd.Flags()
	f.Int64("to", 0, "generation to roll back to")
	f.Bool("wait", false, "after the commit, wait until the agents applied the generation (see --all, --min)")
	a.rolloutFlags(cmd)
	f.Bool("dry-run", false, "show what would change; write nothing")
	f.Bool("force", false, "publish even if the content equals the live one")
	f.Int64("expect-generation", 0, "fail (exit 3) unless the live generation is this one (0: no check)")
	f.String("mode", "auto", "commit protocol: auto, multi or marker")
	f.Bool("override-marker", false, "take over the marker of a live marker-mode publish")
	messageFlag(cmd)
	supersedeFlag(cmd)
	allowOldAgentsFlag(cmd)
	return cmd
}

// reportResult prints a publish or rollback result.
func (a *app) reportResult(root string, res *publish.Result, rollbackOf int64) {
	obj := map[string]any{
		"root": root, "generation": res.Generation, "zxid": res.Zxid, "publish_id": res.PublishID,
		"mode": res.Mode, "unchanged": res.Unchanged, "dry_run": res.DryRun,
		"added": nonNil(res.Added), "changed": nonNil(res.Changed), "removed": nonNil(res.Removed),
		"recovered": res.Recovered,
	}
	if res.TookOver != "" {
		obj["took_over"] = res.TookOver
	}
	if len(res.Repaired) > 0 {
		obj["repaired"] = res.Repaired
	}
	if res.Manifest != nil {
		obj["items"] = len(res.Manifest.Items)
		obj["bytes"] = res.Manifest.TotalSize()
		obj["message"] = res.Manifest.Message
	}
	if rollbackOf > 0 {
		obj["rollback_of"] = rollbackOf
	}
	var canary *manifest.Selection
	if res.Manifest != nil && res.Manifest.Candidate != nil {
		canary = res.Manifest.Candidate
		obj["canary"] = map[string]any{"selector": canary.Selector, "percent": canary.Percent}
	}
	if a.ignored != nil {
		obj["ignored"] = a.ignored
	}
	if a.emptyDirs != nil {
		obj["empty_dirs"] = a.emptyDirs
	}
	if len(res.Strays) > 0 {
		obj["strays"] = res.Strays
	}
	a.emit(obj, func(w io.Writer) {
		if res.TookOver != "" {
			fmt.Fprintln(w, res.TookOver)
		}
		ignoredLine(w, a.ignored, a.emptyDirs)
		switch {
		case res.Unchanged:
			fmt.Fprintf(w, "unchanged at generation %d (%s)\n", res.Generation, root)
			return
		case res.DryRun && canary != nil:
			fmt.Fprintf(w, "dry run: would start a canary rollout on %s: candidate generation %d for selection %s (%s mode)",
				root, res.Generation, publish.DescribeSelection(*canary), res.Mode)
		case canary != nil:
			fmt.Fprintf(w, "started a canary rollout on %s: candidate generation %d for selection %s (%s mode, zxid %#x)",
				root, res.Generation, publish.DescribeSelection(*canary), res.Mode, res.Zxid)
		case res.DryRun:
			fmt.Fprintf(w, "dry run: would publish generation %d to %s (%s mode)", res.Generation, root, res.Mode)
		default:
			fmt.Fprintf(w, "published generation %d to %s (%s mode, zxid %#x)", res.Generation, root, res.Mode, res.Zxid)
		}
		if rollbackOf > 0 {
			fmt.Fprintf(w, ", content of generation %d", rollbackOf)
		}
		fmt.Fprintf(w, ": %d added, %d changed, %d removed\n", len(res.Added), len(res.Changed), len(res.Removed))
		for _, n := range res.Added {
			fmt.Fprintf(w, "  + %s\n", n)
		}
		for _, n := range res.Changed {
			fmt.Fprintf(w, "  ~ %s\n", n)
		}
		for _, n := range res.Removed {
			fmt.Fprintf(w, "  - %s\n", n)
		}
		for _, n := range res.Repaired {
			fmt.Fprintf(w, "  ! %s did not match the manifest (changed outside confpush): rewritten\n", n)
		}
		for _, n := range res.Strays {
			fmt.Fprintf(w, "  ? %s was not written by confpush: kept, with the directories above it that the set no longer has\n", n)
		}
		if res.Recovered {
			fmt.Fprintln(w, "  (the connection was lost during the commit; its outcome was verified)")
		}
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (a *app) diffCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff DIR | FILE... | --gen G | --from A --to B",
		Short: "Show the unified diff between the live set and a directory or generation, or between two generations",
		Long: `Show what publishing DIR (or the FILEs) would change in the live set, as
a unified diff per item (live on the "-" side). With --gen G, show what a
rollback to generation G would change. With --from A and/or --to B, show
what changed from generation A to generation B (--to defaults to the live
generation, --from to the generation before --to). Binary items are
reported, not diffed. Items that 'publish' would refuse as invalid .json,
.yaml/.yml or .toml are named on stderr as warnings (--no-validate: not
checked); the diff is shown all the same.
The exit code is 0 whether or not there are differences; with --exit-code
(a CI drift check) it is 10 when there are, the output unchanged.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			gen := a.v.GetInt64("gen")
			if from, to := a.v.GetInt64("from"), a.v.GetInt64("to"); from != 0 || to != 0 {
				if gen != 0 || len(args) > 0 {
					return usagef("--from/--to compare two generations: give no DIR, FILEs or --gen with them")
				}
				return a.diffGenerations(cmd, from, to)
			}
			switch {
			case gen < 0:
				return usagef("--gen must be positive")
			case gen > 0 && len(args) > 0:
				return usagef("give either DIR/FILEs or --gen, not both")
			case gen == 0 && len(args) == 0:
				return usagef("give DIR, FILEs or --gen G")
			}
			var local map[string][]byte
			if gen == 0 {
				var err error
				var ignored, emptyDirs []string
				if local, ignored, emptyDirs, err = loadInput(args, a.loadOptions(), false, true); err != nil {
					return err
				}
				a.ignored, a.emptyDirs = ignored, emptyDirs
			}
			invalid := a.syntaxProblems(local)
			if len(invalid) > 0 && !a.json() {
				for _, pr := range invalid {
					fmt.Fprintf(a.stderr, "warning: publish would refuse this: %s\n", pr)
				}
			}
			ctx, p, _, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			var liveGen int64
			live := map[string][]byte{}
			m, items, err := p.Read(ctx, 0)
			switch {
			case errors.Is(err, publish.ErrNotPublished):
			case err != nil:
				return err
			default:
				liveGen, live = m.Generation, items
			}
			against, newSide := "local", "local"
			if gen > 0 {
				if _, local, err = p.Read(ctx, gen); err != nil {
					return err
				}
				against, newSide = fmt.Sprintf("generation %d", gen), fmt.Sprintf("gen-%d", gen)
			}
			d := publish.DiffSets(live, local, fmt.Sprintf("live(gen-%d)", liveGen), newSide)
			obj := diffJSON(d)
			obj["root"], obj["live_generation"], obj["against"] = p.Root(), liveGen, against
			if len(invalid) > 0 {
				obj["invalid"] = invalid
			}
			if a.ignored != nil {
				obj["ignored"] = a.ignored
			}
			if a.emptyDirs != nil {
				obj["empty_dirs"] = a.emptyDirs
			}
			if !a.json() {
				ignoredLine(a.stderr, a.ignored, a.emptyDirs)
			}
			a.emit(obj, func(w io.Writer) {
				if d.Empty() {
					fmt.Fprintf(w, "no differences between live generation %d of %s and %s\n", liveGen, p.Root(), against)
					return
				}
				_, _ = io.WriteString(w, d.Text)
			})
			return a.diffExit(d.Empty())
		},
	}
	cmd.Flags().Int64("gen", 0, "compare the live set with this generation")
	cmd.Flags().Bool("exit-code", false, "exit 10 when there are differences (0 when none), for a CI drift check")
	cmd.Flags().Int64("from", 0, "compare generation --from (default: --to − 1) with generation --to")
	cmd.Flags().Int64("to", 0, "with --from: the newer side (default: the live generation)")
	cmd.Flags().Bool("flatten", false, "name the files of sub-directories dir_file (a flat set) instead of by their path dir/file")
	inputFlags(cmd)
	validateFlags(cmd)
	return cmd
}

func (a *app) getCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get [ITEM]",
		Short: "Print an item's content, or list the items of a generation",
		Long: `Without ITEM, list the live generation's items (or generation --gen G's)
with their sizes and sha256. With ITEM, print its content as stored (or, with
--json, in a JSON object: "content" for UTF-8 text, "content_base64" else).
The live set is read with manifest verification: never a torn set.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gen := a.v.GetInt64("gen")
			if gen < 0 {
				return usagef("--gen must be positive")
			}
			ctx, p, _, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			m, items, err := p.Read(ctx, gen)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				var list []map[string]any
				for _, n := range m.Names() {
					it := m.Items[n]
					list = append(list, map[string]any{"name": n, "size": it.Size, "sha256": it.SHA256})
				}
				a.emit(map[string]any{"root": p.Root(), "generation": m.Generation, "published_at": m.PublishedAt,
					"publisher": m.Publisher, "items": nonNilMaps(list)}, func(w io.Writer) {
					fmt.Fprintf(w, "generation %d of %s, published %s by %s (%s mode)\n", m.Generation, p.Root(),
						m.PublishedAt.Format(time.RFC3339), m.Publisher, m.Mode)
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					for _, n := range m.Names() {
						fmt.Fprintf(tw, "%s\t%d\t%s\n", n, m.Items[n].Size, m.Items[n].SHA256)
					}
					_ = tw.Flush()
				})
				return nil
			}
			name := args[0]
			data, ok := items[name]
			if !ok {
				return fmt.Errorf("item %q is not in generation %d of %s", name, m.Generation, p.Root())
			}
			if a.json() {
				obj := map[string]any{"root": p.Root(), "generation": m.Generation, "item": name,
					"size": len(data), "sha256": manifest.Hash(data)}
				if utf8.Valid(data) {
					obj["content"] = string(data)
				} else {
					obj["content_base64"] = base64.StdEncoding.EncodeToString(data)
				}
				a.emit(obj, nil)
				return nil
			}
			_, err = a.stdout.Write(data)
			return err
		},
	}
	cmd.Flags().Int64("gen", 0, "read this generation instead of the live one")
	return cmd
}

func nonNilMaps(s []map[string]any) []map[string]any {
	if s == nil {
		return []map[string]any{}
	}
	return s
}

func (a *app) historyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history [PATH]",
		Short: "List the retained generations, newest first",
		Long: `List the retained generations of the root, newest first. With --diff, each
generation is followed by its unified diff against the generation before it
(as 'diff --to G' shows it). With PATH (an item path, or a directory of
the set: conf.d/site.conf, conf.d), only the generations that added,
changed or removed that item, or an item below that directory, compared
with the retained generation before them (the oldest retained one: that
hold it).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var path string
			if len(args) == 1 {
				path = strings.TrimSuffix(args[0], "/")
				if err := manifest.ValidatePath(path); err != nil {
					return usagef("history: %v", err)
				}
			}
			ctx, p, _, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			hist, err := p.History(ctx)
			if err != nil {
				return err
			}
			all := hist
			if path != "" {
				hist = touching(hist, path)
			}
			var liveGen int64
			if m, _, err := p.Current(ctx); err == nil {
				liveGen = m.Generation
			} else if !errors.Is(err, publish.ErrNotPublished) {
				return err
			}
			var diffs map[int64]publish.GenerationDiff
			if a.v.GetBool("diff") {
				// Against the generation before each, retained or not
				// in the PATH's list.
				if diffs, err = p.HistoryDiffs(ctx, all); err != nil {
					return err
				}
			}
			var gens []map[string]any
			for _, m := range hist {
				g := map[string]any{"generation": m.Generation, "publish_id": m.PublishID,
					"published_at": m.PublishedAt, "publisher": m.Publisher, "mode": m.Mode,
					"items": len(m.Items), "bytes": m.TotalSize(), "live": m.Generation == liveGen}
				if m.RollbackOf > 0 {
					g["rollback_of"] = m.RollbackOf
				}
				_, rf := historyRolloutNotes(m)
				maps.Copy(g, rf)
				g["message"] = m.Message
				if d, ok := diffs[m.Generation]; ok {
					g["diff"] = genDiffJSON(d)
				}
				gens = append(gens, g)
			}
			obj := map[string]any{"root": p.Root(), "live_generation": liveGen, "generations": nonNilMaps(gens)}
			if path != "" {
				obj["path"] = path
			}
			a.emit(obj, func(w io.Writer) {
				switch {
				case len(hist) == 0 && path != "":
					fmt.Fprintf(w, "no retained generation of %s changed %s\n", p.Root(), path)
					return
				case len(hist) == 0:
					fmt.Fprintf(w, "no history for %s\n", p.Root())
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GEN\tPUBLISHED\tPUBLISHER\tMODE\tITEMS\tBYTES\tNOTE\tMESSAGE")
				for _, m := range hist {
					var notes []string
					if m.Generation == liveGen {
						notes = append(notes, "live")
					}
					if m.RollbackOf > 0 {
						notes = append(notes, fmt.Sprintf("rollback of %d", m.RollbackOf))
					}
					rn, _ := historyRolloutNotes(m)
					notes = append(notes, rn...)
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", m.Generation, m.PublishedAt.Format(time.RFC3339),
						m.Publisher, m.Mode, len(m.Items), m.TotalSize(), strings.Join(notes, ", "), historyMessage(m.Message))
				}
				_ = tw.Flush()
				if diffs != nil {
					printHistoryDiffs(w, hist, diffs)
				}
			})
			return nil
		},
	}
	cmd.Flags().Bool("diff", false, "show each generation's diff against the generation before it")
	return cmd
}

// touching keeps the generations of hist (newest first) that added,
// changed or removed the item path, or an item below it as a directory,
// compared with the next older generation of hist; the oldest when it
// holds any.
func touching(hist []*manifest.Manifest, path string) []*manifest.Manifest {
	under := func(m *manifest.Manifest) map[string]manifest.Item {
		out := map[string]manifest.Item{}
		for n, it := range m.Items {
			if n == path || strings.HasPrefix(n, path+"/") {
				out[n] = it
			}
		}
		return out
	}
	var out []*manifest.Manifest
	for i, m := range hist {
		cur := under(m)
		if i+1 < len(hist) {
			if !maps.Equal(cur, under(hist[i+1])) {
				out = append(out, m)
			}
		} else if len(cur) > 0 {
			out = append(out, m)
		}
	}
	return out
}

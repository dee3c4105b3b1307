package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// canaryFlags registers publish's canary flags.
func canaryFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("canary", "", "publish as the candidate of a canary rollout for the agents this label selector selects (zone=a,role=web; zone in (a,b); zone!=b)")
	f.Float64("canary-percent", 0, "canary: only the agents whose stable id bucket is below this percent (0.01-100; 0 is refused), ANDed with --canary")
	f.StringSlice("canary-agents", nil, "canary: only these agent ids (sugar for 'agent in (...)', ANDed with --canary)")
	f.Bool("allow-empty-canary", false, "start a canary even when its selection selects no expected agent")
}

// supersedeFlag registers --supersede on the commands that publish.
func supersedeFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("supersede", false, "publish even though a canary rollout is in progress: a plain publish ends it (C+1 for everyone), a canary replaces its candidate")
}

// allowOldAgentsFlag registers --allow-old-agents on the commands that
// publish.
func allowOldAgentsFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("allow-old-agents", false, "publish a set with item paths (manifest format 2) even though agents of the root report reading only format 1 (they keep their generation and report the refusal)")
}

// canarySelection builds the selection from the canary flags (nil when
// none is given), reporting every problem at once.
func (a *app) canarySelection() (*manifest.Selection, error) {
	selector := strings.TrimSpace(a.v.GetString("canary"))
	percent := a.v.GetFloat64("canary-percent")
	ids := a.v.GetStringSlice("canary-agents")
	// A flag given with a value that selects nothing (--canary-percent 0,
	// --canary-agents '', --canary '') would otherwise leave no selection:
	// a plain publish to the whole fleet, the opposite of what was asked.
	var errs []error
	if a.v.IsSet("canary") && selector == "" {
		errs = append(errs, errors.New("--canary: empty selector: give one (zone=a), or drop the flag to publish to every agent"))
	}
	if a.v.IsSet("canary-percent") && percent == 0 {
		errs = append(errs, errors.New("--canary-percent 0 selects no agent: give a percent in (0, 100], or drop the flag to publish to every agent"))
	}
	if a.v.IsSet("canary-agents") && len(ids) == 0 {
		errs = append(errs, errors.New("--canary-agents: no agent id given: name at least one, or drop the flag to publish to every agent"))
	}
	if len(errs) > 0 {
		return nil, usageError{fmt.Errorf("canary: %w", errlist.Join(errs...))}
	}
	if selector == "" && percent == 0 && len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > 0 {
		for _, id := range ids {
			if id == "" || strings.ContainsAny(id, " ,()") {
				errs = append(errs, fmt.Errorf("--canary-agents: bad agent id %q", id))
			}
		}
		in := fmt.Sprintf("%s in (%s)", manifest.LabelAgent, strings.Join(ids, ","))
		if selector == "" {
			selector = in
		} else {
			selector += "," + in
		}
	}
	sel := manifest.Selection{Selector: selector, Percent: percent}
	if err := sel.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, usageError{fmt.Errorf("canary: %w", errlist.Join(errs...))}
	}
	return &sel, nil
}

// emptyCanaryError refuses a canary whose selection selects no expected
// agent: a typo in a selector must not become a rollout nobody follows.
type emptyCanaryError struct {
	sel      manifest.Selection
	expected int
}

func (e emptyCanaryError) Error() string {
	return fmt.Sprintf("canary selection %s selects none of the %d expected agents (judged by the labels they report); nothing written. Check the selector with 'confpush status', or start it anyway with --allow-empty-canary",
		publish.DescribeSelection(e.sel), e.expected)
}

// checkCanarySelects refuses a selection that selects no expected agent
// unless --allow-empty-canary.
func (a *app) checkCanarySelects(ctx context.Context, cl *zkclient.Client, sel manifest.Selection) error {
	if a.v.GetBool("allow-empty-canary") {
		return nil
	}
	f, err := a.fleetOf(cl)
	if err != nil {
		return err
	}
	agents, err := f.List(ctx)
	if err != nil {
		return err
	}
	c := &manifest.Canary{Selection: sel}
	expected := 0
	for _, ra := range fleet.ClassifyRollout(agents, 0, "", c) {
		if ra.Expected {
			expected++
			if ra.Selected {
				return nil
			}
		}
	}
	return emptyCanaryError{sel: sel, expected: expected}
}

func (a *app) rolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show, widen, promote or abort the root's canary rollout",
		Long: `A canary rollout ('confpush publish --canary SELECTOR DIR') exposes a new
set, the candidate generation, to the agents its selection selects; every
other agent stays on the stable generation. 'rollout status' shows it and
where each agent is; 'rollout widen' selects more agents; 'rollout promote'
publishes the candidate's content for everyone, 'rollout abort' the stable
content (both as a new generation above the candidate, so no host goes
backwards). Promote and abort work from any host: a publisher that died
mid-rollout leaves a rollout anyone can finish.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.rolloutStatusCommand(), a.rolloutEndCommand(publish.EventPromote), a.rolloutEndCommand(publish.EventAbort),
		a.rolloutWidenCommand())
	return cmd
}

func (a *app) rolloutStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the rollout in progress and where each agent is",
		Long: `Show the root's canary rollout: its id, the candidate and stable
generations, the selection, who started it and when, whether a driver
(--auto) is alive, and per agent whether it is selected, the generation it
reports and its state: stable, candidate (selected, not yet applied),
applied (the candidate applied and ready), failing (rejected it, or a check
or reload fails on it) or gone (expected, no trusted status node), with the
REASON of a failing or gone agent (its error, its failing target, its
missing or untrusted status node). Without a rollout it says so (exit 0),
also on a root never published; a root that does not exist is an error
(exit 2). Labels are what agents claim: see docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, p, cl, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			if err := a.requireRoot(ctx, cl); err != nil {
				return err
			}
			rs, err := p.Rollout(ctx)
			if errors.Is(err, publish.ErrNotPublished) {
				rs, err = &publish.RolloutState{Root: p.Root(), Stable: &manifest.Manifest{}}, nil
			}
			if err != nil {
				return err
			}
			var ras []fleet.RolloutAgent
			var reasons map[string]string
			if rs.Canary != nil {
				f, err := a.fleetOf(cl)
				if err != nil {
					return err
				}
				agents, err := f.List(ctx)
				if err != nil {
					return err
				}
				ras = fleet.ClassifyRollout(agents, rs.Stable.Generation, rs.Stable.Incarnation, rs.Canary)
				reasons = rolloutReasons(agents, ras, rs.Canary.Generation)
			}
			obj, text := rolloutReport(rs, ras, reasons)
			a.emit(obj, text)
			return nil
		},
	}
}

// rolloutReport renders a rollout for rollout status and status, with
// why each failing or gone agent is (reasons, by agent id).
func rolloutReport(rs *publish.RolloutState, ras []fleet.RolloutAgent, reasons map[string]string) (map[string]any, func(io.Writer)) {
	obj := map[string]any{"root": rs.Root, "in_progress": rs.Canary != nil, "stable_generation": rs.Stable.Generation}
	if rs.Leftover {
		obj["leftover_candidate"] = true
	}
	if rs.Record != nil {
		obj["record"] = rs.Record
	}
	if rs.Canary == nil {
		return obj, func(w io.Writer) {
			if rs.Stable.Generation == 0 {
				fmt.Fprintf(w, "no canary rollout in progress on %s (never published)\n", rs.Root)
				return
			}
			fmt.Fprintf(w, "no canary rollout in progress on %s (generation %d is live)\n", rs.Root, rs.Stable.Generation)
		}
	}
	c := rs.Canary
	counts := map[string]int{}
	agents := make([]map[string]any, 0, len(ras))
	for _, ra := range ras {
		counts[ra.State]++
		ag := map[string]any{"id": ra.ID, "selected": ra.Selected, "generation": ra.Generation,
			"state": ra.State, "expected": ra.Expected, "labels": ra.Labels}
		if why := reasons[ra.ID]; why != "" {
			ag["reason"] = why
		}
		agents = append(agents, ag)
	}
	age := time.Since(c.StartedAt).Round(time.Second)
	obj["rollout_id"], obj["candidate_generation"] = c.RolloutID, c.Generation
	obj["selector"], obj["percent"] = c.Selector, c.Percent
	obj["publisher"], obj["started_at"], obj["age_seconds"] = c.Publisher, c.StartedAt, int64(age.Seconds())
	obj["driver_alive"], obj["agents"], obj["counts"] = rs.DriverAlive, agents, counts
	return obj, func(w io.Writer) {
		driver := "none (driven by hand: promote or abort it)"
		if rs.DriverAlive {
			driver = "alive"
		} else if rs.Record != nil && rs.Record.Auto {
			driver = "gone (its process died: promote or abort it)"
		}
		fmt.Fprintf(w, "rollout %s on %s: candidate generation %d over stable %d\n", c.RolloutID, rs.Root, c.Generation, rs.Stable.Generation)
		fmt.Fprintf(w, "selection %s, started by %s %v ago, driver %s\n", publish.DescribeSelection(c.Selection), c.Publisher, age, driver)
		if rs.Record != nil && rs.Record.Message != "" {
			fmt.Fprintf(w, "message: %s\n", historyMessage(rs.Record.Message))
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tSELECTED\tGEN\tSTATE\tREASON")
		for _, ra := range ras {
			fmt.Fprintf(tw, "%s\t%v\t%d\t%s\t%s\n", ra.ID, ra.Selected, ra.Generation, ra.State, oneLine(reasons[ra.ID]))
		}
		_ = tw.Flush()
		fmt.Fprintf(w, "%d applied, %d candidate, %d failing, %d gone, %d stable\n", counts[fleet.StateApplied],
			counts[fleet.StateCandidate], counts[fleet.StateFailing], counts[fleet.StateGone], counts[fleet.StateStable])
	}
}

// currentRollout returns the id of the rollout to act on: --rollout, else
// the one in progress.
func (a *app) currentRollout(ctx context.Context, p *publish.Publisher) (string, error) {
	if id := a.v.GetString("rollout"); id != "" {
		return id, nil
	}
	rs, err := p.Rollout(ctx)
	if err != nil {
		return "", err
	}
	if rs.Canary == nil {
		return "", &publish.RolloutConflictError{Root: p.Root()}
	}
	return rs.Canary.RolloutID, nil
}

func (a *app) rolloutEndCommand(kind string) *cobra.Command {
	short, long := "Publish the candidate's content for every agent", `Promote the rollout in progress (or --rollout ID): its candidate's content
is published as the next generation (above the candidate, recording
promote_of), for every agent; canary hosts render nothing new. Refused (exit
3) when the root carries no rollout or another one. --wait follows the
agents as for publish. Without --message the generation records the
rollout's message followed by "(promoted by hand by USER)".`
	if kind == publish.EventAbort {
		short, long = "Publish the stable content again for every agent", `Abort the rollout in progress (or --rollout ID): the stable generation's
content is published as the next generation (above the candidate, recording
abort_of), so canary hosts go back to the stable content without any host's
generation going backwards, and the others render nothing new. Refused
(exit 3) when the root carries no rollout or another one. --wait follows the
agents as for publish. Without --message the generation records the
rollout's message followed by "(aborted by hand by USER)".`
	}
	cmd := &cobra.Command{
		Use: kind, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			id, err := a.currentRollout(ctx, p)
			if err != nil {
				return err
			}
			if msg == "" {
				msg = endMessage(ctx, p, kind, id)
			}
			req := publish.Request{Mode: mode, Message: msg, DryRun: a.v.GetBool("dry-run"), AllowOldAgents: a.v.GetBool("allow-old-agents")}
			var res *publish.Result
			if kind == publish.EventPromote {
				res, err = p.Promote(ctx, id, req)
			} else {
				res, err = p.Abort(ctx, id, req)
			}
			if err != nil {
				return err
			}
			return a.reportAndWait(ctx, cmd, p, cl, res, 0)
		},
	}
	f := cmd.Flags()
	f.String("rollout", "", "the rollout id to end (default: the one in progress); refused when the root carries another")
	f.Bool("wait", false, "after the commit, wait until the agents applied the generation (see --all, --min)")
	a.rolloutFlags(cmd)
	f.Bool("dry-run", false, "show what would change; write nothing")
	f.String("mode", "auto", "commit protocol: auto, multi or marker")
	messageFlag(cmd)
	allowOldAgentsFlag(cmd)
	return cmd
}

func (a *app) rolloutWidenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "widen --canary-percent P",
		Short: "Select more agents for the rollout in progress",
		Long: `Widen the rollout in progress (or --rollout ID) to --canary-percent P
(keeping its selector): one compare-and-swap of the root's data. The same
agents stay in as P grows; a lower percent is refused (exit 2), since hosts
already on the candidate would be asked to go back; --canary-percent 100
selects every agent the selector selects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			percent := a.v.GetFloat64("canary-percent")
			msg, msgErr := a.message()
			var pErr error
			if !(percent > 0 && percent <= 100) { // NaN too
				pErr = usagef("--canary-percent P is required, in (0, 100]")
			}
			if err := errlist.Join(msgErr, pErr); err != nil {
				return err
			}
			ctx, p, _, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			rs, err := p.Rollout(ctx)
			if err != nil {
				return err
			}
			if rs.Canary == nil {
				return &publish.RolloutConflictError{Root: p.Root()}
			}
			id := rs.Canary.RolloutID
			if want := a.v.GetString("rollout"); want != "" && want != id {
				return &publish.RolloutConflictError{Root: p.Root(), Want: want, Found: id}
			}
			next := manifest.Selection{Selector: rs.Canary.Selector, Percent: percent}
			if percent == 100 && next.Selector != "" {
				next.Percent = 0
			}
			res, err := p.Widen(ctx, id, next, msg)
			if err != nil {
				return err
			}
			a.emit(map[string]any{"root": p.Root(), "rollout_id": id, "candidate_generation": res.Generation,
				"selector": next.Selector, "percent": next.Percent}, func(w io.Writer) {
				fmt.Fprintf(w, "widened rollout %s on %s to %s (candidate generation %d)\n", id, p.Root(), publish.DescribeSelection(next), res.Generation)
			})
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64("canary-percent", 0, "the new percent (at least the current one)")
	f.String("rollout", "", "the rollout id to widen (default: the one in progress)")
	messageFlag(cmd)
	return cmd
}

// canaryLine is status's line about a rollout in progress.
func canaryLine(c *manifest.Canary, stable int64) string {
	return fmt.Sprintf("rollout %s: candidate generation %d over stable %d for %s, started by %s %v ago (confpush rollout status)\n",
		c.RolloutID, c.Generation, stable, publish.DescribeSelection(c.Selection), c.Publisher, time.Since(c.StartedAt).Round(time.Second))
}

// historyRolloutNotes describes a generation's part in a rollout, for
// history: a candidate with its selection, a promote or an abort.
func historyRolloutNotes(m *manifest.Manifest) (notes []string, fields map[string]any) {
	fields = map[string]any{}
	if m.Candidate != nil {
		notes = append(notes, "candidate for "+publish.DescribeSelection(*m.Candidate))
		fields["candidate"] = m.Candidate
	}
	if m.PromoteOf > 0 {
		notes = append(notes, fmt.Sprintf("promote of %d", m.PromoteOf))
		fields["promote_of"] = m.PromoteOf
	}
	if m.AbortOf > 0 {
		notes = append(notes, fmt.Sprintf("abort of %d", m.AbortOf))
		fields["abort_of"] = m.AbortOf
	}
	return notes, fields
}

// isRolloutInProgress reports the refusal of a publish during a rollout.
func isRolloutInProgress(err error) bool { return errors.Is(err, publish.ErrRolloutInProgress) }

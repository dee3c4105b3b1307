package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// rolloutError marks a rollout that failed or timed out (exit 5).
type rolloutError struct{ err error }

func (e rolloutError) Error() string { return e.err.Error() }
func (e rolloutError) Unwrap() error { return e.err }

// agentsFailingError marks `status --fail-on-error` finding an agent that
// reports an error or a failing target, is gone or untrusted, or does not
// follow the root's incarnation (exit 8).
type agentsFailingError struct {
	agents []string
	// report is the --json status report, carried in the error object so
	// that --json prints one object.
	report map[string]any
}

func (e agentsFailingError) Error() string {
	return fmt.Sprintf("%d agent(s) report an error or a failing target, are gone or untrusted, or do not follow the root's incarnation: %s", len(e.agents), strings.Join(e.agents, ", "))
}

func (a *app) paths() layout.Paths {
	return layout.New(a.v.GetString("root"), a.v.GetString("meta"))
}

// dial connects and waits for a session (see dialWith).
func (a *app) dial(ctx context.Context) (*zkclient.Client, error) {
	return a.dialWith(ctx, a.zkConfig())
}

// fleetOf is the configured root's Fleet on cl.
func (a *app) fleetOf(cl *zkclient.Client) (*fleet.Fleet, error) {
	p := a.paths()
	return fleet.New(cl, p.Root, fleet.WithMeta(p.Meta))
}

func (a *app) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show which agent runs which generation",
		Long: `status lists every agent following the root (from their status nodes): the
generation each applied, how far behind the live one it is, its STATE (ok,
failing: the last apply failed or a failure is being retried, behind, stale,
gone, untrusted), when it applied (APPLIED AT), its view of ZooKeeper and
since when (ZK STATE, ZK SINCE), its labels, and its last error; then a
summary.

With --watch it shows the table again at every change (ZooKeeper watches),
redrawn in place on a terminal, until Ctrl-C; --timeout does not apply.

With --wait-generation G it first waits (through watches) until enough agents
(--min N, or --all) report generation G; exit 5 when they do not in time.

With --fail-on-error it exits 8 when any agent reports an error, a failing
target (a rejected generation, a reload not done yet, a transient write
error being retried), a status node that cannot be read or is untrusted, an
expected agent that is gone, or an agent that does not follow the root's
incarnation.

A root that does not exist (a misspelled --root, or nothing ever published
there) is an error, exit 2, whatever the flags: never "0 agents". A root
that exists but was never published (after 'confpush init') is reported as
such, exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkWatchFlags(); err != nil {
				return err
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			cl, err := a.dial(ctx)
			if err != nil {
				return err
			}
			defer cl.Conn().Close()
			if err := a.requireRoot(ctx, cl); err != nil {
				return err
			}
			if a.v.GetBool("watch") {
				return a.watchStatus(cmd, cl)
			}
			if g := a.v.GetInt64("wait-generation"); g > 0 {
				if err := a.waitRollout(ctx, cl, g); err != nil {
					return err
				}
			}
			return a.printStatus(ctx, cl, a.v.GetBool("fail-on-error"))
		},
	}
	cmd.Flags().Int64("wait-generation", 0, "wait until agents report this generation")
	cmd.Flags().Bool("fail-on-error", false, "exit 8 when any agent reports an error or a failing target")
	cmd.Flags().Bool("watch", false, "show the status again at every change (ZooKeeper watches) until interrupted; --timeout does not apply")
	a.rolloutFlags(cmd)
	return cmd
}

// rolloutFlags are the flags of a rollout wait.
func (a *app) rolloutFlags(cmd *cobra.Command) {
	cmd.Flags().Int("min", 0, "with a wait: succeed once this many agents applied the generation")
	cmd.Flags().Bool("all", false, "with a wait: every registered agent must apply the generation (the default)")
}

func (a *app) printStatus(ctx context.Context, cl *zkclient.Client, failOnError bool) error {
	obj, text, failing, err := a.statusReport(ctx, cl)
	if err != nil {
		return err
	}
	if failOnError && len(failing) > 0 {
		if !a.json() {
			text(a.stdout)
		}
		return agentsFailingError{agents: failing, report: obj}
	}
	a.emit(obj, text)
	return nil
}

// statusReport reads the fleet's status: the --json object, the text
// table, and the agents --fail-on-error fails for.
func (a *app) statusReport(ctx context.Context, cl *zkclient.Client) (obj map[string]any, text func(io.Writer), failing []string, err error) {
	p := a.paths()
	f, err := a.fleetOf(cl)
	if err != nil {
		return nil, nil, nil, err
	}
	rep, err := f.Report(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	liveM, live, agents, sum, failing := rep.Live, rep.Live.Generation, rep.Agents, rep.Summary, rep.Failing
	pub, err := publish.New(cl, p.Root, publish.WithMeta(p.Meta))
	if err != nil {
		return nil, nil, nil, err
	}
	marker, err := pub.InspectMarker(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	type row struct {
		ID     string `json:"id"`
		Behind int64  `json:"behind"`
		// State is the STATE column: what an operator acts on.
		State  string        `json:"state"`
		Error  string        `json:"error,omitempty"`
		Status *fleet.Status `json:"status,omitempty"`
		// Trust: an untrusted status node is shown, never
		// counted; a gone agent is expected but has no trusted node.
		Trusted           bool                `json:"trusted"`
		Untrusted         string              `json:"untrusted,omitempty"`
		Expected          bool                `json:"expected"`
		Gone              bool                `json:"gone"`
		Registration      *fleet.Registration `json:"registration,omitempty"`
		RegistryUntrusted string              `json:"registry_untrusted,omitempty"`
		// Labels are what canary selectors match: the trusted status
		// node's, else the registry node's (fleet.Agent.Labels).
		Labels map[string]string `json:"labels,omitempty"`
	}
	rows := []row{}
	for _, ag := range agents {
		r := row{ID: ag.ID, Behind: max(live-ag.Status.Generation, 0), Trusted: ag.Trusted(), Untrusted: ag.Untrusted,
			Expected: ag.Expected, Gone: ag.Gone(), Registration: ag.Registration, RegistryUntrusted: ag.RegistryUntrusted,
			Labels: ag.Labels()}
		switch {
		case ag.Err != nil:
			r.Error = ag.Err.Error()
		case ag.HasNode:
			st := ag.Status
			r.Status = &st
		}
		r.State = ag.State(live)
		rows = append(rows, r)
	}
	obj = map[string]any{"root": p.Root, "generation": live, "message": liveM.Message, "agents": rows, "summary": map[string]int{
		"total": sum.Total, "at_latest": sum.AtLatest, "behind": sum.Behind, "failing": sum.Failing,
		"untrusted": sum.Untrusted, "gone": sum.Gone}}
	// Incarnations (a ZooKeeper wiped or rebuilt): agents refusing the
	// root's incarnation, or holding another one, are listed (and fail
	// --fail-on-error, Report.Failing).
	liveInc, incProblems := liveM.Incarnation, []string{}
	for _, pr := range rep.IncarnationProblems {
		incProblems = append(incProblems, pr.Message)
	}
	obj["incarnation"], obj["incarnation_problems"] = liveInc, incProblems
	if marker != nil {
		obj["marker"] = map[string]any{"publish_id": marker.PublishID, "publisher": marker.Publisher,
			"age_seconds": int64(marker.Age.Seconds()), "live": marker.Live, "foreign": marker.Foreign, "message": marker.String()}
	}
	if liveM.Canary != nil {
		obj["canary"] = liveM.Canary
	}
	skipped := skippedLines(rep.Skipped)
	if len(rep.Skipped) > 0 {
		obj["skipped"] = skippedJSON(rep.Skipped)
	}
	text = func(out io.Writer) {
		if marker != nil {
			fmt.Fprintf(out, "marker: %s\n\n", marker)
		}
		if c := liveM.Canary; c != nil {
			fmt.Fprintln(out, canaryLine(c, live))
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "AGENT\tGENERATION\tBEHIND\tSTATE\tAPPLIED AT\tZK STATE\tZK SINCE\tLABELS\tLAST ERROR")
		for _, r := range rows {
			note := ""
			if r.RegistryUntrusted != "" {
				note = " [registry node untrusted: " + r.RegistryUntrusted + "]"
			}
			switch {
			case r.Gone:
				seen := "never registered"
				if r.Registration != nil {
					seen = "last seen " + time.Since(r.Registration.LastSeen).Round(time.Second).String() + " ago"
				}
				why := "no status node"
				if r.Untrusted != "" {
					why = "status node untrusted: " + r.Untrusted
				}
				fmt.Fprintf(w, "%s\t-\t-\tgone\t%s\t-\t-\t%s\t%s\n", r.ID, seen, labelList(r.Labels), oneLine(why+note))
				continue
			case !r.Trusted:
				fmt.Fprintf(w, "%s\t-\t-\t%s\t-\t-\t-\t%s\t%s\n", r.ID, r.State, labelList(r.Labels), oneLine(r.Untrusted+r.Error+note))
				continue
			}
			st := r.Status
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, st.Generation, r.Behind, r.State, ago(st.AppliedAt),
				st.State, ago(st.Since), labelList(r.Labels), oneLine(st.Failure()+note))
		}
		_ = w.Flush()
		fmt.Fprintf(out, "\n%s (%s)\n", sum, liveLine(p.Root, live))
		if len(rows) == 0 {
			fmt.Fprintf(out, "no agent follows %s: none registered, none with a status node (check the agents' root setting)\n", p.Root)
		}
		if liveM.Message != "" {
			fmt.Fprintf(out, "message: %s\n", historyMessage(liveM.Message))
		}
		if liveInc != "" {
			fmt.Fprintf(out, "incarnation %s\n", liveInc)
		}
		for _, pr := range incProblems {
			fmt.Fprintf(out, "INCARNATION: %s\n", pr)
		}
		for _, l := range skipped {
			fmt.Fprintf(out, "skipped: %s\n", l)
		}
	}
	return obj, text, failing, nil
}

// maxSkippedListed bounds the skipped nodes status names (a flood of
// forged names must not flood the report).
const maxSkippedListed = 100

// skippedJSON is the "skipped" object of status --json: how many nodes
// were not read, and the first of them.
func skippedJSON(sk []fleet.Skipped) map[string]any {
	type node struct {
		ID     string `json:"id"`
		Node   string `json:"node"`
		Reason string `json:"reason"`
		Bytes  int    `json:"bytes,omitempty"`
	}
	nodes := []node{}
	for _, s := range sk[:min(len(sk), maxSkippedListed)] {
		nodes = append(nodes, node{s.ID, s.Node, s.Reason, s.Bytes})
	}
	return map[string]any{"count": len(sk), "nodes": nodes}
}

// skippedLines says which nodes the listing did not read: foreign ones
// counted per kind with a few names, oversized ones one by one (each is
// also shown on its agent).
func skippedLines(sk []fleet.Skipped) []string {
	foreign := map[string][]string{}
	var out []string
	for _, s := range sk {
		if s.Reason == fleet.SkipForeign {
			foreign[s.Node] = append(foreign[s.Node], s.ID)
			continue
		}
		if len(out) < maxSkippedListed {
			out = append(out, fmt.Sprintf("%s node %s is %d bytes, above its bound: not read ('confpush acl --repair' removes it)",
				s.Node, s.ID, s.Bytes))
		}
	}
	for _, kind := range []string{fleet.NodeStatus, fleet.NodeRegistration} {
		ids := foreign[kind]
		if len(ids) == 0 {
			continue
		}
		shown := ids[:min(len(ids), 5)]
		more := ""
		if len(ids) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
		}
		out = append(out, fmt.Sprintf("%d foreign %s node(s), named after no agent identity of the policy: %s%s "+
			"(never expected; 'confpush acl --repair' deletes them)", len(ids), kind, strings.Join(shown, ", "), more))
	}
	return out
}

// ago is a time as "3m2s ago", "-" when unset.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// waitRollout follows the agents until the rollout of generation g
// succeeds, printing progress: a bar on a terminal, plain lines otherwise.
func (a *app) waitRollout(ctx context.Context, cl *zkclient.Client, g int64) error {
	opts := fleet.WaitOptions{All: a.v.GetBool("all"), Min: a.v.GetInt("min")}
	if opts.Min < 0 {
		return usagef("--min must not be negative")
	}
	pr := newProgress(a.stderr, a.v.GetBool("json"))
	opts.Progress = pr.update
	f, err := a.fleetOf(cl)
	if err != nil {
		return err
	}
	final, err := f.Wait(ctx, g, opts)
	a.rollout = &final
	pr.done(final)
	if err != nil {
		return rolloutError{err}
	}
	return nil
}

// progress prints rollout progress: one line per change (redrawn in place
// with a bar on a terminal) naming the pending, failing and gone agents,
// then a summary line.
type progress struct {
	w     io.Writer
	tty   bool
	off   bool
	last  string
	start time.Time
}

// shownAgents bounds the agents a progress line names per group.
const shownAgents = 5

func newProgress(w io.Writer, quiet bool) *progress {
	return &progress{w: w, tty: isTerminal(w), off: quiet, start: time.Now()}
}

// group is "N what (a, b, c and 2 more)", or "" for none.
func group(n int, what string, ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	shown := ids[:min(len(ids), shownAgents)]
	l := fmt.Sprintf("%d %s (%s", n, what, strings.Join(shown, ", "))
	if more := len(ids) - len(shown); more > 0 {
		l += fmt.Sprintf(" and %d more", more)
	}
	return l + ")"
}

// groups lists the non-empty groups after the applied count.
func groups(pr fleet.Progress) string {
	var parts []string
	for _, g := range []string{
		group(len(pr.Rejected), "failing", pr.Rejected),
		group(len(pr.Pending), "pending", pr.Pending),
		group(len(pr.Gone)-len(pr.NotStarted), "gone", slices.DeleteFunc(slices.Clone(pr.Gone),
			func(id string) bool { return slices.Contains(pr.NotStarted, id) })),
		group(len(pr.NotStarted), "not started", pr.NotStarted),
		group(len(pr.Untrusted), "untrusted, not counted", pr.Untrusted),
	} {
		if g != "" {
			parts = append(parts, g)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func (p *progress) line(pr fleet.Progress) string {
	return fmt.Sprintf("generation %d: %d/%d applied%s", pr.Generation, len(pr.Applied), pr.Needed, groups(pr))
}

func (p *progress) update(pr fleet.Progress) {
	if p.off {
		return
	}
	l := p.line(pr)
	if l == p.last {
		return
	}
	p.last = l
	if p.tty {
		const width = 30
		filled := 0
		if pr.Needed > 0 {
			filled = min(width, width*len(pr.Applied)/pr.Needed)
		}
		// \x1b[K: a shorter line must not leave the end of a longer one.
		fmt.Fprintf(p.w, "\r[%s%s] %s\x1b[K", strings.Repeat("#", filled), strings.Repeat(".", width-filled), l)
		return
	}
	fmt.Fprintln(p.w, l)
}

// done prints the last state and the summary line, e.g. "generation 42:
// 98 applied, 1 failing (web-3), 1 pending (web-7) after 12s".
func (p *progress) done(pr fleet.Progress) {
	if p.off {
		return
	}
	p.update(pr)
	if p.tty {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "generation %d: %d applied%s after %v\n", pr.Generation, len(pr.Applied), groups(pr),
		time.Since(p.start).Round(time.Second))
}

// labelList is the LABELS column: key=value pairs in key order, "-" for
// none. Label keys and values hold no spaces or commas, so the column
// stays one field.
func labelList(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// This file measures what a canary rollout costs the followers
// (docs/design.md, "Canary rollouts", Cost): N zkconf caches with labels,
// half zone=a (the canary side) and half zone=b (outside every
// selection), follow one root through plain publishes and then through
// rollouts (start with selector zone=a and 50 %, widen to all of zone=a,
// promote or abort). Each follower's own request counters (cache.Stats)
// are read before and after every step, once every follower has seen it.

// Canary step kinds, in the order the report lists them.
const (
	stepPlain   = "plain publish"
	stepStart   = "canary start"
	stepWiden   = "widen"
	stepPromote = "promote"
	stepAbort   = "abort"
	stepRollout = "every rollout step"
)

// CanaryResult is the request cost of a rollout's steps per follower.
type CanaryResult struct {
	Followers int `json:"followers"`
	// Canary is the number of followers labelled zone=a, Outside of those
	// labelled zone=b.
	Canary, Outside int
	Start, Widen    string // the selections
	Items, Changed  int
	Rows            []CanaryRow `json:"rows"`
}

// CanaryRow is one kind of step: how many were measured and the requests
// each group made per follower per step.
type CanaryRow struct {
	Step  string `json:"step"`
	Steps int    `json:"steps"`
	// Outside followers (never selected).
	Outside GroupCost `json:"outside"`
	// Canary followers (zone=a: selected at the start, or at the widen).
	Canary GroupCost `json:"canary"`
}

// GroupCost is a group's requests per follower per step (cache.Stats).
type GroupCost struct {
	Requests float64 `json:"requests"`
	// RootReads and ItemReads are parts of Requests; CandidateReads are
	// reads of the candidate manifest (also in Requests).
	RootReads      float64 `json:"root_reads"`
	ItemReads      float64 `json:"item_reads"`
	CandidateReads float64 `json:"candidate_reads"`
	// Other is Requests minus item reads: the cost of learning about the
	// step, whatever content it brings.
	Other float64 `json:"other"`
}

// add adds o's counts to g.
func (g *GroupCost) add(o GroupCost) {
	g.Requests += o.Requests
	g.RootReads += o.RootReads
	g.ItemReads += o.ItemReads
	g.CandidateReads += o.CandidateReads
}

// Row returns the row of step ("" when absent).
func (c *CanaryResult) Row(step string) (CanaryRow, bool) {
	for _, r := range c.Rows {
		if r.Step == step {
			return r, true
		}
	}
	return CanaryRow{}, false
}

// The canary measurement's plain publishes and rollouts (alternately
// promoted and aborted).
const (
	canaryPlain  = 5
	canaryRounds = 4
)

// writeCanary writes canary-requests.md: the canary section with the
// environment it was measured in.
func (r *Report) writeCanary(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Canary rollouts: requests per follower\n\n")
	fmt.Fprintf(&b, "Measured %s by `confbench` on %s (%d cores), %s, ZooKeeper %s (%d server(s)); load average %.2f at the start, %.2f at the end.\n\n",
		r.Started.UTC().Format(time.RFC3339), r.Env.CPU, r.Env.Cores, r.Env.Go, r.Env.ZooKeeper, r.Env.Servers, r.Env.LoadStart, r.Env.LoadEnd)
	b.WriteString(strings.Replace(r.Canary.Markdown(), "## ", "## Result: ", 1))
	return os.WriteFile(filepath.Join(dir, "canary-requests.md"), []byte(b.String()), 0o644)
}

// canaryFollower is one labelled cache.
type canaryFollower struct {
	id     string
	labels map[string]string
	c      *cache.Cache
}

// measureCanary runs the canary measurement with n followers: plain
// publishes, then rounds rollouts alternately promoted and aborted.
func (e *env) measureCanary(ctx context.Context, n, plain, rounds int) (*CanaryResult, error) {
	c := e.cfg
	sched := newSchedule("canary", c.Items, c.ItemSize, c.Changed)
	t, err := e.newTarget(ctx, "canary", sched)
	if err != nil {
		return nil, err
	}
	defer t.close()
	clients, err := dialMany(ctx, n, e.followerDial(e.newCounts(), c.Items, c.ItemSize))
	if err != nil {
		return nil, err
	}
	defer closeAll(clients)
	res := &CanaryResult{Followers: n, Items: c.Items, Changed: c.Changed,
		Start: "zone=a and 50%", Widen: "zone=a"}
	var fs []*canaryFollower
	defer func() {
		for _, f := range fs {
			_ = f.c.Close()
		}
	}()
	for i, cl := range clients {
		f := &canaryFollower{id: fmt.Sprintf("bench-%d", i), labels: map[string]string{"zone": "b"}}
		if i%2 == 0 {
			f.labels["zone"] = "a"
			res.Canary++
		} else {
			res.Outside++
		}
		f.c, err = cache.New(ctx, t.root, cache.WithClient(zkclient.Fixed(cl.conn, cl.sess)), cache.WithMeta(e.meta),
			cache.WithLogger(e.quiet), cache.WithLabels(f.id, f.labels))
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	m := &canaryMeter{e: e, fs: fs, sums: map[string]*[2]GroupCost{}, counts: map[string]int{}}
	if err := m.waitGen(ctx, 1, nil); err != nil {
		return nil, err
	}

	k := int64(1) // the schedule's set the root's live content is
	publishSet := func(req publish.Request) (*publish.Result, error) {
		req.Mode = manifest.ModeMulti
		r, err := t.pub.Publish(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("canary bench: publish: %w", err)
		}
		return r, nil
	}
	for range plain {
		k++
		err := m.step(ctx, stepPlain, func() (func(*canaryFollower) int64, error) {
			r, err := publishSet(publish.Request{Items: sched.set(k)})
			if err != nil {
				return nil, err
			}
			return func(*canaryFollower) int64 { return r.Generation }, nil
		})
		if err != nil {
			return nil, err
		}
	}
	start := manifest.Selection{Selector: "zone=a", Percent: 50}
	widen := manifest.Selection{Selector: "zone=a"}
	for round := range rounds {
		stable := k
		var id string
		var cand int64
		// A selected follower waits for the candidate; the others for one
		// root read (0: no generation to wait for).
		on := func(sel manifest.Selection) func(*canaryFollower) int64 {
			return func(f *canaryFollower) int64 {
				if sel.Selects(f.id, f.labels) {
					return cand
				}
				return 0
			}
		}
		err := m.step(ctx, stepStart, func() (func(*canaryFollower) int64, error) {
			r, err := publishSet(publish.Request{Items: sched.set(stable + 1), Canary: &start})
			if err != nil {
				return nil, err
			}
			rs, err := t.pub.Rollout(ctx)
			if err != nil || rs.Canary == nil {
				return nil, fmt.Errorf("canary bench: read the rollout: %w", err)
			}
			cand, id = r.Generation, rs.Canary.RolloutID
			return on(start), nil
		})
		if err != nil {
			return nil, err
		}
		err = m.step(ctx, stepWiden, func() (func(*canaryFollower) int64, error) {
			if _, err := t.pub.Widen(ctx, id, widen, "bench"); err != nil {
				return nil, fmt.Errorf("canary bench: widen: %w", err)
			}
			return on(widen), nil
		})
		if err != nil {
			return nil, err
		}
		kind := stepPromote
		if round%2 == 1 {
			kind = stepAbort
		}
		err = m.step(ctx, kind, func() (func(*canaryFollower) int64, error) {
			var r *publish.Result
			var err error
			if kind == stepPromote {
				r, err = t.pub.Promote(ctx, id, publish.Request{Mode: manifest.ModeMulti})
				k = stable + 1
			} else {
				r, err = t.pub.Abort(ctx, id, publish.Request{Mode: manifest.ModeMulti})
			}
			if err != nil {
				return nil, fmt.Errorf("canary bench: %s: %w", kind, err)
			}
			return func(*canaryFollower) int64 { return r.Generation }, nil
		})
		if err != nil {
			return nil, err
		}
		// The schedule's next set differs from the live one by Changed
		// items only when the live set is the schedule's previous one.
		if kind == stepAbort {
			k++
			if err := m.step(ctx, stepPlain, func() (func(*canaryFollower) int64, error) {
				r, err := publishSet(publish.Request{Items: sched.set(k)})
				if err != nil {
					return nil, err
				}
				return func(*canaryFollower) int64 { return r.Generation }, nil
			}); err != nil {
				return nil, err
			}
		}
	}
	// Every follower ends on the live set, byte for byte.
	want := sched.set(k)
	for _, f := range fs {
		s := f.c.Snapshot()
		if s == nil || s.Candidate() || s.Len() != len(want) {
			return nil, fmt.Errorf("canary bench: %s does not hold the live set at the end", f.id)
		}
		for name, b := range want {
			if got, ok := s.Get(name); !ok || !bytes.Equal(got, b) {
				return nil, fmt.Errorf("canary bench: %s: item %s differs from the live set", f.id, name)
			}
		}
	}
	res.Rows = m.rows()
	return res, nil
}

// canaryMeter reads the followers' counters around each step.
type canaryMeter struct {
	e      *env
	fs     []*canaryFollower
	sums   map[string]*[2]GroupCost // step -> outside, canary sums over followers
	counts map[string]int
	order  []string
}

// step runs do (which publishes and says which generation each follower
// must reach, 0 for "one more root read") and adds every follower's
// counter deltas to the step's sums.
func (m *canaryMeter) step(ctx context.Context, kind string, do func() (func(*canaryFollower) int64, error)) error {
	before := make([]cache.Stats, len(m.fs))
	for i, f := range m.fs {
		before[i] = f.c.Stats()
	}
	want, err := do()
	if err != nil {
		return err
	}
	if err := m.waitGen(ctx, 0, func(i int) (int64, uint64) { return want(m.fs[i]), before[i].RootReads }); err != nil {
		return fmt.Errorf("canary bench: %s: %w", kind, err)
	}
	s := m.sums[kind]
	if s == nil {
		s = &[2]GroupCost{}
		m.sums[kind] = s
		m.order = append(m.order, kind)
	}
	m.counts[kind]++
	for i, f := range m.fs {
		a, b := f.c.Stats(), before[i]
		g := &s[0]
		if f.labels["zone"] == "a" {
			g = &s[1]
		}
		g.Requests += float64(a.Requests - b.Requests)
		g.RootReads += float64(a.RootReads - b.RootReads)
		g.ItemReads += float64(a.ItemsFetched - b.ItemsFetched)
		g.CandidateReads += float64(a.CandidateReads - b.CandidateReads)
	}
	return nil
}

// waitGen waits until every follower holds generation g (when target is
// nil) or what target says: the generation it returns, or, for 0, a root
// read after rootReads.
func (m *canaryMeter) waitGen(ctx context.Context, g int64, target func(int) (int64, uint64)) error {
	wctx, cancel := context.WithTimeout(ctx, m.e.cfg.WaitTimeout)
	defer cancel()
	for i, f := range m.fs {
		want, reads := g, uint64(0)
		if target != nil {
			want, reads = target(i)
		}
		if want > 0 {
			if _, err := f.c.Wait(wctx, want); err != nil {
				return fmt.Errorf("%s did not reach generation %d: %w", f.id, want, err)
			}
		}
		// Every step changes the root once: a follower that already held
		// the generation (a widen, for one on the candidate) has seen the
		// step only once it read the root again.
		for target != nil && f.c.Stats().RootReads <= reads {
			select {
			case <-wctx.Done():
				return fmt.Errorf("%s never read the root again: %w", f.id, wctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}

// rows divides the sums into per-follower, per-step costs, with a row
// for every rollout step together.
func (m *canaryMeter) rows() []CanaryRow {
	var outside, canary int
	for _, f := range m.fs {
		if f.labels["zone"] == "a" {
			canary++
		} else {
			outside++
		}
	}
	per := func(g GroupCost, members, steps int) GroupCost {
		d := float64(max(1, members*steps))
		g = GroupCost{Requests: g.Requests / d, RootReads: g.RootReads / d, ItemReads: g.ItemReads / d, CandidateReads: g.CandidateReads / d}
		g.Other = g.Requests - g.ItemReads
		return g
	}
	var rows []CanaryRow
	var all [2]GroupCost
	allSteps := 0
	for _, kind := range []string{stepPlain, stepStart, stepWiden, stepPromote, stepAbort} {
		s, ok := m.sums[kind]
		if !ok {
			continue
		}
		n := m.counts[kind]
		rows = append(rows, CanaryRow{Step: kind, Steps: n, Outside: per(s[0], outside, n), Canary: per(s[1], canary, n)})
		if kind != stepPlain {
			all[0].add(s[0])
			all[1].add(s[1])
			allSteps += n
		}
	}
	if allSteps > 0 {
		rows = append(rows, CanaryRow{Step: stepRollout, Steps: allSteps, Outside: per(all[0], outside, allSteps), Canary: per(all[1], canary, allSteps)})
	}
	return rows
}

// OutsideUnchanged reports whether followers outside the canary paid, for
// every rollout step, what they pay for a plain publish: the same
// requests besides item reads (one root read), and item reads only for
// content that changed for them (the promote's, Changed items, as a plain
// publish). It returns the differences found.
func (c *CanaryResult) OutsideUnchanged() []string {
	plain, ok := c.Row(stepPlain)
	if !ok {
		return []string{"no plain publish row"}
	}
	var diffs []string
	wantItems := map[string]float64{stepStart: 0, stepWiden: 0, stepAbort: 0, stepPromote: float64(c.Changed)}
	for _, r := range c.Rows {
		w, isStep := wantItems[r.Step]
		if !isStep {
			continue
		}
		if r.Outside.Other != plain.Outside.Other {
			diffs = append(diffs, fmt.Sprintf("%s: %.3g requests besides item reads per outside follower, a plain publish %.3g", r.Step, r.Outside.Other, plain.Outside.Other))
		}
		if r.Outside.ItemReads != w {
			diffs = append(diffs, fmt.Sprintf("%s: %.3g item reads per outside follower, want %v", r.Step, r.Outside.ItemReads, w))
		}
		if r.Outside.CandidateReads != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: outside followers read the candidate", r.Step))
		}
	}
	if plain.Outside.ItemReads != float64(c.Changed) {
		diffs = append(diffs, fmt.Sprintf("plain publish: %.3g item reads per follower, want %d", plain.Outside.ItemReads, c.Changed))
	}
	return diffs
}

// Summary is one line: outside followers' requests per plain publish and
// per rollout step, and whether they are the same.
func (c *CanaryResult) Summary() string {
	plain, _ := c.Row(stepPlain)
	all, _ := c.Row(stepRollout)
	verdict := "the same"
	if len(c.OutsideUnchanged()) > 0 {
		verdict = "NOT the same"
	}
	return fmt.Sprintf("outside followers %.2f requests per plain publish (%.2f besides item reads), %.2f per rollout step (%.2f besides item reads): %s; canary side %.2f per rollout step",
		plain.Outside.Requests, plain.Outside.Other, all.Outside.Requests, all.Outside.Other, verdict, all.Canary.Requests)
}

// Markdown is the canary section of the report.
func (c *CanaryResult) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Requests per follower during a canary rollout\n\n")
	w("%d zkconf caches (`cache.WithLabels`): %d labelled zone=a (the canary side), %d zone=b (outside every selection); %d items of which %d change per publish. ",
		c.Followers, c.Canary, c.Outside, c.Items, c.Changed)
	w("Plain publishes, then rollouts: start with selection %s, widen to %s, then promote or abort (alternately). ", c.Start, c.Widen)
	w("Counts are each cache's own `Stats` (requests sent to ZooKeeper), per follower per step; \"other\" is requests minus item reads.\n\n")
	w("| step | steps | outside: requests | outside: root reads | outside: item reads | outside: other | canary side: requests | canary side: candidate reads | canary side: item reads |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Rows {
		w("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.Step, r.Steps, r.Outside.Requests, r.Outside.RootReads,
			r.Outside.ItemReads, r.Outside.Other, r.Canary.Requests, r.Canary.CandidateReads, r.Canary.ItemReads)
	}
	if d := c.OutsideUnchanged(); len(d) == 0 {
		w("\nFollowers outside the canary make the same requests per rollout step as per plain publish: one root read, plus the changed items when the step changes their content (the promote). Target met.\n")
	} else {
		w("\nFollowers outside the canary do NOT make the same requests as for a plain publish:\n\n")
		for _, s := range d {
			w("- %s\n", s)
		}
	}
	return b.String()
}

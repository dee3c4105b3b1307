package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LatencyTarget is one target of the single-host benchmark and whether
// the run met it.
type LatencyTarget struct {
	Target, Measured string
	Met              bool
}

// row returns the row of follower under publisher, or nil.
func (s *LatencySetResult) row(follower, publisher string) *LatencyRow {
	for i := range s.Rows {
		if s.Rows[i].Follower == follower && s.Rows[i].Publisher == publisher {
			return &s.Rows[i]
		}
	}
	return nil
}

// set returns the result of (items, changed), or nil.
func (r *LatencyReport) set(items, changed int) *LatencySetResult {
	for i := range r.Sets {
		if r.Sets[i].Items == items && r.Sets[i].Changed == changed {
			return &r.Sets[i]
		}
	}
	return nil
}

// Targets checks the run against the single-host targets: commit-ack →
// rendered p50 at most 10 ms for 20 changed items and 3 ms for one (dir
// and template targets), and `confpush publish` start → rendered p50 at
// most the confd-style follower's in-process publish start → rendered
// p50, for 20 items all changed.
func (r *LatencyReport) Targets() []LatencyTarget {
	var out []LatencyTarget
	for _, c := range []struct {
		changed int
		limit   float64
	}{{20, 10}, {1, 3}} {
		s := r.set(20, c.changed)
		if s == nil {
			continue
		}
		for _, f := range []string{latDir, latTemplate} {
			p := s.row(f, "in-process").Rendered.P50
			out = append(out, LatencyTarget{
				Target:   fmt.Sprintf("20 items, %d changed, %s: commit-ack → rendered p50 ≤ %g ms", c.changed, f, c.limit),
				Measured: fmt.Sprintf("%.2f ms", p), Met: p <= c.limit,
			})
		}
	}
	if s := r.set(20, 20); s != nil {
		confd := s.row(latConfd, "in-process").EndToEnd.P50
		for _, f := range []string{latDir, latTemplate} {
			p := s.row(f, "confpush").EndToEnd.P50
			out = append(out, LatencyTarget{
				Target:   fmt.Sprintf("20 items all changed, %s: confpush publish start → rendered p50 ≤ confd-style's (in-process publish start → rendered)", f),
				Measured: fmt.Sprintf("%.2f ms vs %.2f ms", p, confd), Met: p <= confd,
			})
		}
	}
	return out
}

// Markdown renders the report.
func (r *LatencyReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Single-host latency (confbench latency)\n\n")
	fmt.Fprintf(&b, "Started %s, %.0f s. %s, %d cores, %s, ZooKeeper %s (standalone%s). Load average %.2f at the start, %.2f at the end.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Seconds, r.Env.CPU, r.Env.Cores, r.Env.Go, r.Env.ZooKeeper,
		map[bool]string{true: ", started by the benchmark", false: ", given"}[r.Env.OwnServer], r.Env.LoadStart, r.Env.LoadEnd)
	fmt.Fprintf(&b, "Items of %d bytes; %d measured publishes per set and publisher after %d unmeasured; %s between publishes.\n\n",
		r.Config.ItemSize, r.Config.Publishes, r.Config.Warmup, r.Config.Gap)
	b.WriteString("## Commit-ack → rendered, and publish start → rendered (ms)\n\n")
	b.WriteString("| items | changed | follower | publisher | ack→rendered p50 | p90 | max | start→rendered p50 | p90 | max |\n")
	b.WriteString("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Sets {
		for _, row := range s.Rows {
			ack := "–\t–\t–"
			if row.Rendered.N > 0 {
				ack = fmt.Sprintf("%.2f\t%.2f\t%.2f", row.Rendered.P50, row.Rendered.P90, row.Rendered.Max)
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %.2f | %.2f | %.2f |\n", row.Items, row.Changed, row.Follower, row.Publisher,
				strings.ReplaceAll(ack, "\t", " | "), row.EndToEnd.P50, row.EndToEnd.P90, row.EndToEnd.Max)
		}
	}
	b.WriteString("\n## The agent's phases, p50 (ms), and CPU per publish\n\n")
	b.WriteString("In-process publisher. notification: commit-ack → the cache's cycle starts; reads: the cycle until every item is read and verified; verify: hashing, summed over reads in flight; persist: the state file; stage, check, swap: the renderer (both targets); rendered: commit-ack → the dir target swapped in; status node: commit-ack → the status node says the generation (written off the critical path).\n\n")
	b.WriteString("| items | changed |")
	for _, p := range latPhases {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString(" agent CPU ms/publish | publish call→ack p50 | confpush start→exit p50 | p90 | 4 KiB file+dir fsync p50 | p90 |\n|---:|---:|")
	for range latPhases {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Sets {
		fmt.Fprintf(&b, "| %d | %d |", s.Items, s.Changed)
		for _, p := range latPhases {
			fmt.Fprintf(&b, " %.2f |", s.Phases[p].P50)
		}
		fmt.Fprintf(&b, " %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", s.AgentCPU, s.Publish.P50, s.ConfPush.P50, s.ConfPush.P90, s.Fsync.P50, s.Fsync.P90)
	}
	b.WriteString("\n## Targets\n\n")
	for _, t := range r.Targets() {
		fmt.Fprintf(&b, "- %s %s: %s\n", map[bool]string{true: "MET", false: "MISSED"}[t.Met], t.Target, t.Measured)
	}
	return b.String()
}

// Write writes latency-results.md and latency-results.json to dir.
func (r *LatencyReport) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latency-results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "latency-results.md"), []byte(r.Markdown()), 0o644)
}

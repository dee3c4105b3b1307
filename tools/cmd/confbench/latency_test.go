package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/tools/bench"
)

// TestLatencySmoke runs `confbench latency --quick` end to end (own
// ZooKeeper, a real confagent with a dir and a template target, the
// confd-style follower, confpush processes) and checks the harness, not
// the timings: every set has a row per follower and publisher with every
// measured publish, every phase of the agent has its samples (the agent's
// "apply timings" lines were found for every publish), and the report is
// written.
func TestLatencySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper, a confagent and confpush processes; run without -short (make test)")
	}
	var rep bench.LatencyReport
	out := runConfbench(t, "latency-results.json", &rep, "latency", "--quick")
	n := rep.Config.Publishes
	if len(rep.Sets) != len(rep.Config.Sets) || len(rep.Sets) == 0 {
		t.Fatalf("%d set results for %d sets", len(rep.Sets), len(rep.Config.Sets))
	}
	for _, s := range rep.Sets {
		rows := map[string]bench.LatencyRow{}
		for _, r := range s.Rows {
			rows[r.Follower+"/"+r.Publisher] = r
		}
		for _, f := range []string{"confagent dir", "confagent template", "confd-style"} {
			for _, p := range []string{"in-process", "confpush"} {
				r, ok := rows[f+"/"+p]
				switch {
				case !ok:
					t.Errorf("%d/%d: no row for %s under %s", s.Items, s.Changed, f, p)
				case r.EndToEnd.N != n || r.EndToEnd.P50 <= 0 || r.EndToEnd.Max < r.EndToEnd.P50:
					t.Errorf("%d/%d %s %s: start → rendered %+v, want %d positive samples", s.Items, s.Changed, f, p, r.EndToEnd, n)
				case p == "in-process" && r.Rendered.N != n:
					t.Errorf("%d/%d %s: commit-ack → rendered has %d samples, want %d", s.Items, s.Changed, f, r.Rendered.N, n)
				}
			}
		}
		for _, p := range []string{"notification", "reads", "verify", "persist", "stage", "check", "swap", "rendered", "status node"} {
			if s.Phases[p].N != n {
				t.Errorf("%d/%d: phase %s has %d samples, want %d", s.Items, s.Changed, p, s.Phases[p].N, n)
			}
		}
		for p, d := range map[string]bench.Pct{"reads": s.Phases["reads"], "persist": s.Phases["persist"], "stage": s.Phases["stage"], "swap": s.Phases["swap"]} {
			if d.P50 <= 0 {
				t.Errorf("%d/%d: phase %s p50 %.3f ms: the agent did not time it", s.Items, s.Changed, p, d.P50)
			}
		}
		if s.AgentCPU < 0 || s.Publish.N != n || s.ConfPush.N != n || s.Fsync.N == 0 {
			t.Errorf("%d/%d: agent CPU %.2f, %d publish and %d confpush samples, want %d", s.Items, s.Changed, s.AgentCPU, s.Publish.N, s.ConfPush.N, n)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "latency-results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"confd-style", "status node", "## Targets"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("latency-results.md lacks %q", want)
		}
	}
}

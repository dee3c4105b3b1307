package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/tools/bench"
)

// TestLatencySmoke runs `confbench latency --quick` end to end (own
// ZooKeeper, a real confagent with a dir and a sprig template target, the
// confd-style follower and the floor as zkraw processes, confpush
// processes, the memory run) and checks the harness, not the timings:
// every set has a row per follower and publisher with every measured
// publish, every phase of the agent has its samples (the agent's "apply
// timings" lines were found for every publish), CPU and memory were read
// for both processes, the floor (zkfloor) ran beside every confpush and
// timed its three server writes, the start-up of both programs was
// measured, confpush ran against its floor like for like (both alone on
// roots nobody watches, alternated) with its summary row for the
// multi-mode set and none for the marker-mode one, the
// durable-step probe, the inode-creation probe (before and after every
// set) and the load are in the summary, the 20 × 64 KiB
// set went through marker mode (its commit found by the tap), each set's
// second pass with the agent restarted under apply: independent has every
// row, phase and CPU figure and its like-for-like row in the summary, and
// the report and its summary are written.
func TestLatencySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper, a confagent and confpush processes; run without -short (make test)")
	}
	var rep bench.LatencyReport
	out := runConfbench(t, "latency-results.json", &rep, "latency", "--quick", "--fleet-results", "none")
	n := rep.Config.Publishes
	if len(rep.Sets) != len(rep.Config.Sets) || len(rep.Sets) != 2 {
		t.Fatalf("%d set results for %d sets, want 2", len(rep.Sets), len(rep.Config.Sets))
	}
	followers := []string{"confagent dir", "confagent template", "confd-style", "confd-style template"}
	for _, s := range rep.Sets {
		name := fmt.Sprintf("%d/%d × %d", s.Items, s.Changed, s.Size)
		checkRows(t, name, s, followers, []string{"in-process", "confpush"}, n)
		if s.Fsync.N == 0 || s.Publish.N != n || s.ConfPush.N != n || s.Floor.N != n || s.FloorItems < 1 || s.FloorRatio <= 0 {
			t.Errorf("%s: %d fsync probes, %d publish, %d confpush and %d floor samples (%d items), ratio %.2f; want %d each", name,
				s.Fsync.N, s.Publish.N, s.ConfPush.N, s.Floor.N, s.FloorItems, s.FloorRatio, n)
		}
		for what, p := range map[string]bench.InodeProbe{"before": s.InodeBefore, "after": s.InodeAfter} {
			if p.N != 100 || p.Create.N != p.N || p.Create.P50 <= 0 || p.Total <= 0 {
				t.Errorf("%s: inode probe %s the set: %+v, want 100 timed creations", name, what, p)
			}
		}
		// Off ext4 there are no groups; on it, the probe's file and the
		// follower's were there to be placed (the pool may be empty).
		if g := s.Groups; g != nil && (g.Probe < 0 || g.Follower < 0) {
			t.Errorf("%s: inode groups %+v", name, *g)
		}
		for what, p := range map[string]bench.Pct{"floor session": s.FloorSession, "floor Multi": s.FloorMulti, "floor close": s.FloorClose,
			"confpush --version": s.ConfPushStart, "zkfloor start": s.FloorStart} {
			if p.N != n || p.P50 <= 0 {
				t.Errorf("%s: %s: %+v, want %d positive samples", name, what, p, n)
			}
		}
		// A multi-mode set gets confpush against its floor like for like:
		// both alone, every round measured, each program timed in both
		// positions, its root brought to the generation the set's root had
		// when its confpush phase began (the first generation, then the
		// in-process pass's), and the result checked there. A marker-mode
		// set gets none (its ratio has no bound).
		if a := s.Alone; s.Mode == manifest.ModeMarker {
			if a != nil {
				t.Errorf("%s: a confpush-alone pass in marker mode", name)
			}
		} else if a == nil {
			t.Errorf("%s: no confpush-alone pass", name)
		} else {
			if a.ConfPush.N != n || a.Floor.N != n || a.FloorSession.N != n || a.FloorMulti.N != n || a.FloorClose.N != n || a.Ratio <= 0 || a.PairRatio <= 0 {
				t.Errorf("%s: confpush alone %d, floor %d (session %d, Multi %d, close %d) samples, ratio %.2f, pairs' %.2f; want %d each",
					name, a.ConfPush.N, a.Floor.N, a.FloorSession.N, a.FloorMulti.N, a.FloorClose.N, a.Ratio, a.PairRatio, n)
			}
			if a.ConfPushFirst <= 0 || a.ConfPushSecond <= 0 || a.FloorFirst <= 0 || a.FloorSecond <= 0 {
				t.Errorf("%s: confpush alone first · second %.2f · %.2f, floor %.2f · %.2f: want each position measured", name, a.ConfPushFirst, a.ConfPushSecond, a.FloorFirst, a.FloorSecond)
			}
			if want := int64(1 + rep.Config.Warmup + n); a.From != want || a.Seconds <= 0 {
				t.Errorf("%s: confpush alone from generation %d (%.1f s), want %d", name, a.From, a.Seconds, want)
			}
		}
		// Both quick sets get the like-for-like pass: the agent restarted
		// under apply: independent, every follower timed again.
		if p := s.Independent; p == nil {
			t.Errorf("%s: no apply: independent pass", name)
		} else {
			// The pass samples no RSS: checkRows gets the first pass's.
			checkRows(t, name+" (apply: independent)", bench.LatencySetResult{PassFigures: p.PassFigures,
				AgentRSS: s.AgentRSS, ConfdRSS: s.ConfdRSS},
				followers, []string{"in-process"}, n)
			if p.Apply != "independent" || p.Seconds <= 0 || len(p.Rows) != len(followers) {
				t.Errorf("%s: pass %q of %.1f s with %d rows", name, p.Apply, p.Seconds, len(p.Rows))
			}
		}
		want := manifest.ModeMulti
		if s.Size == 64<<10 {
			want = manifest.ModeMarker // 20 × 64 KiB does not fit a Multi
		}
		if s.Mode != want {
			t.Errorf("%s: published in %q mode, want %s", name, s.Mode, want)
		}
	}
	m := rep.Memory
	if m == nil {
		t.Fatal("no memory run")
	}
	checkRows(t, "memory run", *m, []string{"confagent dir", "confd-style"}, []string{"in-process"}, rep.Config.MemoryPublishes)
	if len(m.Rows) != 2 || m.ConfPush.N != 0 {
		t.Errorf("memory run: %d rows, %d confpush samples; want the dir target and the confd-style file, no confpush", len(m.Rows), m.ConfPush.N)
	}
	if len(rep.Summary) == 0 {
		t.Fatal("no summary")
	}
	conditions, independent, alone, underAgents := 0, 0, 0, 0
	for _, v := range rep.Summary {
		if strings.HasPrefix(v.Target, "confpush publish start → exit p50 ÷ raw floor (connect, one Multi, close), like for like") && v.Ratio != "–" && v.Bound != "" {
			alone++
		}
		if strings.HasPrefix(v.Target, "confpush publish start → exit p50 ÷ raw floor, under the agents' load") && v.Status == "REPORTED" {
			underAgents++
		}
		if v.Target == "commit-ack → rendered p50, confagent dir (apply: independent) ÷ confd-style" && v.Status != "NOT MEASURED" && v.Ratio != "–" {
			independent++
		}
		if v.Status == "NOT MEASURED" && !strings.HasPrefix(v.Target, "cache as a library") {
			t.Errorf("summary: %q not measured", v.Target)
		}
		if strings.HasPrefix(v.Target, "durable-step probe") || strings.HasPrefix(v.Target, "inode-creation probe") || strings.HasPrefix(v.Target, "load average") {
			conditions++
		}
	}
	if conditions != 3 {
		t.Errorf("summary: %d of the durable-step probe, inode-creation probe and load average rows, want all three", conditions)
	}
	if alone != 1 || underAgents != 2 {
		t.Errorf("summary: %d measured confpush like-for-like rows and %d under the agents' load, want one like for like (the multi-mode set's) and one under load per set", alone, underAgents)
	}
	if independent != 2 {
		t.Errorf("summary: %d like-for-like dir rows (apply: independent), want one per set", independent)
	}
	md, err := os.ReadFile(filepath.Join(out, "latency-results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Summary: issue 27's targets", "confd-style template", "status node", "durable step p50", "inode creation before: p50 µs", "against its floor", "start-up p50: confpush · floor", "| 20/20 × 64 KiB | marker |",
		"## The dir target like for like: `apply: independent` (ms)", "### Like for like: both alone, alternated (the target)",
		"### Under the agents' load (information; it drives the confpush rows above)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("latency-results.md lacks %q", want)
		}
	}
}

// checkRows checks one set's rows, phases, CPU and memory.
func checkRows(t *testing.T, name string, s bench.LatencySetResult, followers, publishers []string, n int) {
	t.Helper()
	rows := map[string]bench.LatencyRow{}
	for _, r := range s.Rows {
		rows[r.Follower+"/"+r.Publisher] = r
	}
	for _, f := range followers {
		for _, p := range publishers {
			r, ok := rows[f+"/"+p]
			switch {
			case !ok:
				t.Errorf("%s: no row for %s under %s", name, f, p)
			case r.EndToEnd.N != n || r.EndToEnd.P50 <= 0 || r.EndToEnd.Max < r.EndToEnd.P50:
				t.Errorf("%s %s %s: start → rendered %+v, want %d positive samples", name, f, p, r.EndToEnd, n)
			case p == "in-process" && r.Rendered.N != n:
				t.Errorf("%s %s: commit-ack → rendered has %d samples, want %d", name, f, r.Rendered.N, n)
			}
		}
	}
	for _, p := range []string{"notification", "reads", "verify", "in hand", "confd-style in hand", "persist", "stage", "check", "swap", "rendered", "status node"} {
		if s.Phases[p].N != n {
			t.Errorf("%s: phase %s has %d samples, want %d", name, p, s.Phases[p].N, n)
		}
	}
	for _, p := range []string{"reads", "persist", "stage", "swap"} {
		if d := s.Phases[p]; d.P50 <= 0 {
			t.Errorf("%s: phase %s p50 %.3f ms: the agent did not time it", name, p, d.P50)
		}
	}
	// Both processes render every publish: each spent CPU on it.
	if s.AgentCPU <= 0 || s.ConfdCPU <= 0 || s.CPURatio <= 0 {
		t.Errorf("%s: CPU per publish: agent %.2f ms, confd-style %.2f ms, ratio %.2f", name, s.AgentCPU, s.ConfdCPU, s.CPURatio)
	}
	for who, m := range map[string]bench.Memory{"agent": s.AgentRSS, "confd-style": s.ConfdRSS} {
		if !(m.Steady > 0 && m.Steady <= m.Max && m.Max <= m.Peak) {
			t.Errorf("%s: %s RSS %+v: want 0 < steady ≤ max ≤ peak", name, who, m)
		}
	}
}

package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/manifest"
)

// latSet builds a set result whose agent targets render in dir and tmpl
// ms against the confd-style follower's 10 ms.
func latSet(items, changed, size int, mode manifest.Mode, dir, tmpl float64) LatencySetResult {
	s := LatencySetResult{Items: items, Changed: changed, Size: size, Mode: mode}
	for f, p50 := range map[string]float64{latDir: dir, latTemplate: tmpl, latConfd: 10, latConfdTemplate: 10} {
		s.Rows = append(s.Rows, LatencyRow{Items: items, Changed: changed, Size: size, Follower: f, Publisher: "in-process", Rendered: Pct{N: 1, P50: p50}})
	}
	return s
}

// latPass builds an `apply: independent` pass whose dir target renders
// in dir ms against the confd-style file's confd ms.
func latPass(items, changed, size int, dir, confd float64) *LatencyPass {
	p := &LatencyPass{Apply: "independent", PassFigures: PassFigures{Phases: map[string]Pct{}}}
	for f, p50 := range map[string]float64{latDir: dir, latTemplate: 30, latConfd: confd, latConfdTemplate: 20} {
		p.Rows = append(p.Rows, LatencyRow{Items: items, Changed: changed, Size: size, Follower: f, Publisher: "in-process", Rendered: Pct{N: 1, P50: p50}})
	}
	return p
}

// TestLatencyTargets checks the summary's verdicts against hand-made
// results: each bound of issue 27 on the sets it applies to, marker-mode
// sets reported rather than judged against one Multi, confpush's target
// judged on its like-for-like pass (both alone) with the ratio under the
// agents' load beside it as information, the fleet's targets from a fleet
// report, and what was not measured said so.
func TestLatencyTargets(t *testing.T) {
	a := latSet(20, 1, 1024, "multi", 14, 16) // dir 1.4× met, template 1.6× not
	a.AgentCPU, a.ConfdCPU, a.CPURatio = 4, 2.5, 1.6
	a.ConfPush, a.Floor, a.FloorRatio, a.FloorItems = Pct{N: 1, P50: 30}, Pct{N: 1, P50: 20}, 1.5, 1
	a.AgentRSS = Memory{Steady: 20, Max: 21, Peak: 26}
	a.Fsync, a.LoadStart, a.LoadEnd = Pct{N: 20, P50: 0.6, P90: 1.1}, 2.5, 3.5
	a.InodeBefore = InodeProbe{N: 100, Create: Pct{N: 100, P50: 0.021, P90: 0.030}, Total: 3, Load: 2.5}
	a.InodeAfter = InodeProbe{N: 100, Create: Pct{N: 100, P50: 0.874, P90: 1.2}, Total: 90, Load: 3.4}
	a.Groups = &InodeGroups{Pool: 1218, Probe: 1218, Follower: 1219}
	b := latSet(20, 20, 64<<10, "marker", 30, 30)
	b.AgentCPU, b.ConfdCPU, b.CPURatio = 30, 10, 3
	b.ConfPush, b.Floor, b.FloorRatio, b.FloorItems = Pct{N: 1, P50: 300}, Pct{N: 1, P50: 100}, 3, 14
	b.AgentRSS = Memory{Steady: 20, Max: 21, Peak: 24}
	// confpush's target is judged like for like (both alone): a's 1.4×
	// meets it though its ratio under the agents' load (1.5×, above)
	// would too, b's is reported (marker mode), e's alone pass is missing.
	a.Alone = &ConfPushAlone{ConfPush: Pct{N: 1, P50: 28}, Floor: Pct{N: 1, P50: 20}, Ratio: 1.4, PairRatio: 1.38,
		ConfPushFirst: 27, ConfPushSecond: 29, FloorFirst: 19, FloorSecond: 21, LoadStart: 1.5, LoadEnd: 2}
	b.Alone = &ConfPushAlone{ConfPush: Pct{N: 1, P50: 250}, Floor: Pct{N: 1, P50: 100}, Ratio: 2.5, PairRatio: 2.4}
	c := latSet(100, 100, 1024, "multi", 19, 21) // bound 2: met, not
	c.ConfPush, c.Floor, c.FloorRatio, c.FloorItems = Pct{N: 1, P50: 20}, Pct{N: 1, P50: 10}, 2, 100
	d := latSet(100, 1, 1024, "multi", 50, 50) // no bound: reported
	d.AgentCPU, d.ConfdCPU, d.CPURatio = 6, 4, 1.5
	// The like-for-like passes: judged against their own pass's
	// confd-style file, with the shape's bound (c had none).
	a.Independent = latPass(20, 1, 1024, 12, 9)     // 1.33×: met (apply: all 1.4×)
	b.Independent = latPass(20, 20, 64<<10, 20, 12) // 1.67×: not met
	d.Independent = latPass(100, 1, 1024, 40, 10)   // no bound: reported

	fleet := &Report{Settings: Settings{Fleets: []int{1000}, Changed: 1}, Runs: []RunResult{{Fleets: []FleetResult{
		{Kind: kindProject, N: 1000, ClientCPU: 110, Propagation: Dist{P50: 120}, ClientRequests: 2, WireRequests: 2, ServerRequests: 2.01},
		{Kind: kindFloor, N: 1000, ClientCPU: 100, Propagation: Dist{P50: 100}, ClientRequests: 2, WireRequests: 2, ServerRequests: 2},
	}}}}
	// The fleet report reaches the latency run through its JSON.
	js, err := json.Marshal(fleet)
	if err != nil {
		t.Fatal(err)
	}
	var loaded Report
	if err := json.Unmarshal(js, &loaded); err != nil {
		t.Fatal(err)
	}
	r := &LatencyReport{Sets: []LatencySetResult{a, b, c, d}, Fleet: loaded.fleetTargets()}
	got := map[string]string{}
	for _, v := range r.Targets() {
		got[v.Target+" @ "+v.Set] = v.Status
	}
	probe := "durable-step probe: 4 KiB file written and fsynced, then its directory (per set, in the agent's state directory) @ "
	load := "load average (1 minute) of the machine @ "
	want := map[string]string{
		probe:                    statusReported,
		inodeProbeTarget + " @ ": statusReported,
		load:                     statusReported,
		"commit-ack → rendered p50, confagent dir ÷ confd-style @ 20/1 × 1 KiB":                     statusPass,
		"commit-ack → rendered p50, confagent template ÷ confd-style template @ 20/1 × 1 KiB":       statusMiss,
		"commit-ack → rendered p50, confagent dir ÷ confd-style @ 100/100 × 1 KiB":                  statusPass,
		"commit-ack → rendered p50, confagent template ÷ confd-style template @ 100/100 × 1 KiB":    statusMiss,
		"commit-ack → rendered p50, confagent dir ÷ confd-style @ 100/1 × 1 KiB":                    statusReported,
		"commit-ack → rendered p50, confagent dir ÷ confd-style @ 20/20 × 64 KiB":                   statusMiss,
		independentTarget + " @ 20/1 × 1 KiB":                                                       statusPass,
		independentTarget + " @ 20/20 × 64 KiB":                                                     statusMiss,
		independentTarget + " @ 100/1 × 1 KiB":                                                      statusReported,
		"agent CPU per publish ÷ confd-style's @ 20/1 × 1 KiB":                                      statusPass,
		"agent CPU per publish, one item of a 20-item set @ 20/1 × 1 KiB":                           statusPass,
		"agent CPU per publish ÷ confd-style's @ 20/20 × 64 KiB":                                    statusMiss,
		pushAloneTarget + " @ 20/1 × 1 KiB":                                                         statusPass,
		pushAloneTarget + " @ 20/20 × 64 KiB":                                                       statusReported,
		pushAloneTarget + " @ 100/100 × 1 KiB":                                                      statusMissing,
		pushUnderAgentsTarget + " @ 20/1 × 1 KiB":                                                   statusReported,
		pushUnderAgentsTarget + " @ 20/20 × 64 KiB":                                                 statusReported,
		pushUnderAgentsTarget + " @ 100/100 × 1 KiB":                                                statusReported,
		"agent RSS, 20-item set (peak, VmHWM) @ 20/1 × 1 KiB":                                       statusMiss,
		"agent RSS, 20-item set (peak, VmHWM) @ 20/20 × 64 KiB":                                     statusPass,
		"agent RSS, large set @ ":                                                                   statusMissing,
		"changed-item sizes 4 KiB and 64 KiB, and a sprig template target, measured @ ":             statusMiss,
		"cache as a library: client CPU per publish ÷ raw floor (largest fleet) @ N=1000, 1 run(s)": statusPass,
		"cache as a library: propagation p50 ÷ raw floor (largest fleet) @ N=1000, 1 run(s)":        statusMiss,
		"cache as a library: requests per publish per follower unchanged @ N=1000, 1 run(s)":        statusPass,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	for _, v := range r.Targets() {
		if v.Target+" @ " == probe && v.Measured != "p50 0.60–0.60 ms, p90 up to 1.10 ms (1 sets)" {
			t.Errorf("probe: %q, want the one set that ran it", v.Measured)
		}
		if v.Target+" @ " == load && !strings.HasSuffix(v.Measured, "; 0.00–3.50 during the sets") {
			t.Errorf("load: %q, want the sets' range", v.Measured)
		}
	}
	if _, ok := got["agent CPU per publish, one item of a 20-item set @ 100/1 × 1 KiB"]; ok {
		t.Error("the 5 ms bound was applied to a 100-item set")
	}
	if _, ok := got[pushAloneTarget+" @ 100/1 × 1 KiB"]; ok {
		t.Error("a confpush row for a set without a confpush phase")
	}
	if _, ok := got[independentTarget+" @ 100/100 × 1 KiB"]; ok {
		t.Error("a like-for-like row for a set that had no apply: independent pass")
	}
	// The like-for-like row says what it measured, and follows its set's
	// apply: all rows, which keep their names and figures.
	targets := r.Targets()
	for i, v := range targets {
		if v.Target == pushAloneTarget && v.Set == "20/1 × 1 KiB" {
			if v.Measured != "28.0 vs 20.0 ms (floor: 1 item(s); pairs' ratio p50 1.38×)" || v.Ratio != "1.40×" || v.Bound != "≤ 1.5×" {
				t.Errorf("confpush like for like 20/1: %+v", v)
			}
			// The row under the agents' load follows it, bound-less.
			if u := targets[i+1]; u.Target != pushUnderAgentsTarget || u.Set != v.Set || u.Measured != "30.0 vs 20.0 ms (floor: 1 item(s))" || u.Ratio != "1.50×" || u.Bound != "– (information)" {
				t.Errorf("confpush under the agents' load 20/1: %+v", u)
			}
		}
		if v.Target == independentTarget && v.Set == "20/1 × 1 KiB" {
			if v.Measured != "12.0 vs 9.00 ms" || v.Ratio != "1.33×" || v.Bound != "≤ 1.5×" {
				t.Errorf("like-for-like 20/1: %+v", v)
			}
			if i < 2 || targets[i-2].Target != "commit-ack → rendered p50, confagent dir ÷ confd-style" || targets[i-2].Measured != "14.0 vs 10.0 ms" {
				t.Errorf("like-for-like 20/1 is not after its set's apply: all rows: %+v", targets[max(0, i-2):i])
			}
		}
	}
	md := r.Markdown()
	for _, want := range []string{
		"**`confagent dir (apply: independent) ÷ confd-style`** is a second in-process pass",
		"## The dir target like for like: `apply: independent` (ms)",
		"| 20/1 × 1 KiB | 0.00 → 0.00 | 12.00 | 0.00 | 9.00 | 0.00 | 1.33× | 1.40× | 30.00 | 20.00 |",
		// The conditions per set: the inode-creation probe before and
		// after, in µs with its load; dashes for a set without it.
		"| 20/1 × 1 KiB | multi | 2.50 → 3.50 | 0.60 | 1.10 | 21 | 30 | 2.50 | 874 | 1200 | 3.40 | 1218 · 1218 · 1219 |",
		"| 100/100 × 1 KiB | multi | 0.00 → 0.00 | 0.00 | 0.00 | – | – | – | – | – | – | – |",
		"| " + inodeProbeTarget + " |  | p50 per creation 21–21 µs before the sets, 874–874 µs after their in-process pass (sets: 1) |",
		// confpush like for like, its bound, the pairs' ratio and the
		// ratio under the agents' load of the same set beside it; then
		// the phase's table, under its own heading.
		"### Like for like: both alone, alternated (the target)",
		"| 20/1 × 1 KiB | 1.50 → 2.00 | 28.00 | 0.00 | 20.00 | 0.00 | 1.40× | ≤ 1.5× | 1.38× | 1.50× | 27.00 · 29.00 | 19.00 · 21.00 |",
		"| 20/20 × 64 KiB | 0.00 → 0.00 | 250.00 | 0.00 | 100.00 | 0.00 | 2.50× | – (marker) | 2.40× | 3.00× |",
		"### Under the agents' load (information; it drives the confpush rows above)",
		"| 20/1 × 1 KiB | 30.00 | 0.00 | 20.00 | 0.00 | 1 | 1.50× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	a.Independent, b.Independent, d.Independent = nil, nil, nil

	// Without a fleet report the cache targets are listed, not measured;
	// with 4 KiB measured too, the coverage target passes; with no set
	// that ran the durable-step probe, it is not measured either.
	e := latSet(20, 1, 4096, "multi", 10, 10)
	a.Fsync, a.InodeBefore, a.InodeAfter = Pct{}, InodeProbe{}, InodeProbe{}
	r = &LatencyReport{Sets: []LatencySetResult{a, b, e}}
	n := 0
	for _, v := range r.Targets() {
		if v.Status == statusMissing && v.Set == "" {
			n++
		}
		if v.Target == "changed-item sizes 4 KiB and 64 KiB, and a sprig template target, measured" && v.Status != statusPass {
			t.Errorf("coverage: %s (%s)", v.Status, v.Measured)
		}
	}
	if n != 6 { // three cache targets, the large set, the two probes
		t.Errorf("%d targets not measured, want 6", n)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("the report does not encode: %v", err)
	}
	md = r.Markdown()
	if !strings.Contains(md, "| agent RSS, 20-item set (peak, VmHWM) | 20/1 × 1 KiB | 26.0 MiB") {
		t.Errorf("the markdown summary lacks the RSS row:\n%s", md)
	}
	if strings.Contains(md, "apply: independent") || strings.Contains(md, independentTarget) {
		t.Errorf("a run without apply: independent passes mentions them:\n%s", md)
	}
	// Without like-for-like confpush passes the target is not measured
	// (the ratio under the agents' load does not stand in for it), and the
	// report has no like-for-like table.
	a.Alone, b.Alone = nil, nil
	r = &LatencyReport{Sets: []LatencySetResult{a}}
	for _, v := range r.Targets() {
		if v.Target == pushAloneTarget && v.Status != statusMissing {
			t.Errorf("confpush without a like-for-like pass: %+v", v)
		}
	}
	// A marker-mode set gets no such pass (its ratio has no bound): it
	// is reported, not missing.
	r = &LatencyReport{Sets: []LatencySetResult{b}}
	for _, v := range r.Targets() {
		if v.Target == pushAloneTarget && v.Status != statusReported {
			t.Errorf("a marker-mode set without a like-for-like pass: %+v", v)
		}
	}
	r = &LatencyReport{Sets: []LatencySetResult{a}}
	if md := r.Markdown(); strings.Contains(md, "### Like for like") || !strings.Contains(md, "| 20/1 × 1 KiB | 30.00 | 0.00 | 20.00 | 0.00 | 1 | 1.50× |") {
		t.Errorf("the markdown without like-for-like passes:\n%s", md)
	}
}

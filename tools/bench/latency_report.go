package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkconf/zkconf/manifest"
)

// Bounds of the single-host targets (issue 27), each a ratio to the
// baseline measured in the same run unless it says otherwise.
const (
	boundRendered20    = 1.5  // commit-ack → rendered p50 ÷ confd-style, 20/1 and 20/20
	boundRendered100   = 2.0  // … 100/100
	boundAgentCPU      = 2.0  // agent CPU per publish ÷ confd-style's
	boundAgentCPU20x1  = 5.0  // ms, agent CPU per publish, 20 items, 1 changed
	boundConfPushFloor = 1.5  // confpush start → exit ÷ the raw floor's
	boundCacheCPU      = 1.2  // fleet: the caches' client CPU ÷ the floor's
	boundCacheP50      = 1.1  // fleet: propagation p50 ÷ the floor's
	boundAgentRSSMiB   = 25.0 // the agent's RSS with a 20-item set
)

// Verdict statuses.
const (
	statusPass     = "MET"
	statusMiss     = "NOT MET"
	statusReported = "REPORTED"
	statusMissing  = "NOT MEASURED"
)

// Verdict is one target and how the run did against it.
type Verdict struct {
	Target string `json:"target"`
	// Set is the set it was measured on ("" for fleet targets).
	Set      string `json:"set,omitempty"`
	Measured string `json:"measured"`
	Bound    string `json:"bound"`
	Ratio    string `json:"ratio"`
	// Status is MET, NOT MET, REPORTED (no bound) or NOT MEASURED.
	Status string `json:"status"`
}

func passIf(ok bool) string {
	if ok {
		return statusPass
	}
	return statusMiss
}

func ratioStr(v float64) string {
	if v <= 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
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

func (s *LatencySetResult) set() LatencySet {
	return LatencySet{Items: s.Items, Changed: s.Changed, Size: s.Size}
}

// renderedBound is the bound of commit-ack → rendered ÷ confd-style for
// a shape, 0 when the issue sets none.
func renderedBound(items, changed int) float64 {
	switch {
	case items == 20 && (changed == 1 || changed == 20):
		return boundRendered20
	case items == 100 && changed == 100:
		return boundRendered100
	}
	return 0
}

// independentTarget names the summary's like-for-like dir rows.
const independentTarget = "commit-ack → rendered p50, confagent dir (apply: independent) ÷ confd-style"

// independentVerdict is the set's dir target under `apply: independent`
// against the confd-style follower's file of the same pass, with the
// bound of the shape; false when the set had no such pass.
func (s *LatencySetResult) independentVerdict() (Verdict, bool) {
	p := s.Independent
	if p == nil {
		return Verdict{}, false
	}
	a, b := p.row(latDir), p.row(latConfd)
	if a == nil || b == nil {
		return Verdict{}, false
	}
	rt := finite(ratio(a.Rendered.P50, b.Rendered.P50))
	v := Verdict{Target: independentTarget, Set: s.set().String(),
		Measured: fmt.Sprintf("%s vs %s ms", f1(a.Rendered.P50), f1(b.Rendered.P50)), Ratio: ratioStr(rt), Status: statusReported, Bound: "–"}
	if bound := renderedBound(s.Items, s.Changed); bound > 0 {
		v.Bound, v.Status = fmt.Sprintf("≤ %g×", bound), passIf(rt > 0 && rt <= bound)
	}
	return v, true
}

// The summary's confpush rows. The target is judged on the like-for-like
// pass (LatencySetResult.Alone); the confpush phase's ratio, taken while
// the set's agent and follower render confpush's publishes and the floor
// writes a root nobody watches, is information.
const (
	pushAloneTarget       = "confpush publish start → exit p50 ÷ raw floor (connect, one Multi, close), like for like: both alone on roots nobody watches, alternated"
	pushUnderAgentsTarget = "confpush publish start → exit p50 ÷ raw floor, under the agents' load (confpush's root watched and rendered by the agent and the follower, the floor's by none)"
)

// pushAloneVerdict is the confpush target of the set, from its
// like-for-like pass: NOT MEASURED when it had none, reported without a
// bound in marker mode (a marker-mode publish is several transactions by
// design; one Multi is no floor for it, and such a set gets no pass).
func (s *LatencySetResult) pushAloneVerdict() Verdict {
	v := Verdict{Target: pushAloneTarget, Set: s.set().String(), Bound: fmt.Sprintf("≤ %g×", boundConfPushFloor)}
	a := s.Alone
	switch {
	case s.Mode == manifest.ModeMarker && (a == nil || a.Floor.N == 0):
		v.Measured, v.Bound, v.Ratio, v.Status = "– (marker mode: no like-for-like pass)", "– (marker mode)", "–", statusReported
		return v
	case a == nil || a.Floor.N == 0:
		v.Measured, v.Ratio, v.Status = "– (no like-for-like pass)", "–", statusMissing
		return v
	}
	v.Measured = fmt.Sprintf("%s vs %s ms (floor: %d item(s); pairs' ratio p50 %.2f×)", f1(a.ConfPush.P50), f1(a.Floor.P50), s.FloorItems, a.PairRatio)
	v.Ratio, v.Status = ratioStr(a.Ratio), passIf(a.Ratio > 0 && a.Ratio <= boundConfPushFloor)
	if s.Mode == manifest.ModeMarker {
		v.Bound, v.Status = "– (marker mode)", statusReported
	}
	return v
}

// row returns the pass's row of follower, or nil.
func (p *LatencyPass) row(follower string) *LatencyRow {
	for i := range p.Rows {
		if p.Rows[i].Follower == follower {
			return &p.Rows[i]
		}
	}
	return nil
}

// Targets checks the run against issue 27's targets, every one on every
// set it applies to, and adds the fleet's (cache as a library) when the
// report carries them.
func (r *LatencyReport) Targets() []Verdict {
	var render, cpu, push, rss []Verdict
	for i := range r.Sets {
		s := &r.Sets[i]
		set := s.set().String()
		for _, f := range []string{latDir, latTemplate} {
			a, b := s.row(f, "in-process"), s.row(latBaseline[f], "in-process")
			if a == nil || b == nil {
				continue
			}
			rt := finite(ratio(a.Rendered.P50, b.Rendered.P50))
			v := Verdict{Target: fmt.Sprintf("commit-ack → rendered p50, %s ÷ %s", f, latBaseline[f]), Set: set,
				Measured: fmt.Sprintf("%s vs %s ms", f1(a.Rendered.P50), f1(b.Rendered.P50)), Ratio: ratioStr(rt), Status: statusReported, Bound: "–"}
			if bound := renderedBound(s.Items, s.Changed); bound > 0 {
				v.Bound, v.Status = fmt.Sprintf("≤ %g×", bound), passIf(rt > 0 && rt <= bound)
			}
			render = append(render, v)
		}
		if v, ok := s.independentVerdict(); ok {
			render = append(render, v)
		}
		cpu = append(cpu, Verdict{Target: "agent CPU per publish ÷ confd-style's", Set: set,
			Measured: fmt.Sprintf("%s vs %s ms", f1(s.AgentCPU), f1(s.ConfdCPU)), Bound: fmt.Sprintf("≤ %g×", boundAgentCPU),
			Ratio: ratioStr(s.CPURatio), Status: passIf(s.CPURatio > 0 && s.CPURatio <= boundAgentCPU)})
		if s.Items == 20 && s.Changed == 1 {
			cpu = append(cpu, Verdict{Target: "agent CPU per publish, one item of a 20-item set", Set: set,
				Measured: fmt.Sprintf("%s ms", f1(s.AgentCPU)), Bound: fmt.Sprintf("≤ %g ms", boundAgentCPU20x1),
				Ratio: ratioStr(s.AgentCPU / boundAgentCPU20x1), Status: passIf(s.AgentCPU <= boundAgentCPU20x1)})
		}
		if s.Floor.N > 0 {
			push = append(push, s.pushAloneVerdict(), Verdict{Target: pushUnderAgentsTarget, Set: set,
				Measured: fmt.Sprintf("%s vs %s ms (floor: %d item(s))", f1(s.ConfPush.P50), f1(s.Floor.P50), s.FloorItems),
				Bound:    "– (information)", Ratio: ratioStr(s.FloorRatio), Status: statusReported})
		}
		if s.Items == 20 {
			rss = append(rss, Verdict{Target: "agent RSS, 20-item set (peak, VmHWM)", Set: set,
				Measured: fmt.Sprintf("%.1f MiB (steady %.1f, confd-style %.1f)", s.AgentRSS.Peak, s.AgentRSS.Steady, s.ConfdRSS.Peak),
				Bound:    fmt.Sprintf("≤ %g MiB", boundAgentRSSMiB), Ratio: ratioStr(s.AgentRSS.Peak / boundAgentRSSMiB),
				Status: passIf(s.AgentRSS.Peak > 0 && s.AgentRSS.Peak <= boundAgentRSSMiB)})
		}
	}
	out := slices.Concat(render, cpu, push)
	out = append(out, r.fleetVerdicts()...)
	out = append(out, rss...)
	if m := r.Memory; m != nil {
		out = append(out, Verdict{Target: "agent RSS, large set (dir target only)", Set: m.set().String(),
			Measured: fmt.Sprintf("%.1f MiB peak, %.1f steady (confd-style %.1f peak)", m.AgentRSS.Peak, m.AgentRSS.Steady, m.ConfdRSS.Peak),
			Bound:    "say what it is", Ratio: "–", Status: statusReported})
	} else {
		out = append(out, Verdict{Target: "agent RSS, large set", Measured: "–", Bound: "say what it is", Ratio: "–", Status: statusMissing})
	}
	var sizes []int
	tmpl := false
	for _, s := range r.Sets {
		sizes = append(sizes, s.Size)
		tmpl = tmpl || s.row(latTemplate, "in-process") != nil
	}
	cover := slices.Contains(sizes, 4<<10) && slices.Contains(sizes, 64<<10) && tmpl
	var names []string
	for _, z := range slices.Compact(slices.Sorted(slices.Values(sizes))) {
		names = append(names, size(z))
	}
	out = append(out, Verdict{Target: "changed-item sizes 4 KiB and 64 KiB, and a sprig template target, measured",
		Measured: fmt.Sprintf("sizes %s; template target %v", strings.Join(names, ", "), tmpl), Bound: "all three", Ratio: "–", Status: passIf(cover)})
	return append(out, r.conditions()...)
}

// conditions are the run's conditions the targets were measured under,
// reported beside them: the durable-step probe and the load average.
func (r *LatencyReport) conditions() []Verdict {
	var p50s, p90s, loads []float64
	for _, s := range r.allSets() {
		if s.Fsync.N > 0 {
			p50s, p90s = append(p50s, s.Fsync.P50), append(p90s, s.Fsync.P90)
		}
		loads = append(loads, s.LoadStart, s.LoadEnd)
	}
	probe := Verdict{Target: "durable-step probe: 4 KiB file written and fsynced, then its directory (per set, in the agent's state directory)",
		Measured: "–", Bound: "say what it is", Ratio: "–", Status: statusMissing}
	if len(p50s) > 0 {
		probe.Measured = fmt.Sprintf("p50 %.2f–%.2f ms, p90 up to %.2f ms (%d sets)", slices.Min(p50s), slices.Max(p50s), slices.Max(p90s), len(p50s))
		probe.Status = statusReported
	}
	var before, after []float64
	for _, s := range r.allSets() {
		if s.InodeBefore.N > 0 {
			before = append(before, s.InodeBefore.Create.P50*1e3)
		}
		if s.InodeAfter.N > 0 {
			after = append(after, s.InodeAfter.Create.P50*1e3)
		}
	}
	inodes := Verdict{Target: inodeProbeTarget, Measured: "–", Bound: "say what it is", Ratio: "–", Status: statusMissing}
	if len(before)+len(after) > 0 {
		inodes.Measured = fmt.Sprintf("p50 per creation %s before the sets, %s after their in-process pass (sets: %d)",
			usRange(before), usRange(after), max(len(before), len(after)))
		inodes.Status = statusReported
	}
	load := Verdict{Target: "load average (1 minute) of the machine", Measured: fmt.Sprintf("%.2f at the start, %.2f at the end", r.Env.LoadStart, r.Env.LoadEnd),
		Bound: "say what it is", Ratio: "–", Status: statusReported}
	if len(loads) > 0 {
		load.Measured += fmt.Sprintf("; %.2f–%.2f during the sets", slices.Min(loads), slices.Max(loads))
	}
	return []Verdict{probe, inodes, load}
}

// inodeProbeTarget names the inode-creation probe's row in the summary.
const inodeProbeTarget = "inode-creation probe: empty files created beside the agent's dir target (per set, before it and after its in-process pass)"

// usRange prints the range of vs (µs), "–" when empty.
func usRange(vs []float64) string {
	if len(vs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f–%.0f µs", slices.Min(vs), slices.Max(vs))
}

// FleetTargets are the fleet benchmark's (`confbench --agents …`) figures
// for the cache as a library, at its largest fleet: the zkconf caches
// against the raw floor, medians of its runs.
type FleetTargets struct {
	Started   time.Time `json:"started"`
	Runs      int       `json:"runs"`
	N         int       `json:"n"`
	Changed   int       `json:"changed"`
	LoadStart float64   `json:"load_average_start"`
	LoadEnd   float64   `json:"load_average_end"`
	// CPU and FloorCPU are the client CPU ms per publish (the benchmark
	// process, publisher included, from the commit to the last follower);
	// CPURatio their per-run ratio's median, CPUMin and CPUMax its range.
	CPU      float64 `json:"client_cpu_ms_per_publish"`
	FloorCPU float64 `json:"floor_client_cpu_ms_per_publish"`
	CPURatio float64 `json:"client_cpu_ratio"`
	CPUMin   float64 `json:"client_cpu_ratio_min"`
	CPUMax   float64 `json:"client_cpu_ratio_max"`
	// P50 and FloorP50 are propagation p50s (ms); P50Ratio the per-run
	// ratio's median, P50Min and P50Max its range.
	P50      float64 `json:"propagation_p50_ms"`
	FloorP50 float64 `json:"floor_propagation_p50_ms"`
	P50Ratio float64 `json:"p50_ratio"`
	P50Min   float64 `json:"p50_ratio_min"`
	P50Max   float64 `json:"p50_ratio_max"`
	// Requests per publish per follower of the caches: as they count
	// them, on the wire, and at the server.
	ClientRequests float64 `json:"client_requests"`
	WireRequests   float64 `json:"wire_requests"`
	ServerRequests float64 `json:"server_requests"`
}

// fleetTargets summarises r for the latency summary; nil when it measured
// no fleet with both the caches and the floor.
func (r *Report) fleetTargets() *FleetTargets {
	if len(r.Runs) == 0 || len(r.Settings.Fleets) == 0 {
		return nil
	}
	n := slices.Max(r.Settings.Fleets)
	p, fl := r.Fleet(n, kindProject), r.Fleet(n, kindFloor)
	if p.Runs == 0 || fl.Runs == 0 {
		return nil
	}
	cpu := r.ratioOver(n, kindFloor, func(a, b FleetResult) float64 { return ratio(a.ClientCPU, b.ClientCPU) })
	p50r := r.ratioOver(n, kindFloor, func(a, b FleetResult) float64 { return ratio(p50(a), p50(b)) })
	return &FleetTargets{
		Started: r.Started, Runs: len(r.Runs), N: n, Changed: r.Settings.Changed, LoadStart: r.Env.LoadStart, LoadEnd: r.Env.LoadEnd,
		CPU: finite(p.ClientCPU), FloorCPU: finite(fl.ClientCPU),
		CPURatio: finite(cpu.Median), CPUMin: finite(cpu.Min), CPUMax: finite(cpu.Max),
		P50: finite(p.Propagation.P50), FloorP50: finite(fl.Propagation.P50),
		P50Ratio: finite(p50r.Median), P50Min: finite(p50r.Min), P50Max: finite(p50r.Max),
		ClientRequests: p.ClientRequests, WireRequests: p.WireRequests, ServerRequests: p.ServerRequests,
	}
}

// requestsUnchanged says whether the caches made exactly one root read
// and one read per changed item per publish (the server's count may add
// a ping's share).
func (f *FleetTargets) requestsUnchanged() bool {
	want := float64(1 + f.Changed)
	return math.Abs(f.ClientRequests-want) < 0.005 && math.Abs(f.WireRequests-want) < 0.005 && math.Abs(f.ServerRequests-want) < 0.05
}

// fleetVerdicts are the cache-as-a-library targets.
func (r *LatencyReport) fleetVerdicts() []Verdict {
	names := []string{
		"cache as a library: client CPU per publish ÷ raw floor (largest fleet)",
		"cache as a library: propagation p50 ÷ raw floor (largest fleet)",
		"cache as a library: requests per publish per follower unchanged",
	}
	f := r.Fleet
	if f == nil {
		var out []Verdict
		for _, n := range names {
			out = append(out, Verdict{Target: n, Measured: "– (no fleet results: confbench --agents 1000 first, or --fleet-results)", Bound: "–", Ratio: "–", Status: statusMissing})
		}
		return out
	}
	set := fmt.Sprintf("N=%d, %d run(s)", f.N, f.Runs)
	return []Verdict{
		{Target: names[0], Set: set, Measured: fmt.Sprintf("%s vs %s ms (runs %.2f–%.2f)", f1(f.CPU), f1(f.FloorCPU), f.CPUMin, f.CPUMax),
			Bound: fmt.Sprintf("≤ %g×", boundCacheCPU), Ratio: ratioStr(f.CPURatio), Status: passIf(f.CPURatio > 0 && f.CPURatio <= boundCacheCPU)},
		{Target: names[1], Set: set, Measured: fmt.Sprintf("%s vs %s ms (runs %.2f–%.2f)", f1(f.P50), f1(f.FloorP50), f.P50Min, f.P50Max),
			Bound: fmt.Sprintf("≤ %g×", boundCacheP50), Ratio: ratioStr(f.P50Ratio), Status: passIf(f.P50Ratio > 0 && f.P50Ratio <= boundCacheP50)},
		{Target: names[2], Set: set, Measured: fmt.Sprintf("%.2f · %.2f · %.2f (client · wire · server)", f.ClientRequests, f.WireRequests, f.ServerRequests),
			Bound: fmt.Sprintf("= %d.00", 1+f.Changed), Ratio: ratioStr(f.ClientRequests / float64(1+f.Changed)), Status: passIf(f.requestsUnchanged())},
	}
}

// Markdown renders the report.
func (r *LatencyReport) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Single-host latency (confbench latency)\n\n")
	w("Started %s, %.0f s. %s, %d cores, %s, ZooKeeper %s (standalone%s). **Load average %.2f at the start, %.2f at the end.**\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Seconds, r.Env.CPU, r.Env.Cores, r.Env.Go, r.Env.ZooKeeper,
		map[bool]string{true: ", started by the benchmark", false: ", given"}[r.Env.OwnServer], r.Env.LoadStart, r.Env.LoadEnd)
	w("%d measured publishes per set and publisher after %d unmeasured; %s between publishes. The agent (confagent) renders a `dir` target and a `template` target (sprig helpers over every item); the confd-style follower (raw go-zookeeper, a process of its own) renders a file of every item and the same template, with no verification, fsync or state. Ratios compare each agent target with the confd-style output of the same kind.\n\n",
		r.Config.Publishes, r.Config.Warmup, r.Config.Gap)
	w("What the dir rows compare. The agent runs under its default `apply: all`: the dir target is swapped in only once every target is staged and checked, so **`confagent dir ÷ confd-style`** is commit-ack → the dir target swapped after the template target too was rendered over the whole set, written and fsynced, against the follower's file of every item, which it writes *before* it renders its template: the agent's whole apply against the follower's first output. ")
	if r.hasIndependent() {
		w("**`confagent dir (apply: independent) ÷ confd-style`** is a second in-process pass of the set (after its confpush phase): the same agent configuration with `apply: independent` alone added, restarted on the same state directory and outputs beside the same follower, root and publisher (never two agents at once); the dir target, configured first, is then staged, made durable and swapped before the template target is rendered, in the follower's order: like for like, each side's first output. ")
	}
	w("The template rows are like for like (each side's template is its last output).\n\n")

	if len(r.Config.ConfAgentEnv) > 0 {
		w("**Agent environment: `%s`.**\n\n", strings.Join(r.Config.ConfAgentEnv, " "))
	}
	w("## Summary: issue 27's targets\n\n| target | set | measured | bound | ratio | verdict |\n|---|---|---|---|---:|---|\n")
	for _, v := range r.Targets() {
		w("| %s | %s | %s | %s | %s | **%s** |\n", v.Target, v.Set, v.Measured, v.Bound, v.Ratio, v.Status)
	}
	w("\n### Conditions per set\n\nThe durable-step probe: a new 4 KiB file written and fsynced, then its directory fsynced, 20 times in the agent's state directory between the two publishers' runs (what one durable step of the agent's path cost on this disk at the time; the confd-style follower takes none).\n\n")
	w("The inode-creation probe: %d empty files created one after another (an exclusive open and a close, as the dir target's pool makes its files) in a directory of the benchmark's beside the agent's dir target, and left there until the run's end (removed now, they would be recently freed inodes every later creation in their group steps over); before the set's first agent starts (what other processes and earlier sets left) and again after the in-process pass (what this set's publishes left), with the load average just before each. On ext4 without a journal each creation steps over the inodes of its block group freed in the last 60 s (360 s while their inode-table block is dirty), whoever freed them, so where the probe's directory shares its group with the agent's pool (usually; the file system places directories, and it can put them apart) this is what one of the agent's per-item creations cost at the time; the confd-style follower makes two per publish.\n\n", inodeProbeFiles)
	w("The groups (ext4 only) are the block groups of a file of the agent's pool, of the after probe's first file and of the follower's file, after the pass: the probe speaks for the pool where the two are the same.\n\n")
	if r.SpreadSets {
		w("**Each set's directory has a block group of its own** (the run's directory carries ext4's FS_TOPDIR_FL, `chattr +T`: the allocator places each set's directory as it places a directory of the root, away from its siblings): what a set's creations step over is what that set's agent and follower freed, not what the binaries' builds, earlier sets or other processes of the machine freed in the minutes before. The before probe shows what the group held when the set started.\n\n")
	} else {
		w("**The sets' directories share block groups** (FS_TOPDIR_FL could not be set on the run's directory): a set's creations also step over what earlier sets, the binaries' builds and other processes freed.\n\n")
	}
	w("| set | publish mode | load average start → end | durable step p50 | p90 | inode creation before: p50 µs | p90 µs | load | after: p50 µs | p90 µs | load | groups: pool · probe · follower |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.allSets() {
		w("| %s | %s | %.2f → %.2f | %.2f | %.2f | %s | %s | %s |\n", s.set(), s.Mode, s.LoadStart, s.LoadEnd, s.Fsync.P50, s.Fsync.P90, s.InodeBefore.cells(), s.InodeAfter.cells(), s.Groups.cell())
	}

	w("\n## Commit-ack → rendered, and publish start → rendered (ms)\n\n")
	w("| set | follower | publisher | ack→rendered p50 | p90 | max | start→rendered p50 | p90 | max |\n")
	w("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.allSets() {
		for _, row := range s.Rows {
			ack := "– | – | –"
			if row.Rendered.N > 0 {
				ack = fmt.Sprintf("%.2f | %.2f | %.2f", row.Rendered.P50, row.Rendered.P90, row.Rendered.Max)
			}
			w("| %s | %s | %s | %s | %.2f | %.2f | %.2f |\n", s.set(), row.Follower, row.Publisher, ack, row.EndToEnd.P50, row.EndToEnd.P90, row.EndToEnd.Max)
		}
	}

	if r.hasIndependent() {
		w("\n## The dir target like for like: `apply: independent` (ms)\n\n")
		w("The second in-process pass of each set `--independent` names: the agent restarted with `apply: independent` on the set's state and outputs, beside the same confd-style follower, %d measured publishes after %d unmeasured. Commit-ack → rendered p50 and p90; the dir ratio of this pass beside the `apply: all` one of the first pass; CPU per publish over the pass; in hand and persist as in the phases below (stage and swap, summed over the two targets applied one after the other, are in the JSON).\n\n",
			r.Config.Publishes, r.Config.Warmup)
		w("| set | load start → end | dir p50 | p90 | confd-style p50 | p90 | ratio | apply: all ratio | template p50 | confd-style template p50 | agent CPU ms | confd-style CPU ms | in hand | persist |\n")
		w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Sets {
			p := s.Independent
			if p == nil {
				continue
			}
			p50 := func(row *LatencyRow) string {
				if row == nil || row.Rendered.N == 0 {
					return "– | –"
				}
				return fmt.Sprintf("%.2f | %.2f", row.Rendered.P50, row.Rendered.P90)
			}
			only50 := func(row *LatencyRow) string {
				if row == nil || row.Rendered.N == 0 {
					return "–"
				}
				return fmt.Sprintf("%.2f", row.Rendered.P50)
			}
			dir, cd := p.row(latDir), p.row(latConfd)
			rt := 0.0
			if dir != nil && cd != nil {
				rt = ratio(dir.Rendered.P50, cd.Rendered.P50)
			}
			all := 0.0
			if a, b := s.row(latDir, "in-process"), s.row(latConfd, "in-process"); a != nil && b != nil {
				all = ratio(a.Rendered.P50, b.Rendered.P50)
			}
			w("| %s | %.2f → %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f |\n", s.set(), p.LoadStart, p.LoadEnd, p50(dir), p50(cd), ratioStr(rt), ratioStr(all),
				only50(p.row(latTemplate)), only50(p.row(latConfdTemplate)), f1(p.AgentCPU), f1(p.ConfdCPU), p.Phases["in hand"].P50, p.Phases["persist"].P50)
		}
	}

	w("\n## The agent's phases, p50 (ms)\n\n")
	w("In-process publisher, the `apply: all` pass. notification: commit-ack → the cache's cycle starts; reads: the cycle until every item is read and verified; verify: hashing, summed over reads in flight; in hand: commit-ack → the agent's reads done; confd-style in hand: commit-ack → the confd-style follower's last item read; persist: the state file; stage, check, swap: the renderer (every target); rendered: commit-ack → the dir target swapped in; status node: commit-ack → the status node says the generation (written off the critical path).\n\n")
	w("| set |")
	for _, p := range latPhases {
		w(" %s |", p)
	}
	w(" publish call→ack |\n|---|%s---:|\n", strings.Repeat("---:|", len(latPhases)))
	for _, s := range r.allSets() {
		w("| %s |", s.set())
		for _, p := range latPhases {
			w(" %.2f |", s.Phases[p].P50)
		}
		w(" %.2f |\n", s.Publish.P50)
	}

	w("\n## CPU and memory per process\n\n")
	w("CPU: milliseconds per publish over the in-process publisher's measured publishes (the `apply: all` pass), every thread (/proc/<pid>/task/*/schedstat). RSS (MiB): steady is the median and max the largest of the samples taken after every measured publish; peak is VmHWM at the end (since the process started).\n\n")
	w("| set | agent CPU ms | confd-style CPU ms | ratio | agent RSS steady | max | peak | anon · file | confd-style RSS steady | peak |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, s := range r.allSets() {
		w("| %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f · %.1f | %.1f | %.1f |\n", s.set(), f1(s.AgentCPU), f1(s.ConfdCPU), ratioStr(s.CPURatio),
			s.AgentRSS.Steady, s.AgentRSS.Max, s.AgentRSS.Peak, s.AgentRSS.Anon, s.AgentRSS.File, s.ConfdRSS.Steady, s.ConfdRSS.Peak)
	}
	if r.Memory != nil {
		w("\nThe last row is the memory run: %d publishes, the dir target only (no template target, no confpush).\n", r.Config.MemoryPublishes)
	}

	w("\n## `confpush publish` against its floor (ms)\n\n")
	w("Process start → exit. The floor is a raw go-zookeeper program (`zkfloor`, built by the benchmark; go-zookeeper and the standard library only) that connects, sends one Multi of the commit's operations (the root's data of the manifest's size, the changed items' data — as many as fit one Multi —, a Check per item, a history entry's Create) and closes: three server writes, each a transaction-log fsync. It times its three writes inside the process (session: zk.Connect → session established). confpush's input (the set's files) is written and synced before its clock starts, so that the writeback of those bytes does not share the disk with the server's fsyncs of confpush's writes. In the set's confpush phase (under the agents' load, below) the floor runs right after each confpush, then each program's start-up alone: `confpush --version` and `zkfloor start` (process start, runtime and package initialisation, exit).\n\n")
	if r.hasAlone() {
		w("### Like for like: both alone, alternated (the target)\n\n")
		w("After the set's confpush phase below, confpush publishes the same shape of set (the same items, sizes and changes per publish) to a root of its own **that nobody watches**, as the floor's root is not watched: an in-process publisher first brings that root to the generation the set's root had when its confpush phase began (the same history: the history GC falls on the same publishes), and the floor keeps its root. %d measured rounds after %d unmeasured; each round writes and syncs confpush's input, then runs confpush and the floor, each after the same pause (half the gap), **in ABBA order** (confpush first in rounds 1 and 4 of every four: each program first in half the rounds, and confpush's history GC, every sixth publish, in both orders). The set's agent and follower stay up, idle. The ratio is p50 ÷ p50 (the target); the pairs' ratio is the median of each round's confpush ÷ floor; first · second are the p50s of the rounds a program ran first and second.\n\n",
			r.Config.Publishes, r.Config.Warmup)
		w("| set | load start → end | confpush p50 | p90 | floor p50 | p90 | ratio p50 | bound | pairs' ratio | under the agents' load: ratio | confpush first · second | floor first · second | floor session · Multi · close p50 |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|---|\n")
		for _, s := range r.Sets {
			a := s.Alone
			if a == nil {
				continue
			}
			bound := fmt.Sprintf("≤ %g×", boundConfPushFloor)
			if s.Mode == manifest.ModeMarker {
				bound = "– (marker)"
			}
			w("| %s | %.2f → %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s | %.2f · %.2f | %.2f · %.2f | %.2f · %.2f · %.2f |\n", s.set(), a.LoadStart, a.LoadEnd,
				a.ConfPush.P50, a.ConfPush.P90, a.Floor.P50, a.Floor.P90, ratioStr(a.Ratio), bound, ratioStr(a.PairRatio), ratioStr(s.FloorRatio),
				a.ConfPushFirst, a.ConfPushSecond, a.FloorFirst, a.FloorSecond, a.FloorSession.P50, a.FloorMulti.P50, a.FloorClose.P50)
		}
		w("\n### Under the agents' load (information; it drives the confpush rows above)\n\n")
	}
	w("confpush publishes the set's root, which the agent and the confd-style follower watch: the server sends their notifications before confpush's commit answer, and confpush's close and exit run while they read and render on the same CPUs; the floor's root nobody watches. On a fleet the agents run on other hosts.\n\n")
	w("| set | confpush p50 | p90 | floor p50 | p90 | floor items | ratio p50 | floor session · Multi · close p50 | start-up p50: confpush · floor |\n|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, s := range r.Sets {
		w("| %s | %.2f | %.2f | %.2f | %.2f | %d | %s | %.2f · %.2f · %.2f | %.2f · %.2f |\n", s.set(), s.ConfPush.P50, s.ConfPush.P90, s.Floor.P50, s.Floor.P90, s.FloorItems, ratioStr(s.FloorRatio),
			s.FloorSession.P50, s.FloorMulti.P50, s.FloorClose.P50, s.ConfPushStart.P50, s.FloorStart.P50)
	}

	if f := r.Fleet; f != nil {
		w("\n## Cache as a library (fleet benchmark)\n\n")
		w("From the fleet report (`confbench`, results.json) started %s: %d run(s), largest fleet N=%d, %d changed per publish, load average %.2f → %.2f.\n\n",
			f.Started.UTC().Format("2006-01-02 15:04 UTC"), f.Runs, f.N, f.Changed, f.LoadStart, f.LoadEnd)
		w("| | zkconf caches | raw floor | ratio (median of runs) |\n|---|---:|---:|---:|\n")
		w("| client CPU ms per publish | %s | %s | %s |\n", f1(f.CPU), f1(f.FloorCPU), ratioStr(f.CPURatio))
		w("| propagation p50 ms | %s | %s | %s |\n", f1(f.P50), f1(f.FloorP50), ratioStr(f.P50Ratio))
		w("| requests per publish per follower (client · wire · server) | %.2f · %.2f · %.2f | | |\n", f.ClientRequests, f.WireRequests, f.ServerRequests)
	}
	var perf []string
	for _, s := range r.Sets {
		perf = append(perf, s.Perf...)
	}
	if len(perf) > 0 {
		w("\n## Profiles: the agent's CPU by phase\n\n`perf record -g` (999 Hz) of the agent over each set's measured in-process publishes (the timings above then include perf's own cost): %s. ", strings.Join(perf, ", "))
		w("Each sample counts for the phase of the first zkconf or go-zookeeper frame from the leaf (the standard library, the runtime and the kernel count for their caller); a sample with the collector's work anywhere on its stack is GC. ms/publish is the share × the agent's CPU per publish.\n\n")
		w("| phase |")
		for _, s := range r.Sets {
			if s.PerfSamples > 0 {
				w(" %s %% | ms/publish |", s.set())
			}
		}
		w("\n|---|%s\n", strings.Repeat("---:|---:|", len(perf)/2))
		for _, p := range CPUPhases {
			w("| %s |", p)
			for _, s := range r.Sets {
				if s.PerfSamples > 0 {
					w(" %.1f | %.2f |", 100*s.CPUPhases[p], s.CPUPhases[p]*s.AgentCPU)
				}
			}
			w("\n")
		}
		w("| samples |")
		for _, s := range r.Sets {
			if s.PerfSamples > 0 {
				w(" %d | |", s.PerfSamples)
			}
		}
		w("\n")
	}
	return b.String()
}

// hasIndependent says whether any set had an `apply: independent` pass.
func (r *LatencyReport) hasIndependent() bool {
	return slices.ContainsFunc(r.Sets, func(s LatencySetResult) bool { return s.Independent != nil })
}

// hasAlone says whether any set had the like-for-like confpush pass.
func (r *LatencyReport) hasAlone() bool {
	return slices.ContainsFunc(r.Sets, func(s LatencySetResult) bool { return s.Alone != nil })
}

// allSets are the sets, then the memory run.
func (r *LatencyReport) allSets() []*LatencySetResult {
	var out []*LatencySetResult
	for i := range r.Sets {
		out = append(out, &r.Sets[i])
	}
	if r.Memory != nil {
		out = append(out, r.Memory)
	}
	return out
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

// cells are the probe's cells in the conditions table: p50, p90 (µs), the
// load average; dashes when the probe did not run.
func (p InodeProbe) cells() string {
	if p.N == 0 {
		return "– | – | –"
	}
	return fmt.Sprintf("%.0f | %.0f | %.2f", p.Create.P50*1e3, p.Create.P90*1e3, p.Load)
}

// cell is the groups' cell in the conditions table: "–" off ext4, and
// for an inode that was not there.
func (g *InodeGroups) cell() string {
	if g == nil {
		return "–"
	}
	one := func(n int) string {
		if n < 0 {
			return "–"
		}
		return strconv.Itoa(n)
	}
	return one(g.Pool) + " · " + one(g.Probe) + " · " + one(g.Follower)
}

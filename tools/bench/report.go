package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Target bounds: how close to raw ZooKeeper zkconf must stay, the
// headline of docs/bench/README.md.
const (
	targetFloorRatio  = 1.25 // propagation p99 at the largest fleet, ÷ floor
	targetPublishRaw  = 1.5  // publish of 100 × 4 KiB ÷ raw Multi
	targetRSSMiB      = 25.0
	targetIdleCPU     = 0.5 // percent of a core
	targetReqConstant = 1.0 // requests per publish per follower ≤ 1 + changed + this
)

// FleetSummary is one kind at one fleet size, as the median of the runs.
type FleetSummary struct {
	FleetResult
	// Runs is the number of runs summarised.
	Runs int
}

// fleetRuns returns kind's results at fleet size n, one per run.
func (r *Report) fleetRuns(n int, kind string) []FleetResult {
	var out []FleetResult
	for _, run := range r.Runs {
		for _, f := range run.Fleets {
			if f.N == n && f.Kind == kind {
				out = append(out, f)
			}
		}
	}
	return out
}

// Fleet returns the median over runs of kind at fleet size n.
func (r *Report) Fleet(n int, kind string) FleetSummary {
	rs := r.fleetRuns(n, kind)
	s := FleetSummary{Runs: len(rs)}
	if len(rs) == 0 {
		return s
	}
	pick := func(f func(FleetResult) float64) float64 {
		vs := make([]float64, len(rs))
		for i, x := range rs {
			vs[i] = f(x)
		}
		return median(vs)
	}
	dists := func(f func(FleetResult) Dist) Dist {
		ds := make([]Dist, len(rs))
		for i, x := range rs {
			ds[i] = f(x)
		}
		return medianDist(ds)
	}
	s.Kind, s.N = kind, n
	s.Propagation = dists(func(f FleetResult) Dist { return f.Propagation })
	s.Last = dists(func(f FleetResult) Dist { return f.Last })
	s.Publish = dists(func(f FleetResult) Dist { return f.Publish })
	s.PublishCall = dists(func(f FleetResult) Dist { return f.PublishCall })
	s.ClientRequests = pick(func(f FleetResult) float64 { return f.ClientRequests })
	s.WireRequests = pick(func(f FleetResult) float64 { return f.WireRequests })
	s.ServerRequests = pick(func(f FleetResult) float64 { return f.ServerRequests })
	s.ClientCPU = pick(func(f FleetResult) float64 { return f.ClientCPU })
	s.ServerCPU = pick(func(f FleetResult) float64 { return f.ServerCPU })
	s.Ops = map[string]float64{}
	for _, x := range rs {
		s.SessionEvents += x.SessionEvents
		if abs64(x.Discrepancy) > abs64(s.Discrepancy) {
			s.Discrepancy = x.Discrepancy
		}
		for k := range x.Ops {
			s.Ops[k] = pick(func(f FleetResult) float64 { return f.Ops[k] })
		}
	}
	return s
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Ratio is a per-run ratio summarised over runs.
type Ratio struct {
	Median, Min, Max float64
}

// ratioOver computes f(project, other) in every run.
func (r *Report) ratioOver(n int, other string, f func(p, o FleetResult) float64) Ratio {
	ps, os := r.fleetRuns(n, kindProject), r.fleetRuns(n, other)
	var vs []float64
	for i := range min(len(ps), len(os)) {
		vs = append(vs, f(ps[i], os[i]))
	}
	lo, hi := spread(vs)
	return Ratio{Median: median(vs), Min: lo, Max: hi}
}

func p50(f FleetResult) float64     { return f.Propagation.P50 }
func p99(f FleetResult) float64     { return f.Propagation.P99 }
func lastP99(f FleetResult) float64 { return f.Last.P99 }

// TargetStatus is one target of the issue and how the run did.
type TargetStatus struct {
	Target   string `json:"target"`
	Measured string `json:"measured"`
	// Status is "met", "NOT met" or "reported" (no bound).
	Status string `json:"status"`
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// Targets evaluates the targets on the medians of the runs.
func (r *Report) Targets() []TargetStatus {
	var out []TargetStatus
	fleets := r.Settings.Fleets
	if len(r.Runs) == 0 || len(fleets) == 0 {
		return nil
	}
	big := slices.Max(fleets)
	fr := r.ratioOver(big, kindFloor, func(p, o FleetResult) float64 { return ratio(p99(p), p99(o)) })
	nr := r.ratioOver(big, kindNaive, func(p, o FleetResult) float64 { return ratio(p99(p), p99(o)) })
	out = append(out, TargetStatus{
		Target:   fmt.Sprintf("propagation p99 at N=%d ≤ %.2f× floor", big, targetFloorRatio),
		Measured: fmt.Sprintf("%.2f× (%s ms vs %s ms; runs %s)", fr.Median, f1(r.Fleet(big, kindProject).Propagation.P99), f1(r.Fleet(big, kindFloor).Propagation.P99), rangeStr(fr)),
		Status:   verdict(fr.Median <= targetFloorRatio),
	}, TargetStatus{
		Target:   fmt.Sprintf("propagation p99 at N=%d below naive", big),
		Measured: fmt.Sprintf("%.2f× (%s ms vs %s ms; runs %s)", nr.Median, f1(r.Fleet(big, kindProject).Propagation.P99), f1(r.Fleet(big, kindNaive).Propagation.P99), rangeStr(nr)),
		Status:   verdict(nr.Median < 1),
	})
	if a := r.agents(); a != nil {
		out = append(out, TargetStatus{
			Target:   "confagent propagation p50 (dir target, fsync)",
			Measured: fmt.Sprintf("%s ms to the file (p99 %s ms), %s ms to the status node", f1(a.File.P50), f1(a.File.P99), f1(a.Status.P50)),
			Status:   "reported",
		})
	}
	if ft := r.fleetTargets(); ft != nil {
		// Issue 27: the cache as a library, against the floor.
		out = append(out, TargetStatus{
			Target:   fmt.Sprintf("client CPU per publish at N=%d ≤ %g× floor (caches as a library)", ft.N, boundCacheCPU),
			Measured: fmt.Sprintf("%.2f× (%s ms vs %s ms; runs %.2f–%.2f)", ft.CPURatio, f1(ft.CPU), f1(ft.FloorCPU), ft.CPUMin, ft.CPUMax),
			Status:   verdict(ft.CPURatio > 0 && ft.CPURatio <= boundCacheCPU),
		}, TargetStatus{
			Target:   fmt.Sprintf("propagation p50 at N=%d ≤ %g× floor", ft.N, boundCacheP50),
			Measured: fmt.Sprintf("%.2f× (%s ms vs %s ms; runs %.2f–%.2f)", ft.P50Ratio, f1(ft.P50), f1(ft.FloorP50), ft.P50Min, ft.P50Max),
			Status:   verdict(ft.P50Ratio > 0 && ft.P50Ratio <= boundCacheP50),
		}, TargetStatus{
			Target:   fmt.Sprintf("requests per publish per follower at N=%d unchanged: 1 + changed (%d)", ft.N, ft.Changed),
			Measured: fmt.Sprintf("%.2f · %.2f · %.2f (client · wire · server)", ft.ClientRequests, ft.WireRequests, ft.ServerRequests),
			Status:   verdict(ft.requestsUnchanged()),
		})
	}
	bound := 1 + float64(r.Settings.Changed) + targetReqConstant
	worst, worstN := 0.0, 0
	for _, n := range fleets {
		s := r.Fleet(n, kindProject)
		v := math.Max(s.ClientRequests, math.Max(s.WireRequests, s.ServerRequests))
		if v >= worst {
			worst, worstN = v, n
		}
	}
	out = append(out, TargetStatus{
		Target:   fmt.Sprintf("ZooKeeper requests per publish per follower ≤ 1 + changed (%d) + %g", r.Settings.Changed, targetReqConstant),
		Measured: fmt.Sprintf("at most %.2f (N=%d; client, wire and server counts)", worst, worstN),
		Status:   verdict(worst <= bound),
	})
	if f := r.Footprint; f != nil {
		rss := math.Max(f.IdleRSS, f.LoadRSS)
		out = append(out, TargetStatus{
			Target:   fmt.Sprintf("confagent RSS ≤ %g MiB with %d × %s items", targetRSSMiB, f.Items, size(f.ItemSize)),
			Measured: fmt.Sprintf("%.1f MiB idle, %.1f MiB max at 1 publish/s (peak since start %.1f MiB)", f.IdleRSS, f.LoadRSS, f.PeakRSS),
			Status:   verdict(rss <= targetRSSMiB),
		}, TargetStatus{
			Target:   fmt.Sprintf("confagent idle CPU < %g%% of a core", targetIdleCPU),
			Measured: fmt.Sprintf("%.3f%% over %.0f s (%.2f%% at 1 publish/s)", f.IdleCPU, f.IdleSeconds, f.LoadCPU),
			Status:   verdict(f.IdleCPU < targetIdleCPU),
		})
	}
	if pc := r.publishCost(); pc != nil {
		var vs []float64
		for _, run := range r.Runs {
			if run.Publish != nil {
				vs = append(vs, run.Publish.Ratio)
			}
		}
		lo, hi := spread(vs)
		rt := Ratio{Median: median(vs), Min: lo, Max: hi}
		out = append(out, TargetStatus{
			Target:   fmt.Sprintf("publish of %d × %s ≤ %g× raw Multi", pc.Items, size(pc.ItemSize), targetPublishRaw),
			Measured: fmt.Sprintf("%.2f× (%s ms vs %s ms p50; runs %s)", rt.Median, f1(pc.Publish.P50), f1(pc.Raw.P50), rangeStr(rt)),
			Status:   verdict(rt.Median <= targetPublishRaw),
		})
	}
	return out
}

// agents returns the median over runs of the confagent measurement.
func (r *Report) agents() *AgentResult {
	var rs []*AgentResult
	for _, run := range r.Runs {
		if run.Agents != nil {
			rs = append(rs, run.Agents)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	pick := func(f func(*AgentResult) float64) float64 {
		vs := make([]float64, len(rs))
		for i, a := range rs {
			vs[i] = f(a)
		}
		return median(vs)
	}
	d := func(f func(*AgentResult) Dist) Dist {
		ds := make([]Dist, len(rs))
		for i, a := range rs {
			ds[i] = f(a)
		}
		return medianDist(ds)
	}
	return &AgentResult{Agents: rs[0].Agents,
		File:           d(func(a *AgentResult) Dist { return a.File }),
		Status:         d(func(a *AgentResult) Dist { return a.Status }),
		Publish:        d(func(a *AgentResult) Dist { return a.Publish }),
		CPU:            pick(func(a *AgentResult) float64 { return a.CPU }),
		ServerRequests: pick(func(a *AgentResult) float64 { return a.ServerRequests }),
		ReadKiB:        pick(func(a *AgentResult) float64 { return a.ReadKiB }),
		WrittenKiB:     pick(func(a *AgentResult) float64 { return a.WrittenKiB }),
		ChangedKiB:     rs[0].ChangedKiB,
		Writes:         pick(func(a *AgentResult) float64 { return a.Writes }),
	}
}

// publishCost returns the median over runs of the publish cost.
func (r *Report) publishCost() *PublishCost {
	var rs []*PublishCost
	for _, run := range r.Runs {
		if run.Publish != nil {
			rs = append(rs, run.Publish)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	d := func(f func(*PublishCost) Dist) Dist {
		ds := make([]Dist, len(rs))
		for i, a := range rs {
			ds[i] = f(a)
		}
		return medianDist(ds)
	}
	vs := make([]float64, len(rs))
	for i, a := range rs {
		vs[i] = a.Ratio
	}
	return &PublishCost{Items: rs[0].Items, ItemSize: rs[0].ItemSize,
		Publish:     d(func(a *PublishCost) Dist { return a.Publish }),
		PublishCall: d(func(a *PublishCost) Dist { return a.PublishCall }),
		Prepare:     d(func(a *PublishCost) Dist { return a.Prepare }),
		Commit:      d(func(a *PublishCost) Dist { return a.Commit }),
		AfterAck:    d(func(a *PublishCost) Dist { return a.AfterAck }),
		Raw:         d(func(a *PublishCost) Dist { return a.Raw }),
		RawTxn:      d(func(a *PublishCost) Dist { return a.RawTxn }),
		Ratio:       median(vs),
	}
}

func f1(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func rangeStr(r Ratio) string {
	if math.IsNaN(r.Min) {
		return "–"
	}
	return fmt.Sprintf("%.2f–%.2f", r.Min, r.Max)
}

func size(b int) string {
	if b%1024 == 0 {
		return fmt.Sprintf("%d KiB", b/1024)
	}
	return fmt.Sprintf("%d B", b)
}

type kindLabel struct{ kind, label string }

// kindLabels names the follower kinds in reports, in display order.
func kindLabels() []kindLabel {
	return []kindLabel{
		{kindProject, "zkconf cache"},
		{kindFloor, "floor (raw)"},
		{kindNaive, "naive (raw)"},
	}
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	s := r.Settings
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# zkconf benchmark results\n\n")
	w("Generated by `make bench` (`go run ./cmd/confbench`) on %s in %.0f s. ", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Seconds)
	w("Every figure is the median of %d run(s); the analysis is in [README.md](README.md).\n\n", len(r.Runs))
	mode := "standalone"
	if r.Env.Servers > 1 {
		mode = fmt.Sprintf("ensemble of %d", r.Env.Servers)
	}
	origin := "started by the benchmark"
	if !r.Env.OwnServer {
		origin = "given with --zk"
	}
	w("- Machine: %s, %d cores; %s; load average (1 min) %.2f at start, %.2f at end.\n", r.Env.CPU, r.Env.Cores, r.Env.Go, r.Env.LoadStart, r.Env.LoadEnd)
	w("- ZooKeeper %s, %s, %s, on loopback; all followers, publishers and agents share the machine with it.\n", r.Env.ZooKeeper, mode, origin)
	order := "the kinds' publishes interleaved round-robin"
	if s.OneKindPerPass {
		order = "one kind of follower at a time (--one-kind-per-pass)"
	}
	w("- Followed roots: %d items × %s, %d changed per publish. %d measured publishes per fleet size and kind, after %d warm-up; %s. Each follower has its own session (timeout %s); the baselines keep %d reads in flight, like the cache.\n",
		s.Items, size(s.ItemSize), s.Changed, s.Publishes, s.Warmup, order, s.SessionTimeout, s.Concurrency)
	if s.Quick {
		w("- **Quick (smoke) run**: too few publishes for the figures to mean anything.\n")
	}
	w("\n## Targets\n\n| target | measured | status |\n|---|---|---|\n")
	for _, t := range r.Targets() {
		w("| %s | %s | **%s** |\n", t.Target, t.Measured, t.Status)
	}

	w("\n## Propagation: commit sent → follower holds the generation (ms)\n\n")
	w("Per follower over every publish (p50/p99/max), and per publish for the slowest follower of the fleet (\"last follower\"). Requests per publish per follower are counted three ways: by the followers (client), by a tap on every connection (wire), and by the server (mntr `zk_packets_received` less every other packet the taps saw). CPU is per publish, from the commit to the last follower: the benchmark process (publisher included) and the ZooKeeper JVM.\n\n")
	w("| N | follower | p50 | p99 | max | last p50 | last p99 | last max | requests (client · wire · server) | client CPU ms | server CPU ms |\n")
	w("|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, n := range s.Fleets {
		for _, kl := range kindLabels() {
			f := r.Fleet(n, kl.kind)
			if f.Runs == 0 {
				continue
			}
			w("| %d | %s | %s | %s | %s | %s | %s | %s | %.2f · %.2f · %.2f | %s | %s |\n", n, kl.label,
				f1(f.Propagation.P50), f1(f.Propagation.P99), f1(f.Propagation.Max),
				f1(f.Last.P50), f1(f.Last.P99), f1(f.Last.Max),
				f.ClientRequests, f.WireRequests, f.ServerRequests, f1(f.ClientCPU), f1(f.ServerCPU))
		}
	}
	w("\n![Propagation by fleet size](propagation.png)\n")

	w("\n## zkconf against the baselines (ratios, median of runs [min–max])\n\n")
	w("| N | p50 ÷ floor | p99 ÷ floor | last p99 ÷ floor | client CPU ÷ floor | p50 ÷ naive | p99 ÷ naive | last p99 ÷ naive |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range s.Fleets {
		cell := func(other string, f func(FleetResult) float64) string {
			rt := r.ratioOver(n, other, func(p, o FleetResult) float64 { return ratio(f(p), f(o)) })
			return fmt.Sprintf("%.2f [%s]", rt.Median, rangeStr(rt))
		}
		w("| %d | %s | %s | %s | %s | %s | %s | %s |\n", n,
			cell(kindFloor, p50), cell(kindFloor, p99), cell(kindFloor, lastP99),
			cell(kindFloor, func(f FleetResult) float64 { return f.ClientCPU }),
			cell(kindNaive, p50), cell(kindNaive, p99), cell(kindNaive, lastP99))
	}

	w("\n## Publish latency (%d × %s, %d changed): call → commit acknowledged (ms)\n\n", s.Items, size(s.ItemSize), s.Changed)
	w("| N | p50 | p99 | max | whole call p50 (history GC included) |\n|---:|---:|---:|---:|---:|\n")
	for _, n := range s.Fleets {
		f := r.Fleet(n, kindProject)
		w("| %d | %s | %s | %s | %s |\n", n, f1(f.Publish.P50), f1(f.Publish.P99), f1(f.Publish.Max), f1(f.PublishCall.P50))
	}

	if pc := r.publishCost(); pc != nil {
		w("\n## Publish of %d × %s (every item changed) against raw Multi (ms)\n\n", pc.Items, size(pc.ItemSize))
		w("| what | p50 | p99 | max |\n|---|---:|---:|---:|\n")
		row := func(name string, d Dist) { w("| %s | %s | %s | %s |\n", name, f1(d.P50), f1(d.P99), f1(d.Max)) }
		row("zkconf publish: call → commit acknowledged", pc.Publish)
		row("zkconf publish: whole call (new contents' blobs stored after the ack, and history GC, included)", pc.PublishCall)
		row("… of which call → commit sent (reads, hashing, planning)", pc.Prepare)
		row("… of which commit sent → acknowledged", pc.Commit)
		row("… of which acknowledged → call returns (blob storage, GC)", pc.AfterAck)
		row("raw Multi of the same writes (root + every item)", pc.Raw)
		row("raw Multi of zkconf's transaction (+ a blob Check per departing content + history entry)", pc.RawTxn)
		w("\nRatio zkconf ÷ raw Multi (p50): %.2f.\n", pc.Ratio)
	}

	if a := r.agents(); a != nil {
		w("\n## confagent: commit sent → rendered (ms)\n\n")
		w("%d confagent process(es), each rendering the followed set as a `dir` target (every file fsynced, atomic directory swap). \"File\" is when inotify shows the swap and the changed file holds the new content; \"status\" when the agent's status node reports the generation.\n\n", a.Agents)
		w("| agents | file p50 | file p99 | file max | status p50 | status p99 | agent CPU ms/publish | server requests/publish/agent | KiB read · written per publish (changed: %s KiB) | write calls/publish |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", f1(a.ChangedKiB))
		w("| %d | %s | %s | %s | %s | %s | %s | %.2f | %s · %s | %.0f |\n", a.Agents, f1(a.File.P50), f1(a.File.P99), f1(a.File.Max),
			f1(a.Status.P50), f1(a.Status.P99), f1(a.CPU), a.ServerRequests, f1(a.ReadKiB), f1(a.WrittenKiB), a.Writes)
	}
	if len(r.InProcess) > 0 {
		w("\n## In-process agent (profiled run, --profile)\n\n| set | file p50 | file p99 | process CPU ms/publish (publisher included) |\n|---|---:|---:|---:|\n")
		names := []string{fmt.Sprintf("%d × %s", s.Items, size(s.ItemSize)), "footprint set"}
		for i, a := range r.InProcess {
			w("| %s | %s | %s | %s |\n", names[min(i, len(names)-1)], f1(a.File.P50), f1(a.File.P99), f1(a.CPU))
		}
	}
	if f := r.Footprint; f != nil {
		w("\n## confagent footprint: %d × %s items, `dir` target, HTTP endpoint on\n\n", f.Items, size(f.ItemSize))
		if len(s.ConfAgentEnv) > 0 {
			w("Agent environment: `%s`.\n\n", strings.Join(s.ConfAgentEnv, " "))
		}
		w("| phase | seconds | CPU (%% of a core) | RSS (MiB) |\n|---|---:|---:|---:|\n")
		w("| idle | %.0f | %.3f | %.1f |\n", f.IdleSeconds, f.IdleCPU, f.IdleRSS)
		w("| 1 publish/s (%d publishes) | %.0f | %.2f | %.1f (max) |\n", f.Publishes, f.LoadSeconds, f.LoadCPU, f.LoadRSS)
		w("\nPeak RSS since start (VmHWM) %.1f MiB; at the end %.1f MiB anonymous, %.1f MiB file-backed. ", f.PeakRSS, f.AnonRSS, f.FileRSS)
		w("Idle: %d read and %d write calls in %.0f s. Loaded: %s KiB read and %s KiB written (%.0f write calls) per publish, for %s KiB of changed items (/proc/<pid>/io: files, state file and sockets).\n",
			f.IdleReads, f.IdleWrites, f.IdleSeconds, f1(f.LoadReadKiB), f1(f.LoadWrittenKiB), f.LoadWrites, f1(f.ChangedKiB))
	}

	if len(r.Env.Roles) > 0 && len(r.Runs) > 0 {
		w("\n## Server CPU per publish, server by server (ms; run 1)\n\n")
		w("Followers connect to: %s; publishers to the voters. Per follower per publish: divide by N.\n\n", map[bool]string{true: "the observers only", false: "every server"}[r.Env.Observers > 0])
		w("| N | follower | %s |\n|---:|---|%s\n", strings.Join(r.Env.Roles, " | "), strings.Repeat("---:|", len(r.Env.Roles)))
		for _, f := range r.Runs[0].Fleets {
			if len(f.ServerCPUEach) != len(r.Env.Roles) {
				continue
			}
			cells := make([]string, len(f.ServerCPUEach))
			for i, v := range f.ServerCPUEach {
				cells[i] = f1(v)
			}
			w("| %d | %s | %s |\n", f.N, f.Kind, strings.Join(cells, " | "))
		}
	}
	if h := r.Herd; h != nil {
		w("\n## Herd: %d zkconf followers, resync jitter %s\n\n", h.N, h.Jitter)
		w("Each phase runs from the kill (or the publish) until every follower is Live on the root's last generation. Requests are the caches' own counts; ops are packets by type per follower from the taps; server CPU and peak (cores, over %.0f ms samples) are per server, in the order %s.\n\n", ms(int64(herdSample)), strings.Join(r.Env.Roles, ", "))
		w("| phase | restarted | moved | reconnected ms | all live ms | requests/follower | requests/moved follower | ops/follower | server CPU ms | peak cores |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n")
		for _, p := range h.Phases {
			var ops []string
			for _, k := range slices.Sorted(maps.Keys(p.Ops)) {
				ops = append(ops, fmt.Sprintf("%s %.2f", k, p.Ops[k]))
			}
			w("| %s | %s | %d | %s | %s | %.2f | %.2f | %s | %s | %s |\n", p.Name, p.Restarted, p.Moved, f1(p.ReconnectedMS), f1(p.LiveMS),
				p.RequestsPerFollower, p.RequestsPerMovedFollower, strings.Join(ops, ", "), joinF(p.ServerCPUMS), joinF(p.PeakCores))
		}
	}

	if r.Canary != nil {
		w("\n%s", r.Canary.Markdown())
	}
	w("\n## Harness checks\n\n")
	var events, disc int64
	for _, n := range s.Fleets {
		for _, kl := range kindLabels() {
			f := r.Fleet(n, kl.kind)
			events += f.SessionEvents
			if abs64(f.Discrepancy) > abs64(disc) {
				disc = f.Discrepancy
			}
		}
	}
	w("- Every follower of every kind held every generation, and at the end exactly the last one, byte for byte (checked against the schedule).\n")
	w("- Session events (reconnects, expiries, failed reads) during measurements: %d.\n", events)
	w("- Server packets minus tapped packets, worst kind and fleet size over a whole measurement: %d; tap framing errors: %d.\n", disc, r.FramingErrors)
	return b.String()
}

func joinF(vs []float64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(out, " · ")
}

// Write writes results.md, results.json and propagation.png to dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if r.Canary != nil {
		if err := r.writeCanary(dir); err != nil {
			return err
		}
		if len(r.Runs) == 0 {
			return nil // --canary-only: nothing else was measured
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	return r.Chart(filepath.Join(dir, "propagation.png"))
}

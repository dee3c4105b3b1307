package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/zkconf/zkconf/internal/work"
)

// FleetResult is one kind of follower at one fleet size, in one run.
type FleetResult struct {
	Kind string `json:"kind"`
	N    int    `json:"n"`
	// Propagation is commit sent → follower holds the generation, over
	// every follower and every measured publish.
	Propagation Dist `json:"propagation"`
	// Last is the fleet's "last follower" time: per publish, the
	// propagation of the slowest follower.
	Last Dist `json:"last_follower"`
	// Publish is the publish call → commit acknowledged; PublishCall the
	// whole call (the history GC after the commit included).
	Publish     Dist `json:"publish"`
	PublishCall Dist `json:"publish_call"`
	// Requests per publish per follower: as the followers count them
	// (cache.Stats().Requests, or the baselines' own counters), as the
	// taps on their connections saw them, and as the server counted them
	// (mntr packets_received, less every other packet the taps saw).
	ClientRequests float64 `json:"client_requests_per_publish_per_follower"`
	WireRequests   float64 `json:"wire_requests_per_publish_per_follower"`
	ServerRequests float64 `json:"server_requests_per_publish_per_follower"`
	// Reads, by request type, per publish per follower (from the taps).
	Ops map[string]float64 `json:"ops_per_publish_per_follower"`
	// Discrepancy is the server's packet count minus every tapped packet,
	// summed over the measurement windows (0 when nothing else talks to
	// the server).
	Discrepancy int64 `json:"server_minus_tapped_packets"`
	// ClientCPU and ServerCPU are the CPU milliseconds the benchmark
	// process and the ZooKeeper server(s) spent per publish, from the
	// commit to the last follower (publisher included).
	ClientCPU float64 `json:"client_cpu_ms_per_publish"`
	ServerCPU float64 `json:"server_cpu_ms_per_publish"`
	// ServerCPUEach is ServerCPU server by server (Environment.Roles
	// names them).
	ServerCPUEach []float64 `json:"server_cpu_ms_per_publish_each,omitempty"`
	// SessionEvents counts reconnects, expiries and failed reads during
	// the measurement: it must be 0 for the figures to mean anything.
	SessionEvents int64 `json:"session_events"`
}

// kindState is one kind's measurement at one fleet size.
type kindState struct {
	kind    string
	t       *target
	clients []*client
	counts  *wireCounts // the followers' connections
	fl      group
	rec     *recorder

	started              bool
	req0, wire0, events0 int64
	ops0                 [maxOpIndex]int64
	prop, last, pub, cal []int64
	serverReqs, discrep  int64
	windows              int
	clientCPU, serverCPU time.Duration
	serverCPUOK          bool
	serverCPUEach        []time.Duration
}

// measureFleets measures every kind at fleet size n, publishes interleaved
// round-robin (the order rotating every round).
func (e *env) measureFleets(ctx context.Context, n int, targets map[string]*target, profile bool) (out []FleetResult, err error) {
	if !e.cfg.OneKindPerPass {
		return e.measureKinds(ctx, n, e.cfg.kinds(), targets, profile)
	}
	for _, kind := range e.cfg.kinds() {
		e.log.Info("measuring one kind", "n", n, "kind", kind)
		fr, err := e.measureKinds(ctx, n, []string{kind}, targets, profile && kind == kindProject)
		if err != nil {
			return nil, err
		}
		out = append(out, fr...)
	}
	return out, nil
}

// measureKinds measures kinds at fleet size n, their publishes interleaved
// round-robin.
func (e *env) measureKinds(ctx context.Context, n int, kinds []string, targets map[string]*target, profile bool) (out []FleetResult, err error) {
	states := make([]*kindState, len(kinds))
	defer func() {
		for _, k := range states {
			if k == nil {
				continue
			}
			if k.fl != nil {
				k.fl.close()
			}
			closeAll(k.clients)
		}
	}()
	for i, kind := range kinds {
		k := &kindState{kind: kind, t: targets[kind], counts: e.newCounts(), rec: newRecorder(n)}
		states[i] = k
		var serr error
		// Labels follow the goroutines each kind starts (sessions, caches,
		// followers) into CPU profiles: go tool pprof -tagfocus kind=floor.
		pprof.Do(ctx, pprof.Labels("kind", kind), func(ctx context.Context) {
			serr = e.startFleet(ctx, k, n)
		})
		if serr != nil {
			return nil, fmt.Errorf("%s fleet of %d: %w", kind, n, serr)
		}
	}
	e.log.Info("fleets ready", "n", n, "sessions", len(kinds)*n)

	stopProfile := func() {}
	if profile {
		stopProfile, err = e.startProfile(fmt.Sprintf("fleet-N%d", n))
		if err != nil {
			return nil, err
		}
	}
	rounds := e.cfg.Warmup + e.cfg.Publishes
	for r := range rounds {
		for j := range states {
			k := states[(r+j)%len(states)]
			if err := e.round(ctx, k, r >= e.cfg.Warmup); err != nil {
				stopProfile()
				return nil, err
			}
		}
		if (r+1)%10 == 0 {
			e.log.Info("progress", "n", n, "round", r+1, "of", rounds)
		}
	}
	stopProfile()

	for _, k := range states {
		out = append(out, k.result(n, e.cfg.Publishes))
	}
	// Every follower must hold exactly the last generation, byte for byte.
	for _, k := range states {
		k.fl.close()
		cerr := k.fl.check(k.t.gen)
		k.fl = nil
		if cerr != nil {
			return nil, fmt.Errorf("%s fleet of %d: %w", k.kind, n, cerr)
		}
	}
	return out, nil
}

// startFleet dials n sessions and starts the kind's followers on them.
func (e *env) startFleet(ctx context.Context, k *kindState, n int) error {
	clients, err := dialMany(ctx, n, e.followerDial(k.counts, len(k.t.sched.names), k.t.sched.size))
	if err != nil {
		return err
	}
	k.clients = clients
	switch k.kind {
	case kindProject:
		k.fl, err = startProject(ctx, clients, k.t.root, e.meta, k.t.sched, k.rec, k.t.gen, e.quiet)
	default:
		var off int64
		if off, err = k.t.versionOffset(); err != nil {
			return err
		}
		k.fl, err = startRaw(ctx, clients, k.t.root, k.kind == kindNaive, k.t.sched, k.rec, k.t.gen, off, e.cfg.Concurrency, e.quiet)
	}
	return err
}

// round publishes the kind's next generation and waits for its fleet.
func (e *env) round(ctx context.Context, k *kindState, measured bool) error {
	g := k.t.gen + 1
	if measured && !k.started {
		k.started = true
		k.req0, k.wire0, k.events0 = k.fl.requests(), k.counts.requests.Load(), k.fl.sessionEvents()
		for op := range k.ops0 {
			k.ops0[op] = k.counts.op(op)
		}
	}
	var w window
	if measured {
		w = e.openWindow(k.counts)
	}
	a := k.rec.expect(g)
	var pt pubTimes
	var err error
	pprof.Do(ctx, pprof.Labels("kind", k.kind, "role", "publisher"), func(ctx context.Context) {
		pt, err = k.t.publish(ctx, g)
	})
	if err != nil {
		return err
	}
	if err := k.rec.wait(ctx, a, e.cfg.WaitTimeout); err != nil {
		return fmt.Errorf("%s fleet of %d: %w", k.kind, k.rec.n, err)
	}
	if measured {
		e.closeWindow(k, w)
		var last int64
		for _, at := range a.at {
			k.prop = append(k.prop, at-pt.sent)
			last = max(last, at-pt.sent)
		}
		k.last = append(k.last, last)
		k.pub = append(k.pub, pt.acked-pt.call)
		k.cal = append(k.cal, pt.ret-pt.call)
	}
	return e.pause(ctx)
}

// pause waits Gap plus a random fraction of it, so publishes do not lock
// step with anything periodic (pings, timers).
func (e *env) pause(ctx context.Context) error {
	d := e.cfg.Gap
	if d > 0 {
		d += rand.N(d)
	}
	return work.Sleep(ctx, d)
}

// window is the server's and the taps' counters at the start of one
// publish's measurement.
type window struct {
	mntr, tapped, own int64
	cpu, srvCPU       time.Duration
	srvOK             bool
	srvEach           []time.Duration
}

func (e *env) openWindow(own *wireCounts) window {
	var w window
	if e.mntrOK {
		if p, err := e.srv.packets(); err == nil {
			w.mntr = p
		}
	}
	w.tapped, w.own = e.tapped(), own.requests.Load()
	w.cpu = selfCPU()
	w.srvCPU, w.srvOK = e.srv.cpu()
	w.srvEach, _ = e.srv.cpuEach()
	return w
}

func (e *env) closeWindow(k *kindState, w window) {
	cpu := selfCPU()
	srvCPU, srvOK := e.srv.cpu()
	each, eachOK := e.srv.cpuEach()
	if eachOK && len(each) == len(w.srvEach) {
		if k.serverCPUEach == nil {
			k.serverCPUEach = make([]time.Duration, len(each))
		}
		for i := range each {
			k.serverCPUEach[i] += each[i] - w.srvEach[i]
		}
	}
	tapped, own := e.tapped(), k.counts.requests.Load()
	if e.mntrOK {
		if p, err := e.srv.packets(); err == nil {
			dm, dt, do := p-w.mntr, tapped-w.tapped, own-w.own
			k.serverReqs += dm - (dt - do)
			k.discrep += dm - dt
		}
	}
	k.windows++
	k.clientCPU += cpu - w.cpu
	if srvOK && w.srvOK {
		k.serverCPU += srvCPU - w.srvCPU
		k.serverCPUOK = true
	}
}

// result summarises the measurement.
func (k *kindState) result(n, publishes int) FleetResult {
	per := float64(n * publishes)
	r := FleetResult{
		Kind: k.kind, N: n,
		Propagation: summarize(k.prop), Last: summarize(k.last),
		Publish: summarize(k.pub), PublishCall: summarize(k.cal),
		ClientRequests: float64(k.fl.requests()-k.req0) / per,
		WireRequests:   float64(k.counts.requests.Load()-k.wire0) / per,
		ServerRequests: float64(k.serverReqs) / per,
		Discrepancy:    k.discrep,
		ClientCPU:      ms(int64(k.clientCPU)) / float64(publishes),
		SessionEvents:  k.fl.sessionEvents() - k.events0,
		Ops:            map[string]float64{},
	}
	if k.serverCPUOK {
		r.ServerCPU = ms(int64(k.serverCPU)) / float64(publishes)
	}
	for _, d := range k.serverCPUEach {
		r.ServerCPUEach = append(r.ServerCPUEach, ms(int64(d))/float64(publishes))
	}
	for op, name := range opNames() {
		if d := k.counts.op(op) - k.ops0[op]; d > 0 {
			r.Ops[name] = float64(d) / per
		}
	}
	return r
}

// opNames names the opcodes reported.
func opNames() map[int]string {
	return map[int]string{
		1: "create", 2: "delete", 3: "exists", opGetData: "getData", 5: "setData",
		8: "getChildren", opSync: "sync", 12: "getChildren2", 13: "check", opMulti: "multi",
		101: "setWatches",
	}
}

// startProfile starts a CPU profile written to <ProfileDir>/<name>.cpu.pprof
// and brackets it with allocation profiles (<name>.allocs.base.pprof before,
// <name>.allocs.pprof after: compare with go tool pprof -base).
func (e *env) startProfile(name string) (stop func(), err error) {
	dir := e.cfg.ProfileDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	writeAllocs := func(file string) {
		runtime.GC()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			e.log.Warn("profile", "err", err)
			return
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			e.log.Warn("profile", "err", err)
		}
	}
	writeAllocs(name + ".allocs.base.pprof")
	f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		pprof.StopCPUProfile()
		f.Close()
		writeAllocs(name + ".allocs.pprof")
		e.log.Info("profile written", "dir", dir, "name", name)
	}, nil
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/internal/work"
)

// HerdResult is the herd measurement: Config.Herd zkconf caches follow a
// root through the followers' servers (the observers when there are
// some); one of those servers is killed and started again while the
// caches connected to it reconnect elsewhere and resync.
type HerdResult struct {
	N int `json:"n"`
	// Jitter is the caches' resync jitter (cache.WithResyncJitter).
	Jitter string `json:"resync_jitter"`
	// Phases: "publish" (one publish, no restart: the reference),
	// "restart+publish" (the followers' busiest server is killed, a
	// publish follows at once while its followers reconnect elsewhere, and
	// the server starts again) and "restart" (the same without a publish;
	// the busiest server then holds every follower that moved before).
	Phases []HerdPhase `json:"phases"`
}

// HerdPhase is one phase of the herd measurement, from its start (the
// kill, or the publish) until every cache is Live on the root's last
// generation (and every moved one has reconnected).
type HerdPhase struct {
	Name string `json:"name"`
	// Restarted names the server killed and restarted ("4 observer").
	Restarted string `json:"restarted,omitempty"`
	// Moved is the number of caches that were connected to the restarted
	// server.
	Moved int `json:"moved"`
	// Reconnected is the start → every moved cache has a new connection;
	// Live is the start → every cache is Live on the last generation.
	ReconnectedMS float64 `json:"reconnected_ms"`
	LiveMS        float64 `json:"all_live_ms"`
	// Requests per cache, over every cache and over the moved ones (the
	// caches' own counts, cache.Stats().Requests).
	RequestsPerFollower      float64 `json:"requests_per_follower"`
	RequestsPerMovedFollower float64 `json:"requests_per_moved_follower"`
	// Ops are the packets by type per cache (from the taps, every cache:
	// pings excluded, setWatches and connection handshakes included).
	Ops map[string]float64 `json:"ops_per_follower"`
	// ServerCPUMS is each server's CPU during the phase (Environment.Roles
	// names them; the restarted server's counts from when it serves again:
	// its JVM start is not the herd's cost), and
	// PeakCores each server's highest CPU use over one sampling interval.
	ServerCPUMS []float64 `json:"server_cpu_ms_each"`
	PeakCores   []float64 `json:"server_peak_cores_each"`
	// SampleMS is the sampling interval of PeakCores.
	SampleMS float64 `json:"sample_ms"`
}

// herdSample is the CPU sampling interval of the herd measurement.
const herdSample = 100 * time.Millisecond

// measureHerd runs the three phases.
func (e *env) measureHerd(ctx context.Context) (*HerdResult, error) {
	cl := e.srv.cluster
	if cl == nil {
		return nil, errors.New("the herd restarts a server: it needs own servers (no --zk)")
	}
	c := e.cfg
	n := c.Herd
	e.log.Info("herd: starting followers", "n", n, "jitter", c.ResyncJitter)
	t, err := e.newTarget(ctx, "herd", newSchedule("herd", c.Items, c.ItemSize, c.Changed))
	if err != nil {
		return nil, err
	}
	defer t.close()
	counts := e.newCounts()
	clients, err := dialMany(ctx, n, e.followerDial(counts, c.Items, c.ItemSize))
	if err != nil {
		return nil, err
	}
	defer closeAll(clients)
	rec := newRecorder(n)
	var extra []cache.Option
	if c.ResyncJitter > 0 {
		extra = append(extra, cache.WithResyncJitter(c.ResyncJitter))
	}
	fl, err := startProject(ctx, clients, t.root, e.meta, t.sched, rec, t.gen, e.quiet, extra...)
	if err != nil {
		return nil, err
	}
	defer fl.close()

	roles := e.srv.roles()
	res := &HerdResult{N: n, Jitter: c.ResyncJitter.String()}
	for _, ph := range []struct {
		name             string
		restart, publish bool
	}{{"publish", false, true}, {"restart+publish", true, true}, {"restart", true, false}} {
		victim := e.busiest(clients)
		e.log.Info("herd: phase", "phase", ph.name, "victim", roles[victim])
		r, err := e.herdPhase(ctx, ph.name, fl, clients, counts, t, victim, ph.restart, ph.publish)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		e.log.Info("herd: result", "phase", ph.name, "moved", r.Moved, "reconnected_ms", r.ReconnectedMS,
			"live_ms", r.LiveMS, "requests_per_follower", r.RequestsPerFollower, "per_moved", r.RequestsPerMovedFollower,
			"server_cpu_ms", r.ServerCPUMS, "peak_cores", r.PeakCores)
		if ph.restart {
			r.Restarted = roles[victim]
		}
		res.Phases = append(res.Phases, *r)
		if err := work.Sleep(ctx, c.Gap+time.Second); err != nil {
			return nil, err
		}
	}
	if err := fl.check(t.gen); err != nil {
		return nil, err
	}
	return res, nil
}

// busiest returns the index of the followers' server holding the most
// follower sessions.
func (e *env) busiest(clients []*client) int {
	per := map[string]int{}
	for _, x := range clients {
		per[x.conn.Server()]++
	}
	servers := e.srv.cluster.Servers
	victim := -1
	for i, s := range servers {
		if slices.Contains(e.srv.followers, s.Addr()) && (victim < 0 || per[s.Addr()] > per[servers[victim].Addr()]) {
			victim = i
		}
	}
	return victim
}

// herdPhase runs one phase.
func (e *env) herdPhase(ctx context.Context, name string, fl *projectFleet, clients []*client, counts *wireCounts,
	t *target, victim int, restart, publish bool) (*HerdPhase, error) {
	cl := e.srv.cluster
	vaddr := cl.Servers[victim].Addr()
	var moved []int
	if restart {
		for i, x := range clients {
			if x.conn.Server() == vaddr {
				moved = append(moved, i)
			}
		}
	}
	before := make([]uint64, len(fl.caches))
	for i, ca := range fl.caches {
		st := ca.Stats()
		before[i] = st.Reconnects + st.Expiries
	}
	req0 := fl.requests()
	reqMoved0 := int64(0)
	for _, i := range moved {
		reqMoved0 += int64(fl.caches[i].Stats().Requests)
	}
	var ops0 [maxOpIndex]int64
	for op := range ops0 {
		ops0[op] = counts.op(op)
	}
	smp := startSampler(e.srv)

	start := time.Now()
	var restartErr error
	var wg sync.WaitGroup
	if restart {
		smp.off[victim].Store(true)
		if err := safely(func() { cl.Kill(victim) }); err != nil {
			smp.stop()
			return nil, err
		}
	}
	if publish {
		if _, err := t.publish(ctx, t.gen+1); err != nil {
			smp.stop()
			return nil, err
		}
	}
	if restart {
		wg.Go(func() {
			restartErr = safely(func() {
				cl.StartServer(victim)
				cl.WaitServing(victim)
			})
			smp.off[victim].Store(false)
		})
	}
	var reconnected time.Duration
	deadline := time.Now().Add(e.cfg.WaitTimeout)
	for {
		allMoved := true
		for _, i := range moved {
			st := fl.caches[i].Stats()
			if st.Reconnects+st.Expiries == before[i] {
				allMoved = false
				break
			}
		}
		if allMoved && reconnected == 0 {
			reconnected = time.Since(start)
		}
		if allMoved && allLive(fl, t.gen) {
			break
		}
		if time.Now().After(deadline) {
			smp.stop()
			wg.Wait()
			return nil, fmt.Errorf("not every follower Live on generation %d within %v", t.gen, e.cfg.WaitTimeout)
		}
		if err := ctx.Err(); err != nil {
			smp.stop()
			wg.Wait()
			return nil, err
		}
		time.Sleep(5 * time.Millisecond) // polling the caches' states, which have no fleet-wide event
	}
	live := time.Since(start)
	wg.Wait()
	cpu, peak := smp.stop()
	if restartErr != nil {
		return nil, restartErr
	}
	nf := float64(len(fl.caches))
	r := &HerdPhase{Name: name, Moved: len(moved), ReconnectedMS: ms(int64(reconnected)), LiveMS: ms(int64(live)),
		RequestsPerFollower: float64(fl.requests()-req0) / nf, Ops: map[string]float64{},
		ServerCPUMS: cpu, PeakCores: peak, SampleMS: ms(int64(herdSample))}
	if len(moved) > 0 {
		var m int64
		for _, i := range moved {
			m += int64(fl.caches[i].Stats().Requests)
		}
		r.RequestsPerMovedFollower = float64(m-reqMoved0) / float64(len(moved))
	}
	for op, nm := range opNames() {
		if d := counts.op(op) - ops0[op]; d > 0 {
			r.Ops[nm] = float64(d) / nf
		}
	}
	return r, nil
}

// allLive reports whether every cache is Live on generation g.
func allLive(fl *projectFleet, g int64) bool {
	for _, c := range fl.caches {
		if c.State().State != cache.StateLive {
			return false
		}
		if s := c.Snapshot(); s == nil || s.Generation() != g {
			return false
		}
	}
	return true
}

// safely runs f, turning a zktest failure (a panic in a launched cluster)
// into an error.
func safely(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("zktest: %v", r)
		}
	}()
	f()
	return nil
}

// sampler samples each own server's CPU every herdSample.
type sampler struct {
	// off[i] stops counting server i (from its kill until its restarted
	// JVM serves again: its start is not the herd's cost).
	off   []atomic.Bool
	stopc chan struct{}
	done  chan struct{}
	total []time.Duration
	peak  []float64
}

func startSampler(srv *server) *sampler {
	cl := srv.cluster
	servers := cl.Servers
	s := &sampler{off: make([]atomic.Bool, len(servers)), stopc: make(chan struct{}), done: make(chan struct{}),
		total: make([]time.Duration, len(servers)), peak: make([]float64, len(servers))}
	type last struct {
		pid int
		cpu time.Duration
		at  time.Time
	}
	prev := make([]last, len(servers))
	sample := func() {
		for i := range servers {
			pid := cl.PID(i)
			if pid == 0 || s.off[i].Load() {
				prev[i] = last{}
				continue
			}
			st, err := readProcStat(pid)
			now := time.Now()
			if err != nil {
				continue
			}
			if prev[i].pid == pid {
				d := st.cpu - prev[i].cpu
				s.total[i] += d
				// The kernel counts CPU in clock ticks (10 ms): a short
				// interval (the last, at stop) would turn one tick into
				// a peak of many cores.
				if dt := now.Sub(prev[i].at); dt >= herdSample/2 {
					s.peak[i] = max(s.peak[i], float64(d)/float64(dt))
				}
			}
			prev[i] = last{pid: pid, cpu: st.cpu, at: now}
		}
	}
	sample()
	go func() {
		defer close(s.done)
		tk := time.NewTicker(herdSample)
		defer tk.Stop()
		for {
			select {
			case <-s.stopc:
				sample()
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns each server's CPU milliseconds and
// peak cores.
func (s *sampler) stop() (cpuMS, peak []float64) {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
	for _, d := range s.total {
		cpuMS = append(cpuMS, ms(int64(d)))
	}
	return cpuMS, s.peak
}

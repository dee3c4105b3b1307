package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/internal/zktest"
)

// Fault kinds.
const (
	fLeaderKill     = "leader-kill"
	fFollowerKill   = "follower-kill"
	fQuorumLoss     = "quorum-loss"
	fAgentCut       = "agent-cut"
	fAgentBlackhole = "agent-blackhole"
	fAgentLatency   = "agent-latency"
	fAgentKill      = "agent-sigkill"
	fAgentConfig    = "agent-bad-config"
	fPubCut         = "publisher-cut"
	fPubPartition   = "publisher-partition"
)

// FaultKinds lists every fault kind, in summary order.
var FaultKinds = []string{fLeaderKill, fFollowerKill, fQuorumLoss, fEnsembleWipe, fAgentCut, fAgentBlackhole,
	fAgentLatency, fAgentKill, fAgentConfig, fAgentDiskFull, fAgentReloadFail, fForgedStatus, fHostileAgent, fPubCut, fPubPartition}

// clusterKinds are drawn at random on the ensemble track; an ensemble
// wipe is scheduled once per run besides.
var clusterKinds = []string{fLeaderKill, fFollowerKill, fQuorumLoss}
var agentKinds = []string{fAgentCut, fAgentBlackhole, fAgentLatency, fAgentKill, fAgentConfig,
	fAgentDiskFull, fAgentReloadFail, fForgedStatus}

// step is one scheduled fault.
type step struct {
	Kind string
	Gap  time.Duration // wait before it starts
	Down time.Duration // how long it lasts (between cuts, for cuts)
	N    int           // cuts: how many; latency: milliseconds; bad config: variant
	Pick int           // a random number for choices made at run time (which follower)
	Flag bool          // bad config: write in place rather than by rename
	Hup  bool          // bad config: also send SIGHUP
}

func (s step) String() string {
	switch s.Kind {
	case fAgentCut:
		return fmt.Sprintf("%s x%d", s.Kind, s.N)
	case fPubCut:
		return fmt.Sprintf("%s x%d under %dms", s.Kind, s.N, s.Pick)
	case fAgentLatency:
		return fmt.Sprintf("%s %dms for %v", s.Kind, s.N, s.Down)
	case fAgentConfig:
		return fmt.Sprintf("%s %q for %v (in place %v, SIGHUP %v)", s.Kind, invalidConfigs[s.N].name, s.Down, s.Flag, s.Hup)
	case fAgentKill:
		return fmt.Sprintf("%s restart after %v (right after an apply %v)", s.Kind, s.Down, s.Flag)
	case fForgedStatus:
		return fmt.Sprintf("%s variant %d for %v", s.Kind, s.N%2, s.Down)
	case fHostileAgent:
		return fmt.Sprintf("%s burst of %d names, flood for %v", s.Kind, s.N, s.Down)
	}
	return fmt.Sprintf("%s for %v", s.Kind, s.Down)
}

// schedule is the whole fault plan of a run, derived from the seed alone:
// one sequential track for the ensemble, one per agent, one for the
// publisher's connection and one for the hostile agent identity. The
// tracks run concurrently.
type schedule struct {
	Cluster   []step
	Agents    [][]step
	Publisher []step
	Hostile   []step
}

func ms(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// makeSchedule draws the plan. Every fault kind appears at least once: the
// cluster track starts with the three ensemble faults in random order,
// followed by the run's one ensemble wipe (in a long run, at the first
// step past the first minute), and the agent fault kinds are dealt round
// the agents for their first faults (the first of each agent, then the
// second of the first agents while kinds remain), in a seeded rotation.
func makeSchedule(seed uint64, phase, sess time.Duration, agents int) *schedule {
	rng := rand.New(rand.NewPCG(seed, 1))
	short := phase < 3*time.Minute
	gap := func(shortLo, shortHi, lo, hi time.Duration) time.Duration {
		if short {
			return ms(rng, shortLo, shortHi)
		}
		return ms(rng, lo, hi)
	}
	sch := &schedule{Agents: make([][]step, agents)}

	// Ensemble.
	first := append([]string{}, clusterKinds...)
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	wiped := false
	for t, i := time.Duration(0), 0; t < phase; i++ {
		var kind string
		switch {
		case i < len(first):
			kind = first[i]
		case !wiped && (short || t >= time.Minute):
			kind, wiped = fEnsembleWipe, true
		default:
			kind = clusterKinds[rng.IntN(len(clusterKinds))]
		}
		s := step{Kind: kind, Gap: gap(2*time.Second, 5*time.Second, 4*time.Second, 20*time.Second), Pick: rng.IntN(1 << 20)}
		switch kind {
		case fQuorumLoss:
			s.Down = ms(rng, sess*3/2, sess*5/2)
		case fEnsembleWipe:
			s.Down = ms(rng, time.Second, 3*time.Second)
		default:
			s.Down = ms(rng, 2*time.Second, 7*time.Second)
		}
		sch.Cluster = append(sch.Cluster, s)
		t += s.Gap + s.Down + 4*time.Second // a restarted server takes seconds to serve
	}

	// Agents.
	off := rng.IntN(len(agentKinds))
	for a := range agents {
		for t, i := time.Duration(0), 0; t < phase; i++ {
			var kind string
			if slot := a + i*agents; slot < len(agentKinds) {
				kind = agentKinds[(slot+off)%len(agentKinds)]
			} else {
				switch r := rng.IntN(100); {
				case r < 20:
					kind = fAgentCut
				case r < 37:
					kind = fAgentBlackhole
				case r < 54:
					kind = fAgentLatency
				case r < 71:
					kind = fAgentKill
				case r < 85:
					kind = fAgentConfig
				case r < 90:
					kind = fAgentDiskFull
				case r < 95:
					kind = fAgentReloadFail
				default:
					kind = fForgedStatus
				}
			}
			s := step{Kind: kind, Gap: gap(time.Second, 5*time.Second, 2*time.Second, 15*time.Second)}
			switch kind {
			case fAgentCut:
				s.N, s.Down = 1+rng.IntN(4), ms(rng, 100*time.Millisecond, 600*time.Millisecond)
			case fAgentBlackhole:
				s.Down = ms(rng, sess*3/2, sess*5/2)
			case fAgentLatency:
				s.N, s.Down = 20+rng.IntN(780), ms(rng, 2*time.Second, 8*time.Second)
			case fAgentKill:
				s.Down, s.Flag = ms(rng, 0, 3*time.Second), rng.IntN(2) == 0
			case fAgentConfig:
				s.N, s.Down, s.Flag, s.Hup = rng.IntN(len(invalidConfigs)), ms(rng, 2*time.Second, 5*time.Second), rng.IntN(2) == 0, rng.IntN(3) == 0
			case fAgentDiskFull, fAgentReloadFail:
				s.Down = ms(rng, 2*time.Second, 6*time.Second)
			case fForgedStatus:
				s.N, s.Pick, s.Down = rng.IntN(2), rng.IntN(1<<20), ms(rng, 3*time.Second, 6*time.Second)
			}
			sch.Agents[a] = append(sch.Agents[a], s)
			t += s.Gap + s.Down + time.Second
		}
	}

	// The hostile agent identity: its first step early in the run (every
	// run has one), then now and then.
	for t, i := time.Duration(0), 0; t < phase; i++ {
		s := step{Kind: fHostileAgent, Gap: gap(5*time.Second, 15*time.Second, 15*time.Second, 60*time.Second),
			N: 20 + rng.IntN(60), Pick: rng.IntN(1 << 20)}
		if i == 0 {
			s.Gap = ms(rng, 3*time.Second, 8*time.Second)
		}
		s.Down = gap(3*time.Second, 6*time.Second, 5*time.Second, 15*time.Second)
		sch.Hostile = append(sch.Hostile, s)
		t += s.Gap + s.Down + 5*time.Second
	}

	// Publisher.
	for t, i := time.Duration(0), 0; t < phase; i++ {
		s := step{Kind: fPubCut, Gap: gap(3*time.Second, 8*time.Second, 4*time.Second, 20*time.Second)}
		if i > 0 && rng.IntN(5) == 0 {
			s.Kind, s.Down = fPubPartition, ms(rng, sess*3/2, sess*5/2)
		} else {
			s.N, s.Down, s.Pick = 3+rng.IntN(10), ms(rng, 100*time.Millisecond, 400*time.Millisecond), 30+rng.IntN(220)
		}
		sch.Publisher = append(sch.Publisher, s)
		t += s.Gap + s.Down
	}
	return sch
}

// faultRec is one injected fault, from its start to the end of its
// healing (a restarted server serving again, a killed agent restarted).
type faultRec struct {
	Kind       string
	Target     string
	Agent      int // -1 when not one agent's
	Start, End time.Time
}

// nemesis executes a schedule.
type nemesis struct {
	cluster    *zktest.Cluster
	agents     []*agentProc
	pubProxies []*faultproxy.Proxy
	log        *eventLog
	violate    func(v Violation)
	// grace is how long an agent may take to report a configuration
	// edit as rejected or reloaded (Config.Slack).
	grace time.Duration

	// For the trust-and-recovery faults (faults_recovery.go).
	work       *workload
	bound      time.Duration
	sess       time.Duration
	shows      func(a *agentProc, k int64) bool
	dial       func(creds string) (*zk.Conn, error)
	beforeWipe func() error
	afterWipe  func() error

	// For the hostile-agent fault (faults_hostile.go): its identity's and
	// the fleet viewer's (the publisher's) credentials, the honest
	// agents' ids and the policy `confpush acl --repair` is run with.
	hostileCreds, viewerCreds string
	agentIDs                  []string
	policy                    *policy

	mu           sync.Mutex
	faults       []*faultRec
	reloadHeals  []reloadHeal
	fleetSamples []fleetSample
	squatSamples []squatSample
	hostile      []hostileRecord
	aux          map[*zk.Conn]bool // see auxDial
}

func (n *nemesis) begin(kind, target string, agent int, detail string) *faultRec {
	r := &faultRec{Kind: kind, Target: target, Agent: agent, Start: time.Now()}
	n.mu.Lock()
	n.faults = append(n.faults, r)
	n.mu.Unlock()
	n.log.addAt(r.Start, "fault", "start %s on %s%s", kind, target, detail)
	return r
}

func (n *nemesis) end(r *faultRec) {
	now := time.Now()
	n.mu.Lock()
	r.End = now
	n.mu.Unlock()
	n.log.addAt(now, "fault", "end   %s on %s (%v)", r.Kind, r.Target, now.Sub(r.Start).Round(time.Millisecond))
}

func (n *nemesis) snapshot() []faultRec {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]faultRec, len(n.faults))
	for i, f := range n.faults {
		out[i] = *f
	}
	return out
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	return work.Sleep(ctx, d) == nil
}

// run executes every track until ctx ends; a fault in progress is healed
// before its track returns. It returns the first harness error.
func (n *nemesis) run(ctx context.Context, sch *schedule) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	track := func(steps []step, do func(context.Context, step)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			defer func() {
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}()
			defer recoverFatal(&err)
			for _, s := range steps {
				if !sleep(ctx, s.Gap) {
					return
				}
				do(ctx, s)
			}
		}()
	}
	track(sch.Cluster, n.clusterStep)
	for i, steps := range sch.Agents {
		a := n.agents[i]
		track(steps, func(ctx context.Context, s step) { n.agentStep(ctx, a, s) })
	}
	track(sch.Publisher, n.publisherStep)
	track(sch.Hostile, n.hostileStep)
	wg.Wait()
	return firstErr
}

func (n *nemesis) clusterStep(ctx context.Context, s step) {
	if s.Kind == fEnsembleWipe {
		n.wipeStep(ctx, s)
		return
	}
	c := n.cluster
	leader := c.Leader()
	var followers []int
	for i := range c.Servers {
		if i != leader {
			followers = append(followers, i)
		}
	}
	var victims []int
	var what string
	switch s.Kind {
	case fLeaderKill:
		victims, what = []int{leader}, fmt.Sprintf("server %d (leader)", leader+1)
	case fFollowerKill:
		f := followers[s.Pick%len(followers)]
		victims, what = []int{f}, fmt.Sprintf("server %d (follower)", f+1)
	case fQuorumLoss:
		f := followers[s.Pick%len(followers)]
		victims, what = []int{leader, f}, fmt.Sprintf("servers %d (leader) and %d", leader+1, f+1)
	}
	r := n.begin(s.Kind, what, -1, fmt.Sprintf(", down %v", s.Down))
	for _, v := range victims {
		c.Kill(v)
	}
	sleep(ctx, s.Down)
	for _, v := range victims {
		c.StartServer(v)
	}
	for _, v := range victims {
		c.WaitServing(v)
	}
	n.end(r)
}

func (n *nemesis) agentStep(ctx context.Context, a *agentProc, s step) {
	switch s.Kind {
	case fAgentDiskFull:
		n.diskFullStep(ctx, a, s)
	case fAgentReloadFail:
		n.reloadFailStep(ctx, a, s)
	case fForgedStatus:
		n.forgedStep(ctx, a, s)
	case fAgentCut:
		r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", %d cuts", s.N))
		for i := range s.N {
			a.faultAll((*faultproxy.Proxy).Cut)
			if i < s.N-1 {
				sleep(ctx, s.Down)
			}
		}
		n.end(r)
	case fAgentBlackhole:
		r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", for %v", s.Down))
		a.faultAll(func(p *faultproxy.Proxy) { p.Blackhole(true) })
		sleep(ctx, s.Down)
		a.faultAll(func(p *faultproxy.Proxy) { p.Blackhole(false) })
		n.end(r)
	case fAgentLatency:
		r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", %dms for %v", s.N, s.Down))
		a.faultAll(func(p *faultproxy.Proxy) { p.Delay(time.Duration(s.N) * time.Millisecond) })
		sleep(ctx, s.Down)
		a.faultAll(func(p *faultproxy.Proxy) { p.Delay(0) })
		n.end(r)
	case fAgentKill:
		detail := fmt.Sprintf(", restart after %v", s.Down)
		if s.Flag {
			// Aim at the moment right after an apply: the outputs have
			// moved on; is the persisted state there too?
			if waitOutputChange(ctx, a.tmplOut, 10*time.Second) {
				detail = ", right after it applied a generation" + detail
			}
		}
		r := n.begin(s.Kind, a.id, a.idx, detail)
		a.stop(syscall.SIGKILL, 10*time.Second)
		sleep(ctx, s.Down)
		if err := a.start(); err != nil {
			panic(fatalError{err.Error()})
		}
		n.end(r)
	case fAgentConfig:
		// A SIGHUP before the agent installed its handler would kill it:
		// configuration faults start once it has started up.
		if !a.running() || !a.waitStarted(30*time.Second) {
			return
		}
		v := invalidConfigs[s.N]
		r := n.begin(s.Kind, a.id, a.idx, fmt.Sprintf(", %q, in place %v, SIGHUP %v, for %v", v.name, s.Flag, s.Hup, s.Down))
		rejected, reloaded := a.rejected.Load(), a.reloaded.Load()
		if err := a.writeConfig(v.edit(a.validConfig()), !s.Flag); err != nil {
			panic(fatalError{err.Error()})
		}
		if s.Hup {
			a.signal(syscall.SIGHUP)
		}
		sleep(ctx, s.Down)
		if !waitCount(&a.rejected, rejected, n.grace) {
			n.violate(Violation{Property: "config-reload", Agent: a.idx, At: time.Now(),
				Msg: fmt.Sprintf("%s: the invalid configuration (%s) was never reported as rejected within %v + %v", a.id, v.name, s.Down, n.grace)})
		}
		if err := a.writeConfig(a.validConfig(), true); err != nil {
			panic(fatalError{err.Error()})
		}
		if s.Hup {
			a.signal(syscall.SIGHUP)
		}
		if !waitCount(&a.reloaded, reloaded, n.grace) {
			n.violate(Violation{Property: "config-reload", Agent: a.idx, At: time.Now(),
				Msg: fmt.Sprintf("%s: the restored valid configuration was not reloaded within %v", a.id, n.grace)})
		}
		n.end(r)
	}
}

type counter interface{ Load() int64 }

// waitCount waits until c moves past from.
func waitCount(c counter, from int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for c.Load() <= from {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func (n *nemesis) publisherStep(ctx context.Context, s step) {
	switch s.Kind {
	case fPubCut:
		// Latency stretches every request, so that a cut is likely to
		// catch a commit in flight (its outcome is then unknown to the
		// client and must be resolved by reading).
		r := n.begin(s.Kind, "publisher", -1, fmt.Sprintf(", %d cuts under %dms latency", s.N, s.Pick))
		for _, p := range n.pubProxies {
			p.Delay(time.Duration(s.Pick) * time.Millisecond)
		}
		for range s.N {
			sleep(ctx, s.Down)
			for _, p := range n.pubProxies {
				p.Cut()
			}
		}
		for _, p := range n.pubProxies {
			p.Delay(0)
		}
		n.end(r)
	case fPubPartition:
		r := n.begin(s.Kind, "publisher", -1, fmt.Sprintf(", for %v", s.Down))
		for _, p := range n.pubProxies {
			p.Blackhole(true)
		}
		sleep(ctx, s.Down)
		for _, p := range n.pubProxies {
			p.Blackhole(false)
		}
		n.end(r)
	}
}

// heal undoes everything: every server running and serving, every proxy
// clean, every agent's disk free and reload working, every agent running
// its valid configuration.
func (n *nemesis) heal() {
	c := n.cluster
	for i := range c.Servers {
		if !c.Running(i) {
			c.StartServer(i)
		}
	}
	for i := range c.Servers {
		c.WaitServing(i)
	}
	clean := func(p *faultproxy.Proxy) { p.Blackhole(false); p.Delay(0) }
	for _, p := range n.pubProxies {
		clean(p)
	}
	for _, a := range n.agents {
		a.faultAll(clean)
		_ = os.Remove(a.ballast())
		_ = os.Remove(a.reloadFlag())
		if err := a.writeConfig(a.validConfig(), true); err != nil {
			panic(fatalError{err.Error()})
		}
		if err := a.start(); err != nil {
			panic(fatalError{err.Error()})
		}
	}
}

// scheduleText lists the plan, for the history file.
func (s *schedule) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ensemble:")
	for _, st := range s.Cluster {
		fmt.Fprintf(&b, " [+%v %v]", st.Gap, st)
	}
	for i, steps := range s.Agents {
		fmt.Fprintf(&b, "\nagent-%d:", i)
		for _, st := range steps {
			fmt.Fprintf(&b, " [+%v %v]", st.Gap, st)
		}
	}
	fmt.Fprintf(&b, "\npublisher:")
	for _, st := range s.Publisher {
		fmt.Fprintf(&b, " [+%v %v]", st.Gap, st)
	}
	fmt.Fprintf(&b, "\nhostile:")
	for _, st := range s.Hostile {
		fmt.Fprintf(&b, " [+%v %v]", st.Gap, st)
	}
	return b.String()
}

// waitOutputChange polls path (a rename-replaced file) every 2ms until it
// is replaced, for at most timeout.
func waitOutputChange(ctx context.Context, path string, timeout time.Duration) bool {
	ino := func() uint64 {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return 0
		}
		return st.Ino
	}
	first := ino()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if i := ino(); i != first && i != 0 {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
)

// Run runs the chaos suite once and returns its summary. An error means
// the harness itself failed (ZooKeeper would not start, a binary is
// missing); broken properties are Summary.Violations.
func Run(ctx context.Context, cfg Config) (sum *Summary, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	log, err := newEventLog(start, filepath.Join(cfg.WorkDir, "history.log"), cfg.Out)
	if err != nil {
		return nil, err
	}
	defer log.close()
	fmt.Fprintf(cfg.Out, "chaos: seed %d (replay with --seed %d), duration %v (faults for %v), %d agents, work dir %s\n",
		cfg.Seed, cfg.Seed, cfg.Duration, cfg.FaultPhase(), cfg.Agents, cfg.WorkDir)
	h := &harness{base: filepath.Join(cfg.WorkDir, "zk")}
	defer h.cleanup()
	defer recoverFatal(&err)
	r := &runner{cfg: cfg, h: h, log: log, start: start, ids: newIDs(cfg.Seed, cfg.Agents)}
	r.policy = &policy{bin: cfg.Confpush, dir: filepath.Join(cfg.WorkDir, "credentials"), ids: r.ids}
	return r.run(ctx)
}

type runner struct {
	cfg Config
	ids chaosIDs // the tree's identities (faults_hostile.go)
	// policy runs confpush init and acl --repair with them.
	policy *policy
	h      *harness
	log    *eventLog
	start  time.Time
	// closing is the canary left open at the end (closingCanary).
	closing *pubRecord
	// relabelled are the agents closingCanary restarted with the other
	// zone.
	relabelled []int

	cluster  *zktest.Cluster
	agents   []*agentProc
	obs      []*agentObs
	work     *workload
	nem      *nemesis
	finished chan struct{} // closed when the run stops restarting agents

	pubProxies []*faultproxy.Proxy
	pubLogger  *slog.Logger
	incLine    string // incarnationConfig's line, or empty

	zkMu     sync.Mutex
	checkZK  *zk.Conn  // the checker's session, straight to the servers
	pubConn  *zk.Conn  // the publisher's session
	preViews []*zkView // the history of every incarnation before a wipe

	// Several roots (roots.go): common's publisher and its session,
	// common's history before every wipe and at the end, the
	// observations of every two-root agent's common outputs (nil for the
	// others), the final publish to common and when each agent showed it.
	common      *commonWork
	commonConn  *zk.Conn
	commonPre   []*zkView
	commonView  *zkView
	cobs        []*agentObs
	commonFinal *commonRecord
	commonConv  map[int]time.Duration

	mu         sync.Mutex
	violations []Violation
	exits      []faultRec // unexpected agent exits, as disruption windows
}

func (r *runner) violate(v Violation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, v)
	r.log.addAt(v.At, "check", "VIOLATION %s %s: %s", v.Property, v.who(), v.Msg)
}

func (r *runner) run(ctx context.Context) (*Summary, error) {
	cfg := r.cfg
	r.finished = make(chan struct{})
	var finishOnce sync.Once
	finish := func() { finishOnce.Do(func() { close(r.finished) }) }
	defer finish()
	sch := makeSchedule(cfg.Seed, cfg.FaultPhase(), cfg.SessionTimeout, cfg.Agents)
	r.log.add("run", "schedule:\n%s", sch.text())

	// Ensemble (tickTime 200ms: sessions of 0.4-4s). A killed follower
	// that comes back holds the transactions of its sync with the leader
	// in its heap until the sync ends, and the runs write large
	// generations: a follower with the test servers' 256 MiB died of it
	// (java.lang.OutOfMemoryError in Learner.syncWithLeader, seed
	// 1795784365316787598), a harness failure, not a finding. 1 GiB, as
	// production servers have at least; the flag after the default wins.
	r.cluster = zktest.StartWith(r.h, zktest.Options{Size: 3, JVMFlags: []string{"-Xmx1g"}})
	r.log.add("run", "ensemble serving: %v", r.cluster.Addrs())
	newProxies := func() []*faultproxy.Proxy {
		ps := make([]*faultproxy.Proxy, len(r.cluster.Servers))
		for i, a := range r.cluster.Addrs() {
			p, err := faultproxy.New(a)
			if err != nil {
				r.h.Fatalf("proxy: %v", err)
			}
			r.h.Cleanup(func() { _ = p.Close() })
			ps[i] = p
		}
		return ps
	}

	// The checker's own session, straight to the servers, as the
	// publisher (history and blobs are the publisher's alone); it sets up
	// the tree's access policy and quotas, as `confpush init` does.
	checkConn, err := dialDirect(r.cluster.Addrs(), cfg.SessionTimeout, r.ids.publisher)
	if err != nil {
		return nil, err
	}
	r.checkZK = checkConn
	defer func() { r.zk().Close() }()
	if err := r.initTree(r.cluster.Addrs()); err != nil {
		return nil, fmt.Errorf("initialise the tree: %w", err)
	}

	// The publisher, through its own proxies.
	pubProxies := newProxies()
	pubLog, err := os.Create(filepath.Join(cfg.WorkDir, "publisher.log"))
	if err != nil {
		return nil, err
	}
	defer pubLog.Close()
	r.pubProxies = pubProxies
	r.pubLogger = slog.New(slog.NewTextHandler(pubLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	conn, pub, err := r.newPublisher()
	if err != nil {
		return nil, err
	}
	r.pubConn = conn
	defer func() {
		r.zkMu.Lock()
		defer r.zkMu.Unlock()
		r.pubConn.Close()
	}()
	r.work = newWorkload(cfg.Seed, pub, r.log)
	if err := r.startCommon(ctx); err != nil {
		return nil, err
	}
	defer func() {
		r.zkMu.Lock()
		defer r.zkMu.Unlock()
		r.commonConn.Close()
	}()
	ictx, cancel := context.WithTimeout(ctx, 90*time.Second)
	first, err := r.work.final(ictx, kindInitial) // retried until acknowledged
	cancel()
	if err != nil {
		return nil, fmt.Errorf("initial publish: %w", err)
	}

	// Agents and the checker's observers.
	for i := range cfg.Agents {
		a, err := newAgent(i, cfg.WorkDir, newProxies(), &cfg, r.log, r.ids.agents[i])
		if err != nil {
			return nil, err
		}
		if i == 0 {
			r.incLine = incarnationConfig(cfg.Confagent, a.dir, a.validConfig())
			r.log.add("run", "agents follow a new incarnation (%s): %v", fEnsembleWipe, r.incLine != "")
		}
		a.extraConfig = r.incLine
		if err := a.writeConfig(a.validConfig(), true); err != nil {
			return nil, err
		}
		if err := mountOutputs(r.h, a); err != nil {
			return nil, err
		}
		a.onExit = r.agentExited
		r.agents = append(r.agents, a)
		o := newAgentObs(i)
		o.onNew = r.logState(a)
		r.obs = append(r.obs, o)
		var co *agentObs
		if a.twoRoots {
			co = newAgentObs(i)
			co.onNew = r.logCommonState(a)
		}
		r.cobs = append(r.cobs, co)
	}
	defer r.stopAgents(false)
	for _, a := range r.agents {
		if err := a.start(); err != nil {
			return nil, err
		}
	}
	stopObs := make(chan struct{})
	var obsWG sync.WaitGroup
	for i, a := range r.agents {
		obsWG.Add(1)
		go func() { defer obsWG.Done(); r.observe(stopObs, a, r.obs[i]) }()
	}
	defer func() {
		select {
		case <-stopObs:
		default:
			close(stopObs)
		}
		obsWG.Wait()
	}()
	if err := r.waitAll(ctx, gkey(first.Inc, first.Gen), 90*time.Second, nil); err != nil {
		return nil, fmt.Errorf("agents never rendered the first generation: %w", err)
	}
	r.log.add("run", "every agent rendered generation %d; faults start", first.Gen)

	// Fault phase: publisher and nemesis together.
	phaseStart := time.Now()
	fctx, fcancel := context.WithDeadline(ctx, phaseStart.Add(cfg.FaultPhase()))
	defer fcancel()
	stopPub := make(chan struct{})
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); r.work.run(stopPub) }()
	commonDone := make(chan struct{})
	go func() { defer close(commonDone); r.common.run(stopPub) }()
	var stopOnce sync.Once
	stopPublisher := func() { stopOnce.Do(func() { close(stopPub); <-pubDone; <-commonDone }) }
	defer stopPublisher()
	r.nem = &nemesis{cluster: r.cluster, agents: r.agents, pubProxies: pubProxies, log: r.log, violate: r.violate, grace: cfg.Slack,
		work: r.work, bound: cfg.Bound(), sess: cfg.SessionTimeout, shows: r.shows,
		dial:       func(creds string) (*zk.Conn, error) { return dialDirect(r.cluster.Addrs(), cfg.SessionTimeout, creds) },
		beforeWipe: r.beforeWipe, afterWipe: r.afterWipe,
		hostileCreds: r.ids.hostile, viewerCreds: r.ids.publisher, policy: r.policy}
	for _, a := range r.agents {
		r.nem.agentIDs = append(r.nem.agentIDs, a.id)
	}
	if cfg.sabotage {
		go func() {
			if sleep(fctx, cfg.FaultPhase()/2) {
				r.sabotage(r.agents[1])
			}
		}()
	}
	nemErr := r.nem.run(fctx, sch)
	fcancel()
	r.log.add("run", "fault phase over after %v; healing", time.Since(phaseStart).Round(time.Millisecond))
	if nemErr != nil {
		return nil, fmt.Errorf("fault injection: %w", nemErr)
	}
	r.nem.heal()
	stopPublisher()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.log.add("run", "healed: every server serving, every proxy clean, every agent running its valid configuration")

	// The last generation, and convergence to it.
	fctx2, cancel2 := context.WithTimeout(ctx, 2*time.Minute)
	final, err := r.work.final(fctx2, kindFinal)
	cancel2()
	if err != nil {
		return nil, err
	}
	r.log.addAt(final.End, "run", "final generation %d acknowledged; waiting for convergence (bound %v)", final.Gen, cfg.Bound())
	conv := map[int]time.Duration{}
	_ = r.waitAll(ctx, gkey(final.Inc, final.Gen), cfg.Bound()+60*time.Second, func(i int, at time.Time) {
		conv[i] = at.Sub(final.End)
	})
	for i, a := range r.agents {
		d, ok := conv[i]
		switch {
		case !ok:
			r.violate(Violation{Property: "P5-convergence", Agent: i, At: time.Now(),
				Msg: fmt.Sprintf("%s never converged to the final generation %d (waited %v): %s; status node: %s; last log lines:\n%s",
					a.id, final.Gen, cfg.Bound()+60*time.Second, r.describeOutputs(i), r.statusJSON(a), a.tail())})
		case d > cfg.Bound():
			r.violate(Violation{Property: "P5-convergence", Agent: i, At: final.End.Add(d),
				Msg: fmt.Sprintf("%s converged to the final generation %d after %v, beyond the bound %v", a.id, final.Gen, d.Round(time.Millisecond), cfg.Bound())})
		}
	}
	if err := r.finalCommon(ctx, final); err != nil {
		return nil, err
	}
	r.closing = r.closingCanary(ctx)
	close(stopObs)
	obsWG.Wait()
	finish()
	r.stopAgents(true)

	// Offline checks against what ZooKeeper holds.
	var view *zkView
	for attempt := 0; ; attempt++ {
		view, err = readZK(r.zk(), chaosRoot, layout.DefaultMeta)
		if err == nil || attempt == 10 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	if r.commonView, err = r.readCommon(); err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", commonRoot, err)
	}
	return r.verify(view, final, conv), nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func addrs(ps []*faultproxy.Proxy) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr()
	}
	return out
}

// agentExited is called when an agent dies on its own: a violation (a
// daemon must not exit), and a restart so that the run goes on.
func (r *runner) agentExited(a *agentProc, code int, tail string) {
	now := time.Now()
	r.violate(Violation{Property: "agent-exit", Agent: a.idx, At: now,
		Msg: fmt.Sprintf("%s exited on its own with code %d; last log lines:\n%s", a.id, code, tail)})
	r.mu.Lock()
	r.exits = append(r.exits, faultRec{Kind: "agent-exit", Target: a.id, Agent: a.idx, Start: now, End: now.Add(2 * time.Second)})
	r.mu.Unlock()
	go func() {
		select {
		case <-r.finished:
		case <-time.After(time.Second):
			_ = a.start()
		}
	}()
}

// stopAgents stops every agent: SIGTERM, which must end it cleanly within
// the slack (checked when check is set), then SIGKILL.
func (r *runner) stopAgents(check bool) {
	var wg sync.WaitGroup
	for _, a := range r.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !a.running() {
				return
			}
			if ok := a.stop(syscall.SIGTERM, r.cfg.Slack); !ok && check {
				r.violate(Violation{Property: "agent-exit", Agent: a.idx, At: time.Now(),
					Msg: fmt.Sprintf("%s did not exit within %v of SIGTERM; last log lines:\n%s", a.id, r.cfg.Slack, a.tail())})
			}
		}()
	}
	wg.Wait()
	for _, a := range r.agents {
		a.logf.Close()
	}
}

// observe polls one agent's outputs until stop.
func (r *runner) observe(stop <-chan struct{}, a *agentProc, o *agentObs) {
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		o.pollDir(a.dirOut, time.Now())
		o.pollTemplate(a.tmplOut, time.Now())
		if co := r.cobs[a.idx]; co != nil {
			co.pollDir(a.commonOut, time.Now())
			co.pollCut(a.cutOut, time.Now())
		}
	}
}

// logState puts every new output state in the history.
func (r *runner) logState(a *agentProc) func(string, *obsState) {
	return func(target string, s *obsState) {
		switch {
		case s.Absent:
			r.log.addAt(s.First, "observe", "%s %s: absent", a.id, target)
		case s.Bad != "":
			r.log.addAt(s.First, "observe", "%s %s: BAD %s", a.id, target, s.Bad)
		case target == tTmpl:
			r.log.addAt(s.First, "observe", "%s %s: generation %d (%d items)", a.id, target, s.Gen, len(s.Items))
		default:
			r.log.addAt(s.First, "observe", "%s %s: %d items, set of %s", a.id, target, len(s.Items), r.work.describe(obsSigs(s.Items)))
		}
	}
}

// statusGen reads an agent's status node.
func (r *runner) statusGen(a *agentProc) (int64, bool) {
	b, _, err := r.zk().Get(layout.New(chaosRoot, layout.DefaultMeta).StatusNode(a.id))
	if err != nil {
		return 0, false
	}
	var st struct {
		Generation int64 `json:"generation"`
	}
	if json.Unmarshal(b, &st) != nil {
		return 0, false
	}
	return st.Generation, true
}

func (r *runner) statusJSON(a *agentProc) string {
	b, _, err := r.zk().Get(layout.New(chaosRoot, layout.DefaultMeta).StatusNode(a.id))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func (r *runner) describeOutputs(i int) string {
	o := r.obs[i]
	d, t := o.latest(tDir), o.latest(tTmpl)
	s := "dir: none"
	if d != nil {
		s = fmt.Sprintf("dir: %d items (%s)", len(d.Items), r.work.describe(obsSigs(d.Items)))
	}
	if t != nil {
		s += fmt.Sprintf(", template: generation %d", t.Gen)
	}
	return s
}

// waitAll waits until every agent shows generation k (a gkey) in both
// outputs and in its status node; done is told when each one got there.
func (r *runner) waitAll(ctx context.Context, k int64, timeout time.Duration, done func(int, time.Time)) error {
	want := digest(r.work.itemsOf(k))
	wantNonce := r.work.nonceOfKey(k)
	_, g := splitKey(k)
	deadline := time.Now().Add(timeout)
	reached := map[int]bool{}
	lastStatus := time.Time{}
	statusOK := map[int]time.Time{}
	for len(reached) < len(r.agents) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d agents reached generation %d within %v", len(reached), len(r.agents), g, timeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		readStatus := time.Since(lastStatus) >= 100*time.Millisecond
		if readStatus {
			lastStatus = time.Now()
		}
		for i, a := range r.agents {
			if reached[i] {
				continue
			}
			if _, ok := statusOK[i]; !ok && readStatus {
				if sg, ok := r.statusGen(a); ok && sg == g {
					statusOK[i] = time.Now()
				}
			}
			d, t := r.obs[i].latest(tDir), r.obs[i].latest(tTmpl)
			st, ok := statusOK[i]
			if !ok || d == nil || t == nil || t.Gen != g || t.Nonce != wantNonce || d.Absent || digest(obsSigs(d.Items)) != want {
				continue
			}
			at := st
			for _, x := range []time.Time{d.First, t.First} {
				if x.After(at) {
					at = x
				}
			}
			reached[i] = true
			r.log.addAt(at, "run", "%s converged to generation %d", a.id, g)
			if done != nil {
				done(i, at)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// verify runs the offline checks and builds the summary.
func (r *runner) verify(view *zkView, final *pubRecord, conv map[int]time.Duration) *Summary {
	cfg := r.cfg
	records, ackedAt, poison := r.work.snapshot()
	r.writeRecords(records)
	r.zkMu.Lock()
	view.inc = len(r.preViews)
	views := append(slices.Clone(r.preViews), view)
	r.zkMu.Unlock()
	hist := map[int64]*histEntry{}
	for _, v := range views {
		for g, e := range v.history {
			e.Inc = v.inc
			hist[gkey(v.inc, g)] = e
		}
	}
	c := newChecker(hist, records, poison)
	now := time.Now()
	var pstats publishStats
	for _, v := range views {
		var mine []*pubRecord
		for _, rec := range records {
			if rec.Inc == v.inc {
				mine = append(mine, rec)
			}
		}
		fin := final
		if v != view {
			fin = nil
		}
		before := len(c.violations)
		st := c.checkHistory(v, mine, fin, now)
		if len(views) > 1 {
			for i := before; i < len(c.violations); i++ {
				c.violations[i].Msg = fmt.Sprintf("incarnation %d: %s", v.inc, c.violations[i].Msg)
			}
		}
		pstats = pstats.add(st)
	}
	c.checkIncarnations(views, now)
	for i, o := range r.obs {
		c.checkAgent(o, r.agents[i].picky)
	}
	roots := r.checkRoots(c)
	faults := r.nem.snapshot()
	r.mu.Lock()
	faults = append(faults, r.exits...)
	r.mu.Unlock()
	rec := r.checkRecoveries(c, append(slices.Clone(faults), wipeRecoveries(faults, records, len(r.agents))...), ackedAt, final.End)
	heals, fleetSamples, squats, hostile := r.nem.samples()
	for i, a := range r.agents {
		gen, nonce := r.finalFor(i, c, view, final)
		c.checkReloads(i, readReloadLog(a), heals, gen, nonce, cfg.Bound(), now)
	}
	c.checkForged(fleetSamples, squats)
	c.checkHostile(hostile)
	rollouts := r.work.rollouts()
	trees := r.work.treeSummary(records)
	for _, e := range c.hist {
		if e.Format == 2 {
			trees.HistoryTrees++
		}
	}

	r.mu.Lock()
	all := append(slices.Clone(r.violations), c.violations...)
	r.mu.Unlock()
	for i := range all {
		at := r.log.since(all[i].At)
		all[i].Context = r.log.around(at, 15*time.Second, 5*time.Second, 60, 20)
	}
	slices.SortStableFunc(all, func(a, b Violation) int { return a.At.Compare(b.At) })

	s := &Summary{
		Seed: cfg.Seed, Duration: cfg.Duration, FaultPhase: cfg.FaultPhase(), Elapsed: time.Since(r.start),
		Agents: cfg.Agents, Servers: len(r.cluster.Servers), Faults: map[string]int{},
		Publishes: pstats, FinalGeneration: final.Gen, Bound: cfg.Bound(), BoundExpr: cfg.BoundExpr(),
		Convergence: conv, Recoveries: rec.checked, RecoverySkipped: rec.skipped, WorstRecovery: rec.worst,
		WorstRecoveryAgent: rec.worstAgent, WorstRecoveryWhat: rec.worstWhat, Violations: all, WorkDir: cfg.WorkDir,
		HistoryFile: filepath.Join(cfg.WorkDir, "history.log"), StatesChecked: c.states, LinkPairs: c.linkPairs,
		HistoryVerified: view.historyRead, WorstConvergenceAgent: -1,
		Rollouts: rollouts, Trees: trees, TreeStates: c.treeStates, TreeLinkPaths: c.treeLinkPaths, FinalSelections: len(r.agents), ClosingCanary: r.closing != nil, Relabelled: r.relabelledIDs(),
		Roots: roots, ReloadRetries: len(heals), FleetReadings: len(fleetSamples), SquatReadings: len(squats), Incarnations: len(views),
	}
	for _, v := range views[:len(views)-1] {
		s.HistoryVerified += v.historyRead
	}
	for _, h := range hostile {
		if h.Skipped != "" {
			s.HostileSkipped++
			continue
		}
		s.HostileSteps++
		s.HostileBurst += len(h.Writes)
		for _, w := range h.Writes {
			if !w.Landed {
				s.HostileRefused++
			}
		}
		s.HostileOvershoot += h.Overshoot
		s.HostileFlood += h.Flooded
		s.HostileReadings += h.Readings
	}
	for _, f := range faults {
		if f.Kind != "agent-exit" {
			s.Faults[f.Kind]++
		}
	}
	for _, o := range r.obs {
		o.mu.Lock()
		for _, n := range o.reads {
			s.Reads += n
		}
		s.Raced += o.raced
		s.LinkReads += o.linkReads
		o.mu.Unlock()
	}
	for _, a := range r.agents {
		s.ConfigRejections += int(a.rejected.Load())
		s.AgentStarts += int(a.starts.Load())
	}
	for i, d := range conv {
		if s.WorstConvergenceAgent < 0 || d > s.WorstConvergence {
			s.WorstConvergence, s.WorstConvergenceAgent = d, i
		}
	}
	return s
}

type recoveryStats struct {
	checked, skipped int
	worst            time.Duration
	worstAgent       int
	worstWhat        string
}

// checkRecoveries checks liveness during the run: after each agent fault
// heals, the agent shows the generation acknowledged by then in both
// outputs within the bound. When something else that can hold it back
// overlaps that window (an ensemble fault, a publisher partition that can
// leave a marker-mode publish half done, another fault or an exit of the
// same agent), the window restarts when that ends. Windows that reach the
// final publish are left to property 5.
func (r *runner) checkRecoveries(c *checker, faults []faultRec, ackedAt map[int64]time.Time, finalAt time.Time) recoveryStats {
	bound := r.cfg.Bound()
	st := recoveryStats{worstAgent: -1}
	gens := slices.Sorted(maps.Keys(ackedAt))
	disturbs := func(o faultRec, agent int) bool {
		switch {
		case o.Agent >= 0:
			return o.Agent == agent
		case o.Kind == fPubCut:
			return false
		}
		return true
	}
	for fi, f := range faults {
		if f.Agent < 0 || f.Kind == "agent-exit" || f.End.IsZero() {
			continue
		}
		e := f.End
		var ge int64
		for _, g := range gens {
			// The newest acknowledged by then: the highest key of the
			// newest incarnation, as keys order incarnations.
			if !ackedAt[g].After(e) && g > ge {
				ge = g
			}
		}
		if ge == 0 || (r.agents[f.Agent].picky && c.poisonGen[ge]) {
			continue
		}
		o := r.obs[f.Agent]
		reach := func(target string) (time.Time, bool) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, s := range o.states[target] {
				// A dir set is matched to its content's earliest generation:
				// one carrying the content of ge (a promote's candidate, an
				// abort's stable one) counts as ge.
				if g := s.Assigned; (g >= ge || target == tDir && c.sameSet(g, ge)) && !s.Last.Before(e) {
					if s.First.Before(e) {
						return e, true
					}
					return s.First, true
				}
			}
			return time.Time{}, false
		}
		t1, ok1 := reach(tDir)
		t2, ok2 := reach(tTmpl)
		at := t1
		if t2.After(at) {
			at = t2
		}
		if ok1 && ok2 && !at.After(e.Add(bound)) {
			st.checked++
			if d := at.Sub(e); d > st.worst {
				st.worst, st.worstAgent = d, f.Agent
				st.worstWhat = fmt.Sprintf("after %s ended at %.1fs", f.Kind, r.log.since(e).Seconds())
			}
			continue
		}
		if r.agents[f.Agent].picky && poisonedBetween(c, ackedAt, e, e.Add(2*bound)) {
			// A rejected generation acknowledged meanwhile may be all its
			// cache sees after reconnecting; it rightly stays behind until
			// a clean one follows.
			st.skipped++
			continue
		}
		// Too slow so far: restart the window after anything that held the
		// agent back.
		start := e
		for changed := true; changed; {
			changed = false
			for fj, x := range faults {
				end := x.End
				if end.IsZero() {
					end = finalAt
				}
				if fj != fi && disturbs(x, f.Agent) && x.Start.Before(start.Add(bound)) && end.After(start) {
					start, changed = end, true
				}
			}
		}
		if start.Add(bound).After(finalAt) {
			st.skipped++
			continue
		}
		st.checked++
		if !ok1 || !ok2 {
			c.violate("recovery", f.Agent, e, "after %s on %s ended, the agent never reached generation %s (acknowledged by then)", f.Kind, f.Target, genName(ge))
			continue
		}
		d := at.Sub(start)
		if d > st.worst {
			st.worst, st.worstAgent = d, f.Agent
			st.worstWhat = fmt.Sprintf("after %s ended at %.1fs and what held it back after it, until %.1fs", f.Kind, r.log.since(e).Seconds(), r.log.since(start).Seconds())
		}
		if d > bound {
			c.violate("recovery", f.Agent, e, "after %s on %s ended (and what else held it back, until +%v), the agent took %v more to reach generation %s (bound %v)",
				f.Kind, f.Target, start.Sub(e).Round(time.Millisecond), d.Round(time.Millisecond), genName(ge), bound)
		}
	}
	return st
}

// poisonedBetween reports whether a poisoned generation was acknowledged
// between from and to.
func poisonedBetween(c *checker, ackedAt map[int64]time.Time, from, to time.Time) bool {
	for g, at := range ackedAt {
		if at.After(from) && !at.After(to) && c.poisonGen[g] {
			return true
		}
	}
	return false
}

// sabotage corrupts an agent's outputs as a buggy agent would: one file
// of its current dir set rewritten in place with other content, and its
// template output truncated in place.
func (r *runner) sabotage(a *agentProc) {
	if target, err := os.Readlink(filepath.Join(a.dirOut, "..data")); err == nil {
		gen := filepath.Join(a.dirOut, target)
		if items, _, err := readGenDir(gen); err == nil && len(items) > 0 {
			f := filepath.Join(gen, slices.Min(slices.Collect(maps.Keys(items))))
			_ = os.WriteFile(f, []byte("sabotaged: not an item of any generation\n"), 0o644)
			r.log.add("run", "SABOTAGE: rewrote %s in place", f)
		}
	}
	if b, err := os.ReadFile(a.tmplOut); err == nil {
		_ = os.WriteFile(a.tmplOut, b[:len(b)/2], 0o644)
		r.log.add("run", "SABOTAGE: truncated %s in place", a.tmplOut)
	}
}

// writeRecords saves every publish attempt (kind, outcome, generation and
// each item's sha256 and size) to publishes.jsonl in the work directory.
func (r *runner) writeRecords(records []*pubRecord) {
	f, err := os.Create(filepath.Join(r.cfg.WorkDir, "publishes.jsonl"))
	if err != nil {
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, rec := range records {
		_ = enc.Encode(rec)
	}
}

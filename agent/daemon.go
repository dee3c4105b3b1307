package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Options configure a Daemon. cmd/confagent builds them from the YAML
// configuration; embedders can build them directly.
type Options struct {
	// Root is the ZooKeeper path of the root the daemon follows; Roots,
	// when it names two or more, replaces it: the daemon follows them all
	// on its one session (a cache.Group), each target renders the root it
	// names (TargetSpec.Root), and a template that reads several renders
	// only cuts.
	Root    string
	Roots   []RootSpec
	Meta    string
	ZK      zkclient.Config
	AgentID string
	// StateDir holds the persisted snapshot (created 0700).
	StateDir string
	// StaleAfter is how long the agent may be without a live ZooKeeper
	// view before /readyz fails.
	StaleAfter     time.Duration
	ResyncInterval time.Duration
	ResyncJitter   time.Duration
	Apply          ApplyMode
	Targets        []TargetSpec
	Logger         *slog.Logger
	// ACL is given to the status node; zk.WorldACL(zk.PermAll) when nil.
	ACL []zk.ACL
	// Version is reported in /status and the status node.
	Version string
	// NoPersist keeps the snapshot in memory only (confagent --dry-run
	// writes nothing, not even the state file).
	NoPersist bool
	// Heartbeat, when set, is called every HeartbeatInterval from the main
	// loop, between applies: a stuck loop stops the calls (systemd's
	// watchdog restarts the agent).
	Heartbeat         func()
	HeartbeatInterval time.Duration
	// OnStarted, when set, is called once by Run when the agent has
	// started (started.go): it serves what it holds and knows where it
	// stands, which is not the same as having applied a generation
	// (confagent sends systemd READY=1 then). StartTimeout bounds how long
	// after Run starts that takes (DefaultStartTimeout when zero).
	OnStarted    func()
	StartTimeout time.Duration
	// OnStatus, when set, is called (from the daemon's goroutine) with the
	// new status after every apply attempt and state change. It must not
	// block for long.
	OnStatus func(Status)
	// Labels describe the agent (e.g. role, zone; canary rollouts select
	// by them): reported in its status and registry nodes, with
	// "hostname" added unless set. Keys and values follow Kubernetes
	// label syntax (the configuration file is validated before it gets here).
	Labels map[string]string
	// Incarnation is what the agent does when the root holds a new
	// incarnation (ZooKeeper wiped or rebuilt): cache.IncarnationFollow
	// (the zero value) or cache.IncarnationRefuse (until adopted: see
	// AdoptFileName).
	Incarnation cache.IncarnationPolicy
	// MemoryLimit is the process's soft memory limit (debug.SetMemoryLimit):
	// MemoryLimitOff (the zero value) leaves the runtime alone,
	// MemoryLimitAuto sizes it from the applied snapshot after every apply
	// (the larger of 14 MiB and 6 times the items' bytes plus what the
	// template targets' last renders allocated; confagent's default), a
	// positive value is a fixed limit in bytes. GOMEMLIMIT in the
	// environment takes precedence. The limit is process-wide: an embedder
	// with a heap of its own should leave it off.
	MemoryLimit int64
	// WaitMin and WaitMax coalesce bursts of publishes (see quiesce.go):
	// a new generation is applied once none newer has arrived for
	// WaitMin, or WaitMax after the first of the burst. Zero WaitMin
	// applies every generation at once; a WaitMax below WaitMin (zero
	// included) is taken as WaitMin.
	WaitMin, WaitMax time.Duration
	// ReloadSplay delays the reload commands that follow a new output by
	// a random duration in [0, ReloadSplay); zero runs them at once.
	ReloadSplay time.Duration
	// StatusCommandOutput lets the last line of a failing check or reload
	// command's output into the status node (read by confpush status and
	// the dashboard) and into /status and /readyz answered beyond
	// loopback. Without it that output stays on the host: the log, and
	// /status and /readyz asked from loopback.
	StatusCommandOutput bool
	// OnApply, when set, is called (from the daemon's goroutine) with the
	// outcome of every apply that was attempted (not Skipped), after its
	// reload commands ran: confagent exec signals its child from it. It
	// must not block for long.
	OnApply func(Outcome)
}

// StateFileName is the persisted snapshot's file name inside StateDir.
const StateFileName = "snapshot.state"

// PendingReloadsFileName is the file inside StateDir that lists the
// targets whose reload has not succeeded yet, so that a restarted agent
// retries them.
const PendingReloadsFileName = "reload-pending.json"

// Daemon follows a root and keeps every target rendered from its newest
// generation: confagent's main loop.
type Daemon struct {
	log *slog.Logger
	zk  *zkclient.Client
	// cache is the one root's cache (nil with several roots); follow is
	// it or multi, the roots of a cache.Group.
	cache  *cache.Cache
	multi  *multiRoots
	follow follower
	// statuses are the status nodes: one per root (one, unnamed, for
	// the one root).
	statuses []rootStatusNode
	// rootApplied is, with several roots, the snapshot of each root whose
	// targets all applied it (guarded by mu).
	rootApplied map[string]*cache.Snapshot
	// rootAttempted is each root's generation last attempted.
	rootAttempted map[string]int64
	r             *Renderer
	metrics       *Metrics
	reconf        chan Options
	mem           *memLimiter

	mu        sync.Mutex
	opts      Options
	lastState string // the cache state last reported
	conflict  string // why the status node is not written (statusnode.go); guarded by mu
	lastWhy   string // why the cache was not live, as last reported

	// shutdownGrace is how long Run, stopping, waits for a render in
	// progress (wedge.go).
	shutdownGrace time.Duration
	// unreachable is the last diagnosis of every server while none gives
	// a session ("" otherwise), and connWake is closed at its next change
	// (connlog.go); both guarded by mu. stopConn stops watchConnection.
	unreachable string
	connWake    chan struct{}
	stopConn    func()
	// started is done once Options.OnStarted was called, and isStarted
	// says so without a lock (started.go).
	started   sync.Once
	isStarted atomic.Bool
}

// NewDaemon creates the cache (loading the persisted snapshot, so a host
// booting while ZooKeeper is down can render its last good config at once)
// and compiles the targets. It does not wait for ZooKeeper.
func NewDaemon(ctx context.Context, opts Options) (*Daemon, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = time.Minute
	}
	if _, ok := opts.Labels[manifest.LabelAgent]; ok {
		// Canary selectors match "agent" against the agent id.
		return nil, fmt.Errorf("label %q is the agent id and may not be configured", manifest.LabelAgent)
	}
	if !opts.NoPersist {
		if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if len(opts.Roots) > 1 {
			for _, r := range opts.Roots {
				if err := os.MkdirAll(rootStateDir(opts.StateDir, r.Name), 0o700); err != nil {
					return nil, fmt.Errorf("state dir: %w", err)
				}
			}
		}
	}
	d := &Daemon{log: log, opts: opts, reconf: make(chan Options, 1), mem: newMemLimiter(log, opts.MemoryLimit, nil),
		shutdownGrace: defaultShutdownGrace, connWake: make(chan struct{})}
	d.metrics = newMetrics(d.staleSeconds)
	r, err := NewRenderer(opts.Targets, opts.Apply, log, d.metrics)
	if err != nil {
		return nil, err
	}
	d.r = r
	r.setLabels(d.labels(opts))
	r.setReloadSplay(opts.ReloadSplay)
	if !opts.NoPersist {
		if err := r.persistPendingReloads(filepath.Join(opts.StateDir, PendingReloadsFileName)); err != nil {
			return nil, err
		}
	}
	// The daemon owns the session, so that the cache and the status node
	// share it and the daemon (the application owning the session)
	// decides what an expiry means: resync and re-register. A Client,
	// because a ZooKeeper server wiped or rebuilt on the same address
	// refuses a connection that has seen a newer zxid forever: the Client
	// replaces it, and both the cache and the status node take the current
	// connection from it and treat the replacement as an expiry.
	zcfg := opts.ZK
	if zcfg.Logger == nil {
		zcfg.Logger = log
	}
	// An agent must start, and serve its persisted snapshot, while a
	// server's name does not resolve (DNS down at boot, one stale name):
	// such a server fails its attempts, and the diagnosis says so.
	zcfg.LazyResolve = true
	client, err := zkclient.Dial(zcfg)
	if err != nil {
		return nil, err
	}
	d.zk = client
	meta := cmp.Or(opts.Meta, layout.DefaultMeta)
	// The renderer stages a snapshot while its state is written and
	// waits for it (Snapshot.Durable) before anything shows it.
	copts := []cache.Option{cache.WithClient(client), cache.WithLogger(log), cache.WithIncarnationPolicy(opts.Incarnation), cache.WithDurableBarrier()}
	if opts.Meta != "" {
		copts = append(copts, cache.WithMeta(opts.Meta))
	}
	if opts.ResyncInterval > 0 {
		copts = append(copts, cache.WithResyncInterval(opts.ResyncInterval))
	}
	if opts.ResyncJitter > 0 {
		copts = append(copts, cache.WithResyncJitter(opts.ResyncJitter))
	}
	if opts.AgentID != "" {
		// A member of canary rollouts: the cache follows the candidate
		// when the rollout's selection picks this agent.
		copts = append(copts, cache.WithLabels(opts.AgentID, d.labels(opts)))
	}
	if len(opts.Roots) > 1 {
		m, err := startGroup(ctx, opts, copts)
		if err != nil {
			client.Close()
			return nil, err
		}
		d.multi, d.follow = m, m
	} else {
		if !opts.NoPersist {
			copts = append(copts, cache.WithStateFile(filepath.Join(opts.StateDir, StateFileName)))
		}
		c, err := cache.New(ctx, opts.Root, copts...)
		if err != nil {
			client.Close()
			return nil, err
		}
		d.cache, d.follow = c, c
	}
	d.stopConn = d.watchConnection()
	d.registerIncarnationMetrics()
	acl := opts.ACL
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	if opts.AgentID != "" {
		// One status node per root, each following its root's fleet (the
		// status-ACL document) and named after the identity that reads
		// the root.
		roots := opts.Roots
		if len(roots) < 2 {
			roots = []RootSpec{{Path: opts.Root}}
		}
		for _, r := range roots {
			fl, err := fleet.New(client, r.Path, fleet.WithMeta(meta))
			if err != nil {
				d.stopConn()
				_ = d.follow.Close()
				client.Close()
				return nil, err
			}
			n := newStatusNode(client, fl, layout.New(r.Path, meta), opts.AgentID, acl, log)
			n.reg, n.onChange = d.registration, d.onConflict
			n.authUser, _, _ = strings.Cut(cmp.Or(r.Auth, opts.ZK.Auth), ":")
			d.statuses = append(d.statuses, rootStatusNode{root: r, node: n})
		}
	}
	return d, nil
}

// Cache returns the daemon's cache; nil when it follows several roots.
func (d *Daemon) Cache() *cache.Cache { return d.cache }

// updates returns what delivers new snapshots: one root's cache delivers
// *cache.Snapshot, several roots their combination; the other is nil.
func (d *Daemon) updates() (<-chan *cache.Snapshot, <-chan Snapshot) {
	if d.multi != nil {
		return nil, d.multi.updates
	}
	return d.cache.Updates(), nil
}

// current returns the newest snapshot to apply, nil before any.
func (d *Daemon) current() Snapshot {
	if d.multi != nil {
		return d.multi.current()
	}
	if s := d.cache.Snapshot(); s != nil {
		return s
	}
	return nil
}

// Renderer returns the daemon's renderer.
func (d *Daemon) Renderer() *Renderer { return d.r }

// Metrics returns the daemon's metrics.
func (d *Daemon) Metrics() *Metrics { return d.metrics }

// Close stops the cache and closes the ZooKeeper session (the status node,
// ephemeral, goes with it).
func (d *Daemon) Close() error {
	d.stopConn()
	err := d.follow.Close()
	d.zk.Close()
	return err
}

// Reconfigure hands a new, already validated configuration to the running
// daemon. Targets, apply mode, staleness, memory limits and
// StatusCommandOutput change live. Settings
// that need a restart (ZooKeeper servers and session timeout, root, meta,
// roots, state dir, agent id, labels, incarnation policy) keep their running values and are listed in
// needRestart. A configuration whose targets do not compile is rejected
// with err and the running one stays.
func (d *Daemon) Reconfigure(o Options) (needRestart []string, err error) {
	d.mu.Lock()
	cur := d.opts
	d.mu.Unlock()
	if !slices.Equal(o.ZK.Servers, cur.ZK.Servers) {
		needRestart = append(needRestart, "zookeeper.servers")
	}
	if o.ZK.SessionTimeout != cur.ZK.SessionTimeout {
		needRestart = append(needRestart, "zookeeper.session_timeout")
	}
	for k, changed := range map[string]bool{"root": o.Root != cur.Root, "roots": !slices.Equal(o.Roots, cur.Roots), "meta": o.Meta != cur.Meta,
		"state_dir": o.StateDir != cur.StateDir, "agent_id": o.AgentID != cur.AgentID,
		"labels":      !maps.Equal(o.Labels, cur.Labels),
		"incarnation": o.Incarnation != cur.Incarnation} {
		if changed {
			needRestart = append(needRestart, k)
		}
	}
	slices.Sort(needRestart)
	// Compile first, so a bad target leaves the running configuration alone.
	if _, err := NewRenderer(o.Targets, o.Apply, nil, nil); err != nil {
		// The caller says the configuration was rejected: err only says why.
		return nil, err
	}
	select {
	case <-d.reconf:
	default:
	}
	d.reconf <- o
	return needRestart, nil
}

// Run applies the persisted snapshot, if any, and then every new generation
// until ctx ends. An apply in progress when ctx ends is finished first
// (commands keep their own timeouts), so SIGTERM never leaves a
// half-applied generation; but a render in progress is interrupted, and
// one that does not end within defaultShutdownGrace (a helper call that
// never returns) is left behind: Run returns without it.
func (d *Daemon) Run(ctx context.Context) error {
	drift, err := newDriftWatcher(d.log)
	if err != nil {
		d.log.Warn("drift repair disabled: cannot watch files", "error", err)
	}
	if drift != nil {
		defer drift.close()
		d.r.setExpect(drift.expect)
		defer d.r.setExpect(nil)
	}
	for _, n := range d.statuses {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go n.node.run(sctx)
		defer func() { cancel(); <-n.node.done }()
	}
	// Failures that are not the generation's fault (a failed reload, a
	// full disk, a failed write) are retried from this loop; the wait ends
	// with ctx. The cap is short (30 s) because what ends these failures
	// is usually an operator freeing disk or fixing a service, who expects
	// the agent to notice within seconds; a retry costs one stage or one
	// reload command.
	retry := backoff.NewTimer(backoff.Policy{Base: time.Second, Max: 30 * time.Second})
	// Previous generation directories of dir targets are removed once
	// their grace period has passed: by every apply, after its swap
	// (Renderer.Apply), and by this timer, which waits sweepSlack longer,
	// so that while publishes keep coming each apply removes them in its
	// own wake-up, and the timer, re-armed by each, fires only once they
	// stop (at its exact end it woke the whole agent between two
	// publishes).
	sweep := time.NewTimer(time.Hour)
	sweep.Stop()
	defer sweep.Stop()
	rearmSweep := func() {
		if next := d.r.sweepRetired(); next > 0 {
			sweep.Reset(next + sweepSlack)
		}
	}
	// repairPass repairs what drifted, and asks for one more pass
	// (debounced) when the repair armed a new watch.
	repairPass := func() {
		if fixed := d.r.Repair(); len(fixed) > 0 {
			rearmSweep()
			d.publishStatus()
		}
		if added, _ := drift.watch(d.r.driftDirs()); added {
			drift.arm()
		}
		d.r.setLinksWatched(drift.isWatched)
	}
	// The watchdog is pinged from this loop, and while it waits for an
	// apply, as long as no render is wedged (applyWatched).
	var heartbeat <-chan time.Time
	if d.opts.Heartbeat != nil && d.opts.HeartbeatInterval > 0 {
		t := time.NewTicker(d.opts.HeartbeatInterval)
		defer t.Stop()
		heartbeat = t.C
	}
	// apply applies snap; fresh is false for a retry. The backoff grows
	// only over retries of the same attempt: a new generation (or
	// configuration) starts it again at its minimum, so an agent that
	// failed through a burst of publishes still notices a fix within about
	// a second of the last one. It returns false when Run must return at
	// once: stopping, with a render that does not end.
	var last Snapshot // the snapshot apply was last given
	apply := func(snap Snapshot, fresh bool) bool {
		if snap == nil {
			return true
		}
		d.metrics.setCacheGeneration(snap.Generation())
		// A retry that finds a newer snapshot applies it as new (Updates
		// delivers it too; that delivery is then skipped, below).
		if fresh || snap != last {
			retry.Reset()
		}
		last = snap
		out, ok := d.applyWatched(ctx, snap, heartbeat)
		if !ok {
			return false
		}
		if out.Retry || (out.Err != nil && !out.Rejected) {
			retry.Schedule()
		} else {
			retry.Reset()
		}
		// A new watch (a dir target's new generation directory) needs a
		// pass for what changed between the write and the watch: run in
		// the apply's wake-up, rather than a debounce later, once the
		// status and OnApply have been told.
		var armed bool
		var unseen map[string]bool
		if drift != nil {
			armed, unseen = drift.watch(d.r.driftDirs())
			d.r.setLinksWatched(drift.isWatched)
		}
		rearmSweep()
		if !out.Skipped {
			d.noteRootsApplied(snap)
			if rs, ok := snap.(*rootsSnapshot); ok {
				d.mem.observe(rs.bytes(), d.r.renderBytes())
			} else {
				d.mem.observe(snapshotBytes(snap), d.r.renderBytes())
			}
			d.publishStatus()
			if d.opts.OnApply != nil {
				d.opts.OnApply(out)
			}
		}
		if armed {
			// Only what the new watches did not see: the rest was
			// watched throughout, and its changes are events.
			// The watch set changes only when the repair wrote (a
			// new generation directory): a pass that fixed nothing
			// leaves it as the watch just above made it, so it is
			// not listed again (a readlink of each dir target's
			// "..data" per apply).
			if fixed := d.r.repairIn(unseen); len(fixed) > 0 {
				rearmSweep()
				d.publishStatus()
				if added, _ := drift.watch(d.r.driftDirs()); added {
					drift.arm()
				}
				d.r.setLinksWatched(drift.isWatched)
			}
		}
		return true
	}
	q := newQuiescer(d.opts.WaitMin, d.opts.WaitMax)
	defer q.stop()
	d.r.stopOn(ctx.Done())
	defer d.startTimer()()
	d.onState(d.follow.State())
	if !apply(d.current(), true) {
		return nil
	}
	cacheUpdates, rootsUpdates := d.updates()
	arrived := func(snap Snapshot) bool {
		d.metrics.setCacheGeneration(snap.Generation())
		if snap == last {
			return true // applied already (a retry or a timer read it first)
		}
		return !q.arrived(snap, d.log) || apply(snap, true)
	}
	// confagent adopt leaves its request in the state dir; it is looked
	// for at start and then every few seconds (a stat).
	d.checkAdopt()
	adoptTick := time.NewTicker(adoptPoll)
	defer adoptTick.Stop()
	var driftC <-chan struct{}
	if drift != nil {
		driftC = drift.events()
	}
	for {
		d.checkStarted()
		_, connC := d.unreachableNow()
		select {
		case <-ctx.Done():
			return nil
		case <-d.follow.Done():
			return errors.New("cache stopped")
		case <-connC:
			// ZooKeeper became unreachable, or reachable again: /status,
			// the status callback and systemd's STATUS= say so.
			d.publishStatus()
		case snap := <-cacheUpdates:
			if !arrived(snap) {
				return nil
			}
		case snap := <-rootsUpdates:
			if !arrived(snap) {
				return nil
			}
		case <-q.C():
			// The newest generation, whichever arrived last.
			q.fired()
			if !apply(d.current(), true) {
				return nil
			}
		case st := <-d.follow.StateChanges():
			d.onState(st)
		case o := <-d.reconf:
			if err := d.r.configure(o.Targets, o.Apply); err != nil {
				d.log.Error("new configuration rejected, the old one keeps running", "error", err)
				continue
			}
			d.mu.Lock()
			// Only what can change live is taken over.
			d.opts.Targets, d.opts.Apply, d.opts.StaleAfter = o.Targets, o.Apply, o.StaleAfter
			d.opts.MemoryLimit = o.MemoryLimit
			d.opts.WaitMin, d.opts.WaitMax, d.opts.ReloadSplay = o.WaitMin, o.WaitMax, o.ReloadSplay
			outputChanged := d.opts.StatusCommandOutput != o.StatusCommandOutput
			d.opts.StatusCommandOutput = o.StatusCommandOutput
			d.mu.Unlock()
			if outputChanged {
				d.publishStatus()
			}
			q.configure(o.WaitMin, o.WaitMax)
			d.r.setReloadSplay(o.ReloadSplay)
			d.mem.configure(o.MemoryLimit)
			d.log.Info("configuration reloaded", "targets", len(o.Targets))
			if !apply(d.current(), true) {
				return nil
			}
		case <-driftC:
			repairPass()
		case <-sweep.C:
			rearmSweep()
		case <-heartbeat:
			d.opts.Heartbeat()
		case <-adoptTick.C:
			d.checkAdopt()
		case <-retry.C():
			d.log.Info("retrying apply after a failure")
			if !apply(d.current(), false) {
				return nil
			}
		}
	}
}

// sweepSlack is how long past a retired generation directory's grace
// period the sweep timer waits: the period is a minimum, and an apply
// within the slack removes the directory first.
const sweepSlack = time.Second

// adoptPoll is how often the daemon looks for an adopt request.
const adoptPoll = 2 * time.Second

// onState records the cache's state. The status node is written only when
// the state itself, or the reason the cache is not live, changes: a new
// generation is reported by the apply that follows it, and writing twice
// per publish would double the fleet's writes to ZooKeeper. The reason
// matters to whoever reads the node (an abandoned marker, an item that
// does not match the manifest: both name what to fix).
func (d *Daemon) onState(st cache.StateInfo) {
	name := st.State.String()
	why := ""
	if st.State != cache.StateLive && st.Err != nil {
		why = st.Err.Error()
	}
	d.metrics.setState(st.State, st.Generation)
	d.mu.Lock()
	// A refused incarnation or session is reported at once, even when the
	// state's name (stale) does not change; so is a new reason.
	key := name + incarnationKey(st)
	if d.multi != nil {
		// The combined state names one root only: a change of another
		// root's is a change of that root's status node.
		key += d.multi.stateKey()
	}
	changed := key != d.lastState || why != d.lastWhy
	d.lastState, d.lastWhy = key, why
	d.mu.Unlock()
	if changed {
		d.publishStatus()
	}
}

func (d *Daemon) publishStatus() {
	d.mu.Lock()
	fn := d.opts.OnStatus
	d.mu.Unlock()
	s := d.Status()
	if d.multi != nil {
		d.rootMetrics()
	}
	for _, n := range d.statuses {
		if n.root.Name == "" {
			n.node.update(d.nodeStatus(s))
		} else {
			n.node.update(d.nodeStatus(d.rootStatus(s, n.root)))
		}
	}
	if fn != nil {
		fn(s)
	}
}

// Plan waits for the live generation and returns what applying it would
// change, writing nothing.
func (d *Daemon) Plan(ctx context.Context) (Snapshot, []Change, error) {
	snap, err := d.waitLive(ctx)
	if err != nil {
		return nil, nil, err
	}
	ch, err := d.r.Plan(snap)
	return snap, ch, err
}

// Once waits for the live generation (not just the persisted one), applies
// it, and returns the apply's error: confagent --once.
func (d *Daemon) Once(ctx context.Context) (Outcome, error) {
	snap, err := d.waitLive(ctx)
	if err != nil {
		return Outcome{}, err
	}
	d.r.mu.Lock()
	d.r.oneShot = true
	d.r.mu.Unlock()
	out := d.r.Apply(ctx, snap)
	return out, out.Err
}

// waitLive waits until the cache is in sync with ZooKeeper and returns its
// snapshot. It gives up at once, with ErrUnreachable naming each server's
// cause, when every ZooKeeper server was tried and none gave a session;
// a root that does not exist (yet) or was never published is said at
// once, and waited for until ctx ends.
func (d *Daemon) waitLive(ctx context.Context) (Snapshot, error) {
	start := time.Now()
	said := ""
	cacheUpdates, rootsUpdates := d.updates()
	for {
		st := d.follow.State()
		if st.State == cache.StateLive {
			if s := d.current(); s != nil && d.complete(s) {
				return s, nil
			}
		}
		un, connC := d.unreachableNow()
		if un != "" {
			return nil, fmt.Errorf("%w: %s", ErrUnreachable, un)
		}
		if why := rootAbsent(st.Err, d.opts.Root); why != "" && why != said {
			said = why
			attrs := []any{"root", d.opts.Root}
			if dl, ok := ctx.Deadline(); ok {
				attrs = append(attrs, "waiting_up_to", time.Until(dl).Round(time.Second))
			}
			d.log.Warn(why+"; waiting for a first publish", attrs...)
		}
		select {
		case <-ctx.Done():
			// The wait the caller gave (its deadline), not the elapsed time:
			// on a busy host this goroutine wakes late, and "after waiting
			// 3.1s" for --timeout 3s reads like a miscounted timeout.
			waited := time.Since(start)
			if dl, ok := ctx.Deadline(); ok && dl.After(start) {
				waited = dl.Sub(start)
			}
			waited = waited.Round(100 * time.Millisecond)
			if why := rootAbsent(st.Err, d.opts.Root); why != "" {
				return nil, fmt.Errorf("%s: no generation to apply after waiting %v: %w", why, waited, ctx.Err())
			}
			reason := ""
			if st.Err != nil {
				reason = ": " + st.Err.Error()
			}
			return nil, fmt.Errorf("no live generation from ZooKeeper (state %v%s): %w", st.State, reason, ctx.Err())
		case <-d.follow.StateChanges():
		case <-cacheUpdates:
		case <-rootsUpdates:
		case <-connC:
		case <-d.follow.Done():
			return nil, errors.New("cache stopped")
		}
	}
}

// rootAbsent says why there is nothing to apply when err is the cache's
// "the root does not exist" or "never published", "" otherwise.
func rootAbsent(err error, root string) string {
	switch {
	case errors.Is(err, cache.ErrRootMissing):
		return fmt.Sprintf("root %s does not exist in ZooKeeper (yet)", root)
	case errors.Is(err, cache.ErrNotPublished):
		return fmt.Sprintf("root %s exists but was never published", root)
	}
	return ""
}

// complete reports whether snap has what every target reads: with several
// roots, a snapshot of each and a cut when a template reads several.
func (d *Daemon) complete(snap Snapshot) bool {
	for _, spec := range d.r.specs() {
		if _, err := viewFor(snap, spec); err != nil {
			return false
		}
	}
	return true
}

func (d *Daemon) staleSeconds() float64 {
	st := d.follow.State()
	if st.State == cache.StateLive {
		return 0
	}
	return time.Since(st.Since).Seconds()
}

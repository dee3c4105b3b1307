package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Cut is one snapshot of each root of a Group, keyed by the root's name,
// whose generations were all live (each the one its root named) at one
// moment. A Cut handed out is the receiver's: the group keeps its own copy.
type Cut map[string]*Snapshot

// Generations returns each root's generation, for logs and checks.
func (c Cut) Generations() map[string]int64 {
	g := make(map[string]int64, len(c))
	for name, s := range c {
		g[name] = s.Generation()
	}
	return g
}

// same reports whether c and d hold the same snapshots.
func (c Cut) same(d Cut) bool {
	return maps.Equal(c, d)
}

// Group follows several config roots on one ZooKeeper session and hands
// out cuts: one snapshot of each root, all live at one moment. Each root
// has a Cache of its own (never torn, never backwards, never lost, its own
// State); the group combines what they deliver and confirms, with one
// Exists per root that could have moved, that the combination was live
// together (the package documentation, "Cuts", says how and why). Its
// methods are safe for concurrent use.
type Group struct {
	names   []string // sorted
	roots   map[string]string
	members map[string]*Cache
	client  *zkclient.Client
	log     *slog.Logger
	// clock orders the members' root reads and the group's confirms
	// (witness).
	clock atomic.Uint64
	stats groupCounters

	mu      sync.Mutex
	cut     Cut           // the newest cut (the group's own copy), nil before the first
	cutWake chan struct{} // closed and replaced on every new cut
	updates chan Cut      // 1 slot, latest value

	// rootUpdates and stateChanges deliver each root's newest snapshot
	// and state (RootUpdates, StateChanges); rootMu orders their offers.
	rootMu       sync.Mutex
	rootUpdates  chan map[string]*Snapshot
	stateChanges chan map[string]StateInfo

	deliveries chan delivery
	cancel     context.CancelFunc
	done       chan struct{}
	loopDone   chan struct{}
	forwarders sync.WaitGroup
	closeOnce  sync.Once
}

// delivery is a member's new snapshot.
type delivery struct {
	name string
	snap *Snapshot
}

// rootName is what a group's root may be called: it appears in logs,
// metrics labels and configuration keys. Compiled at first use: the
// expression is large ({0,63}) and package initialisation runs at every
// start of every program linking the package (confpush among them).
var rootName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// NewGroup starts a group following roots (name → root path), one cache
// per root, all on one ZooKeeper session: the Client given with WithClient,
// or one the group dials (WithServers, WithConfig) and closes. The other
// options apply to every root's cache, then each root's WithRootOptions
// (a state file is per root only); WithOnUpdate is not taken (receive
// cuts from Updates). Names are 1-64 letters, digits,
// '_', '.' or '-', starting with a letter or digit; two names may not
// share a root. Every problem is reported at once and nothing is started
// then. ctx bounds NewGroup only. Use Wait for the first cut.
func NewGroup(ctx context.Context, roots map[string]string, opts ...Option) (*Group, error) {
	var errs []error
	if len(roots) == 0 {
		errs = append(errs, errors.New("cache: a group needs at least one root"))
	}
	names := slices.Sorted(maps.Keys(roots))
	byPath := make(map[string]string, len(roots))
	for _, name := range names {
		path := roots[name]
		if !rootName().MatchString(name) {
			errs = append(errs, fmt.Errorf("cache: group root name %q: want 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", name))
		}
		if err := layout.ValidateRoot(path); err != nil {
			errs = append(errs, fmt.Errorf("cache: group root %q: %w", name, err))
		} else if other, dup := byPath[path]; dup {
			errs = append(errs, fmt.Errorf("cache: group roots %q and %q are both %s: follow it once", other, name, path))
		} else {
			byPath[path] = name
		}
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			errs = append(errs, err)
		}
	}
	if o.cfg == nil && o.client == nil {
		errs = append(errs, errors.New("cache: no ZooKeeper given (WithServers, WithConfig or WithClient)"))
	}
	if o.stateFile != "" {
		errs = append(errs, errors.New("cache: a group takes WithStateFile per root only (WithRootOptions)"))
	}
	if o.onUpdate != nil {
		errs = append(errs, errors.New("cache: a group takes no WithOnUpdate (receive cuts from Updates)"))
	}
	member := make(map[string]options, len(names))
	for _, name := range slices.Sorted(maps.Keys(o.rootOpts)) {
		if _, ok := roots[name]; !ok {
			errs = append(errs, fmt.Errorf("cache: WithRootOptions names %q, which is not a root of the group", name))
		}
	}
	stateFiles := map[string]string{}
	for _, name := range names {
		mo, err := rootOptions(o, name)
		errs = append(errs, err...)
		member[name] = mo
		if other, dup := stateFiles[mo.stateFile]; dup && mo.stateFile != "" {
			errs = append(errs, fmt.Errorf("cache: roots %q and %q have the same state file %s", other, name, mo.stateFile))
		}
		stateFiles[mo.stateFile] = name
	}
	if err := errlist.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if o.log == nil {
		o.log = defaultLogger()
	}
	g := &Group{
		names:      names,
		roots:      maps.Clone(roots),
		members:    make(map[string]*Cache, len(roots)),
		log:        o.log.With("component", "cache-group"),
		cutWake:    make(chan struct{}),
		updates:    make(chan Cut, 1),
		deliveries: make(chan delivery),
		// One slot each, latest value: every value is complete (every
		// root's), so replacing a pending one loses nothing.
		rootUpdates:  make(chan map[string]*Snapshot, 1),
		stateChanges: make(chan map[string]StateInfo, 1),
		done:         make(chan struct{}),
		loopDone:     make(chan struct{}),
	}
	if o.client == nil {
		cfg := *o.cfg
		if cfg.Logger == nil {
			cfg.Logger = o.log
		}
		cl, err := zkclient.Dial(cfg)
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		o.client, o.cfg, o.groupOwned = cl, nil, true
	}
	g.client = o.client
	for _, name := range names {
		mo := member[name]
		mo.client, mo.cfg, mo.groupOwned, mo.clock = o.client, nil, o.groupOwned, &g.clock
		mo.log = cmp.Or(mo.log, o.log).With("root_name", name)
		c, err := start(roots[name], mo)
		if err != nil {
			g.closeMembers()
			if o.groupOwned {
				o.client.Close()
			}
			return nil, err
		}
		g.members[name] = c
	}
	runCtx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for _, name := range names {
		g.forwarders.Add(2)
		go g.forward(runCtx, name, g.members[name])
		go g.forwardStates(runCtx, g.members[name])
	}
	go g.run(runCtx)
	return g, nil
}

// WithRootOptions gives one root of a Group options of its own, applied
// after the group's: a state file (WithStateFile, which a group takes for
// one root only), canary labels, a logger, the incarnation policy, the
// resync settings. The connection is the group's: WithServers, WithConfig
// and WithClient are refused here, and so are WithOnUpdate and a nested
// WithRootOptions. New refuses it.
//
// A snapshot a root's cache loads from its state file is in a cut only
// once the group confirmed it against ZooKeeper (one Exists): state files
// written at different moments are not known to hold a cut.
func WithRootOptions(name string, opts ...Option) Option {
	return func(o *options) error {
		if o.rootOpts == nil {
			o.rootOpts = map[string][]Option{}
		}
		o.rootOpts[name] = append(o.rootOpts[name], opts...)
		return nil
	}
}

// rootOptions returns the options of the group's root name: the group's,
// then its WithRootOptions, and what is wrong with them.
func rootOptions(o options, name string) (options, []error) {
	mo := o
	mo.rootOpts, mo.stateFile, mo.log, mo.onUpdate = nil, "", nil, nil
	var errs []error
	for _, opt := range o.rootOpts[name] {
		if err := opt(&mo); err != nil {
			errs = append(errs, fmt.Errorf("cache: root %q: %w", name, err))
		}
	}
	if mo.cfg != o.cfg || mo.client != o.client {
		errs = append(errs, fmt.Errorf("cache: root %q: the connection is the group's (WithServers, WithConfig, WithClient)", name))
	}
	if mo.onUpdate != nil {
		errs = append(errs, fmt.Errorf("cache: root %q: a group takes no WithOnUpdate (receive cuts from Updates)", name))
	}
	if mo.rootOpts != nil {
		errs = append(errs, fmt.Errorf("cache: root %q: WithRootOptions inside WithRootOptions", name))
	}
	return mo, errs
}

// Roots returns the roots the group follows (name → path).
func (g *Group) Roots() map[string]string { return maps.Clone(g.roots) }

// Cut returns the newest cut, or nil before the first. It never waits and
// is a look only: it leaves Updates alone.
func (g *Group) Cut() Cut {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.cut)
}

// Updates delivers every cut that becomes the newest after the last Wait
// call, latest value only (one slot, like Cache.Updates): a slow reader
// gets the newest cut and never a backlog, and the group never waits for
// it. A cut Wait returned is not delivered again. With a single receiver,
// no root's generation ever goes back from one cut to the next (a switch
// of incarnation aside, as for Cache). It is never closed; select on Done
// as well.
func (g *Group) Updates() <-chan Cut { return g.updates }

// Done is closed when Close is called.
func (g *Group) Done() <-chan struct{} { return g.done }

// Wait returns the newest cut once, for every name in min, its snapshot's
// generation is at least min[name] (any cut when min is empty), waiting
// for it until ctx ends or the group is closed (ErrClosed). Updates does
// not deliver the cut it returns.
func (g *Group) Wait(ctx context.Context, min map[string]int64) (Cut, error) {
	for name := range min {
		if _, ok := g.roots[name]; !ok {
			return nil, fmt.Errorf("cache: wait: the group has no root %q", name)
		}
	}
	for {
		g.mu.Lock()
		wake := g.cutWake
		if g.cut != nil && reaches(g.cut, min) {
			c := g.handOut()
			g.mu.Unlock()
			return c, nil
		}
		g.mu.Unlock()
		select {
		case <-wake:
		case <-g.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("cache: waiting for a cut at generations %v (roots: %v): %w", min, g.describeStates(), ctx.Err())
		}
	}
}

func reaches(c Cut, min map[string]int64) bool {
	for name, gen := range min {
		if c[name].Generation() < gen {
			return false
		}
	}
	return true
}

// handOut returns a copy of the newest cut and takes it off Updates'
// pending slot. g.mu is held.
func (g *Group) handOut() Cut {
	select {
	case p := <-g.updates:
		if !p.same(g.cut) {
			g.updates <- p // cannot happen: a new cut replaces the slot under g.mu
		}
	default:
	}
	return maps.Clone(g.cut)
}

// Snapshots returns the newest snapshot of each root's cache (nil for a
// root without one yet): a look, like Cache.Snapshot. It is not a cut:
// use it for what reads one root only.
func (g *Group) Snapshots() map[string]*Snapshot {
	s := make(map[string]*Snapshot, len(g.members))
	for name, c := range g.members {
		s[name] = c.Snapshot()
	}
	return s
}

// States returns each root's cache state (name → state): why a root is
// not Live, and so why the cut may be behind.
func (g *Group) States() map[string]StateInfo {
	st := make(map[string]StateInfo, len(g.members))
	for name, c := range g.members {
		st[name] = c.State()
	}
	return st
}

func (g *Group) describeStates() string {
	var b []byte
	for _, name := range g.names {
		if len(b) > 0 {
			b = append(b, "; "...)
		}
		b = fmt.Appendf(b, "%s: %v", name, g.members[name].State())
	}
	return string(b)
}

// GroupStats are a group's counters since NewGroup. They only grow.
type GroupStats struct {
	// Cuts counts the cuts handed out.
	Cuts uint64
	// Confirms counts the Exists requests that confirm a root's
	// generation, and ConfirmReads the root reads (Get) that follow one
	// when the root's znode changed (a canary step, or a publish).
	Confirms, ConfirmReads uint64
	// Moved counts confirms that found a root at a newer generation than
	// its cache delivered: the cut waits for that root's next snapshot.
	Moved uint64
	// Syncs counts the Sync requests sent before the first confirm in a
	// new session.
	Syncs uint64
	// Errors counts failed confirms (connection loss included).
	Errors uint64
	// Roots are the stats of each root's cache.
	Roots map[string]Stats
}

type groupCounters struct {
	cuts, confirms, confirmReads, moved, syncs, errors atomic.Uint64
}

// Stats returns the group's counters and those of each root's cache.
func (g *Group) Stats() GroupStats {
	s := GroupStats{
		Cuts: g.stats.cuts.Load(), Confirms: g.stats.confirms.Load(), ConfirmReads: g.stats.confirmReads.Load(),
		Moved: g.stats.moved.Load(), Syncs: g.stats.syncs.Load(), Errors: g.stats.errors.Load(),
		Roots: make(map[string]Stats, len(g.members)),
	}
	for name, c := range g.members {
		s.Roots[name] = c.Stats()
	}
	return s
}

// Close stops the group and every root's cache; no goroutine of it
// outlives Close. A connection the group dialled is closed; one given with
// WithClient is not (as for Cache.Close). Close is idempotent.
func (g *Group) Close() error {
	g.closeOnce.Do(func() {
		close(g.done)
		g.cancel()
		g.closeMembers()
		g.forwarders.Wait()
		grace := time.NewTimer(closeGrace)
		defer grace.Stop()
		select {
		case <-g.loopDone:
		case <-grace.C:
			g.log.Warn("a confirm is still in flight on the application's connection; it ends when that connection answers or closes (no cut is handed out after Close)")
		}
	})
	return nil
}

// closeMembers stops every member's loop before any of them closes a
// connection the group dialled (which they share), then closes them.
func (g *Group) closeMembers() {
	for _, c := range g.members {
		c.cancel()
	}
	for _, c := range g.members {
		_ = c.Close()
	}
}

// forward passes member c's snapshots to the group's loop. The member
// never waits for it (Updates keeps the latest value).
func (g *Group) forward(ctx context.Context, name string, c *Cache) {
	defer g.forwarders.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-c.Updates():
			// What reads one root takes it at once, never waiting for a
			// confirm of the cut.
			g.rootMu.Lock()
			offer(g.rootUpdates, g.Snapshots())
			g.rootMu.Unlock()
			select {
			case g.deliveries <- delivery{name: name, snap: s}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// forwardStates offers every root's state whenever member c's changes.
func (g *Group) forwardStates(ctx context.Context, c *Cache) {
	defer g.forwarders.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.StateChanges():
			g.rootMu.Lock()
			offer(g.stateChanges, g.States())
			g.rootMu.Unlock()
		}
	}
}

// RootUpdates delivers the newest snapshot of each root (name → snapshot,
// nil for a root without one yet) whenever a root's cache has a new one,
// latest value only: for what reads one root and must not wait for a cut
// (a target of one root). Every value holds every root, so a slow reader
// loses nothing but intermediate generations, as with Cache.Updates; no
// root's snapshot goes back from one value to the next (a switch of
// incarnation aside). It is never closed; select on Done as well.
func (g *Group) RootUpdates() <-chan map[string]*Snapshot { return g.rootUpdates }

// StateChanges delivers every root's state (as States) whenever a root's
// cache state changes, latest value only. It is never closed; select on
// Done as well.
func (g *Group) StateChanges() <-chan map[string]StateInfo { return g.stateChanges }

// Adopt makes every root's cache follow the incarnation inc (Cache.Adopt):
// a ZooKeeper wiped or rebuilt holds every root anew.
func (g *Group) Adopt(inc string) error {
	var errs []error
	for _, name := range g.names {
		if err := g.members[name].Adopt(inc); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", name, err))
		}
	}
	return errlist.Join(errs...)
}

// witness is one request that saw a root at a generation: when it was
// sent and when its answer was back, on the group's clock. ZooKeeper
// serves one session's requests in order, so a request sent after
// another's answer came back was served after it (sequential
// consistency); the clock is how the group knows which requests are so
// ordered. Zero: none (a snapshot from a state file).
type witness struct {
	sent, answered uint64
}

func (w witness) none() bool { return w.sent == 0 }

// tick reads the group's clock (0 outside a group).
func (c *Cache) tick() uint64 {
	if c.opts.clock == nil {
		return 0
	}
	return c.opts.clock.Add(1)
}

// hold is what the group's loop knows of one root: the snapshot its cache
// delivered last, the latest request that saw it live (a witness), and
// the root znode's Mzxid then.
type hold struct {
	snap  *Snapshot
	w     witness
	mzxid int64
	// moved: a confirm found the root at another generation; the cut
	// waits for the root's cache to deliver its next snapshot.
	moved bool
}

// run is the group's loop: it takes the members' snapshots and hands out
// a cut whenever it can confirm one that differs from the last. It sends
// requests only with a session (a request queued without one would wait
// for it, or fail), and after a failed one only when its backoff ran out.
func (g *Group) run(ctx context.Context) {
	defer close(g.loopDone)
	holds := make(map[string]*hold, len(g.names))
	sess := g.client.Session()
	var (
		due    bool // the holds changed, or a confirm failed: evaluate
		retry  *time.Timer
		errs   int
		synced uint64 // the session epoch the group synced in (0: none)
	)
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		changed := sess.Changed()
		if due && retry == nil && sess.Status().Connected {
			due = false
			err := g.evaluate(ctx, holds, &synced)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				g.stats.errors.Add(1)
				errs++
				d := errBackoff.Delay(errs)
				g.log.Debug("confirming a cut failed; retrying", "err", err, "attempt", errs, "delay", d)
				retry, due = time.NewTimer(d), true
			default:
				errs = 0
			}
			continue
		}
		var retryC <-chan time.Time
		if retry != nil {
			retryC = retry.C
		}
		select {
		case <-ctx.Done():
			return
		case d := <-g.deliveries:
			g.receive(holds, d)
			due = true
			for more := true; more; { // take what else is ready: one evaluation for all
				select {
				case d := <-g.deliveries:
					g.receive(holds, d)
				default:
					more = false
				}
			}
		case <-retryC:
			retry = nil
		case <-changed:
		}
	}
}

// receive records a member's new snapshot; its root read is its witness.
func (g *Group) receive(holds map[string]*hold, d delivery) {
	holds[d.name] = &hold{snap: d.snap, w: d.snap.read, mzxid: d.snap.Zxid()}
}

// evaluate hands out the cut of the held snapshots if it can confirm that
// they were live at one moment. It returns nil when it handed one out or
// waits for a root's next snapshot, an error when a request failed.
//
// Each held snapshot was live when its witness was served. Let T be the
// latest of those moments. A root whose witness was certainly served
// before T (answered before the latest one was sent) and that a confirm
// sent after every witness was answered finds unchanged was live from its
// witness through the confirm, so at T: generations only grow, so a root
// that names the same generation at two moments named it in between. The
// root whose witness is T needs no confirm; when the clock cannot tell
// which is the latest (reads in flight together), every root is confirmed.
func (g *Group) evaluate(ctx context.Context, holds map[string]*hold, synced *uint64) error {
	for _, name := range g.names {
		if h := holds[name]; h == nil || h.moved {
			return nil // a root not delivered yet, or known to have moved
		}
	}
	// A snapshot without a witness gets one first.
	for _, name := range g.names {
		if h := holds[name]; h.w.none() {
			if ok, err := g.confirm(ctx, name, h, synced); !ok || err != nil {
				return err
			}
		}
	}
	latest := latestWitness(g.names, holds)
	for _, name := range g.names {
		if name == latest {
			continue
		}
		if ok, err := g.confirm(ctx, name, holds[name], synced); !ok || err != nil {
			return err
		}
	}
	cut := make(Cut, len(g.names))
	for _, name := range g.names {
		cut[name] = holds[name].snap
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cut.same(g.cut) {
		return nil
	}
	g.cut = cut
	close(g.cutWake)
	g.cutWake = make(chan struct{})
	offer(g.updates, maps.Clone(cut))
	g.stats.cuts.Add(1)
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("cut", "generations", cut.Generations())
	}
	return nil
}

// latestWitness returns the root whose witness was certainly served after
// every other's (sent after each other one was answered), or "" when the
// clock cannot tell.
func latestWitness(names []string, holds map[string]*hold) string {
	for _, m := range names {
		wm := holds[m].w
		latest := true
		for _, j := range names {
			if j != m && holds[j].w.answered >= wm.sent {
				latest = false
				break
			}
		}
		if latest {
			return m
		}
	}
	return ""
}

// confirm checks, with a request sent now (after every witness held was
// answered), that root name still names the held snapshot's generation:
// an Exists that finds the znode's Mzxid unchanged; else, when the znode
// changed without a new generation (a canary step), a Get whose manifest
// still names it. Either becomes the root's witness. A root found at
// another generation is marked moved (ok false, no error).
func (g *Group) confirm(ctx context.Context, name string, h *hold, synced *uint64) (bool, error) {
	path := g.roots[name]
	conn := g.client.Conn()
	if err := g.syncSession(ctx, conn, path, synced); err != nil {
		return false, err
	}
	w, mzxid, live, err := g.probe(ctx, conn, path, h)
	if err != nil {
		return false, fmt.Errorf("confirm %s: %w", path, err)
	}
	if g.client.Session().Status().Epoch != *synced {
		// The request may have been queued across a reconnect and served
		// in a session the group has not synced in: it proves nothing.
		return false, fmt.Errorf("confirm %s: the session changed meanwhile", path)
	}
	if !live {
		h.moved = true
		g.stats.moved.Add(1)
		g.log.Debug("a root moved while confirming a cut; waiting for its next snapshot", "root", name, "held_generation", h.snap.Generation())
		return false, nil
	}
	h.w, h.mzxid = w, mzxid
	return true, nil
}

// probe sends confirm's requests: whether path still names h's
// generation (live), and if so the witness and the znode's Mzxid.
func (g *Group) probe(ctx context.Context, conn *zk.Conn, path string, h *hold) (w witness, mzxid int64, live bool, err error) {
	var (
		exists bool
		stat   *zk.Stat
	)
	w, err = g.stamped(ctx, func() (err error) { exists, stat, err = conn.Exists(path); return err })
	g.stats.confirms.Add(1)
	switch {
	case err != nil:
		return w, 0, false, err
	case !exists:
		return w, 0, false, nil
	case stat.Mzxid == h.mzxid:
		return w, stat.Mzxid, true, nil
	}
	var data []byte
	w, err = g.stamped(ctx, func() (err error) { data, stat, err = conn.Get(path); return err })
	g.stats.confirmReads.Add(1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return w, 0, false, nil
	case err != nil:
		return w, 0, false, err
	}
	m, derr := manifest.Decode(data)
	return w, stat.Mzxid, derr == nil && names(h.snap, m), nil
}

// names reports whether the root's manifest m names held's generation: as
// its own, or as the candidate of the canary rollout it announces.
func names(held *Snapshot, m *manifest.Manifest) bool {
	if held.same(m) {
		return true
	}
	return held.Candidate() && m.Canary != nil && m.Canary.Generation == held.Generation() &&
		m.Incarnation == held.Incarnation()
}

// syncSession sends a Sync before the group's first confirm in every
// session epoch: a new session after an expiry may be served by a server
// behind what the old one saw, and a confirm must be served after every
// witness.
func (g *Group) syncSession(ctx context.Context, conn *zk.Conn, path string, synced *uint64) error {
	epoch := g.client.Session().Status().Epoch
	if epoch == *synced {
		return nil
	}
	err := call(ctx, func() error { _, err := conn.Sync(path); return err })
	g.stats.syncs.Add(1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	*synced = epoch
	return nil
}

// stamped runs fn, one blocking request, and returns its witness: the
// group's clock read before it is sent and after its answer.
func (g *Group) stamped(ctx context.Context, fn func() error) (witness, error) {
	var w witness
	err := call(ctx, func() error {
		w.sent = g.clock.Add(1)
		err := fn()
		w.answered = g.clock.Add(1)
		return err
	})
	return w, err
}

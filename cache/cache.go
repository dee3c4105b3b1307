package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// closeGrace bounds how long Close waits for requests still in flight on a
// connection the application owns (the cache cannot close it to end them).
const closeGrace = 10 * time.Second

// Cache follows one config root and serves never-torn snapshots of it. Its
// methods are safe for concurrent use.
type Cache struct {
	root    string
	paths   layout.Paths
	client  *zkclient.Client
	conn    *zk.Conn // client's current connection, taken by the loop before each cycle
	sess    *zkclient.Session
	ownConn bool // the cache dialled client and closes it
	opts    options
	log     *slog.Logger
	store   *stateStore // nil without WithStateFile; used by New, then the loop only
	// cycleStarted is when the loop's current cycle began, and verifyNanos
	// the time its item reads spent verifying (FetchTimings).
	cycleStarted time.Time
	verifyNanos  atomic.Int64
	// itemPath is paths.Item, made once: a method value of a struct
	// allocates where it is taken.
	itemPath func(name string) string
	// beforeItemRead, when set (tests only), runs before every item read,
	// on the goroutine that reads.
	beforeItemRead atomic.Pointer[func()]
	// noMultiRead: a server answered a multiRead ErrUnimplemented (older
	// than 3.6, which then also closes the connection); items are read
	// one request each from then on, whatever server the client reaches
	// next: asking again after every reconnect would cost a reconnect
	// each time on such a server. batchBytes, when set (tests only),
	// replaces multiReadBytes.
	noMultiRead atomic.Bool
	batchBytes  atomic.Int64

	snap    atomic.Pointer[Snapshot]
	updates chan *Snapshot // 1 slot, latest value
	states  chan StateInfo // 1 slot, latest value
	notify  chan *Snapshot // 1 slot, latest value, feeds OnUpdate
	adopt   chan string    // 1 slot, latest value: Adopt's requests
	// poke wakes the sync loop (1 slot): Close, Adopt, the resync timer
	// and the session's tracker (Session.Notify) each leave their reason
	// where the loop looks (ctx, adopt, resyncDue, the session's Status)
	// and poke, so that the loop waits on one channel for all four
	// instead of four: a select's cost grows with its channels, and a
	// fleet of caches in one process waits once per publish each.
	poke      chan struct{}
	resyncDue atomic.Bool  // the safety-net resync's period ran out
	resyncAt  atomic.Int64 // when it runs out (unix ns), restarted by every cycle
	stats     counters

	mu       sync.Mutex
	state    StateInfo
	snapWake chan struct{} // closed at the next applied snapshot; nil while no one waits (appliedWake)

	cancel    context.CancelFunc
	done      chan struct{} // closed by Close
	loopDone  chan struct{}
	inflight  sync.WaitGroup // fetch workers and the OnUpdate notifier
	closeOnce sync.Once
}

// New starts a cache of root. It loads the state file first (WithStateFile),
// so Snapshot may be non-nil at once, then follows the root in the
// background until Close. New does not wait for ZooKeeper: use Wait for the
// first snapshot and State or StateChanges for freshness. ctx bounds New
// only. Exactly one of WithServers, WithConfig or WithClient is required.
func New(ctx context.Context, root string, opts ...Option) (*Cache, error) {
	if err := layout.ValidateRoot(root); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.cfg == nil && o.client == nil {
		return nil, errors.New("cache: no ZooKeeper given (WithServers, WithConfig or WithClient)")
	}
	if o.rootOpts != nil {
		return nil, errors.New("cache: WithRootOptions is for NewGroup")
	}
	if o.log == nil {
		o.log = defaultLogger()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return start(root, o)
}

// start starts a cache of root with validated options (New, and a Group
// for each of its roots).
func start(root string, o options) (*Cache, error) {
	c := &Cache{
		root:     root,
		paths:    layout.New(root, o.meta),
		opts:     o,
		log:      o.log.With("component", "cache", "root", root),
		updates:  make(chan *Snapshot, 1),
		states:   make(chan StateInfo, 1),
		notify:   make(chan *Snapshot, 1),
		adopt:    make(chan string, 1),
		poke:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	c.itemPath = c.paths.Item
	c.state = StateInfo{State: StateStarting, Since: time.Now(), Err: ErrDisconnected}
	if o.stateFile != "" {
		c.store = newStateStore(o.stateFile, root)
		s, err := c.store.load()
		switch {
		case err != nil:
			c.log.Warn("ignoring the state file: starting without a persisted snapshot (ZooKeeper's is read in full)", "path", o.stateFile, "err", err)
		case s != nil:
			c.log.Info("loaded the persisted snapshot; serving it until synced with ZooKeeper",
				"path", o.stateFile, "generation", s.Generation(), "zxid", s.Zxid(), "items", s.Len())
			c.snap.Store(s)
			c.updates <- s
			c.state = StateInfo{State: StateStale, Since: time.Now(), Err: ErrNotSynced, Generation: s.Generation()}
			if c.store.legacy {
				c.convertState(s)
			}
		}
	}
	c.states <- c.state

	switch {
	case o.client != nil:
		c.client, c.ownConn = o.client, o.groupOwned
	default:
		cfg := *o.cfg
		if cfg.Logger == nil {
			cfg.Logger = o.log
		}
		cl, err := zkclient.Dial(cfg)
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		c.client, c.ownConn = cl, true
	}
	c.conn, c.sess = c.client.Conn(), c.client.Session()

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = func() {
		cancel()
		c.pokeLoop() // the loop waits on poke, not on runCtx
	}
	go c.run(runCtx)
	if o.onUpdate != nil {
		if s := c.snap.Load(); s != nil {
			c.notify <- s
		}
		c.inflight.Add(1)
		go c.notifier(runCtx)
	}
	return c, nil
}

// Root is the root this cache follows.
func (c *Cache) Root() string { return c.root }

// Snapshot returns the newest snapshot the cache holds, or nil before the
// first one (from the state file or ZooKeeper). It never waits for
// ZooKeeper, and it is a look only: it leaves Updates alone, so any
// goroutine may call it (a status page, a metric) without taking a
// snapshot away from the one that receives from Updates.
func (c *Cache) Snapshot() *Snapshot { return c.snap.Load() }

// handOut returns the current snapshot and takes it off Updates' pending
// slot, where it waits if no one received it yet: what Wait returned is
// not delivered again. c.mu is held: apply stores a snapshot and offers it
// under c.mu, so the slot holds the current snapshot or nothing.
func (c *Cache) handOut() *Snapshot {
	s := c.snap.Load()
	select {
	case p := <-c.updates:
		if p != s {
			c.updates <- p // cannot happen (see above); never lose a snapshot
		}
	default:
	}
	return s
}

// Updates delivers every snapshot that becomes the newest after the last
// Wait call, latest value only: the channel has one slot, a newer
// snapshot replaces one not yet received, so a slow reader gets the
// newest snapshot and never a backlog, and the cache never waits for it.
// A snapshot Wait returned is not delivered again, so a program that
// starts with Wait and then receives from Updates handles each generation
// once. Snapshot does not take from Updates: a loop that also reads
// Snapshot (to apply on a timer, say) may then receive that snapshot from
// Updates too, and must treat it as already seen. (The snapshot loaded
// from the state file is delivered at once, unless Wait took it.) With a single
// receiver, every snapshot delivered is newer than the previous one. It
// is never closed; select on Done as well.
func (c *Cache) Updates() <-chan *Snapshot { return c.updates }

// StateChanges delivers the state's transitions, latest value only (like
// Updates): a change of State, of Err (a new reason within Stale, say),
// of Expiries, or of the incarnation. A new generation alone is not a
// transition (Updates delivers it; State and the next transition carry
// its number). The first value, pending from New, is the initial state.
// It is never closed; select on Done as well.
func (c *Cache) StateChanges() <-chan StateInfo { return c.states }

// Done is closed when Close is called.
func (c *Cache) Done() <-chan struct{} { return c.done }

// State returns the current state.
func (c *Cache) State() StateInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats { return c.stats.snapshot() }

// Wait returns the newest snapshot once its generation is at least
// minGeneration (any snapshot when minGeneration <= 0), waiting for it until
// ctx ends or the cache is closed (ErrClosed). Updates does not deliver the
// snapshot it returns.
func (c *Cache) Wait(ctx context.Context, minGeneration int64) (*Snapshot, error) {
	for {
		c.mu.Lock()
		wake := c.appliedWake()
		if s := c.snap.Load(); s != nil && s.Generation() >= minGeneration {
			s = c.handOut()
			c.mu.Unlock()
			return s, nil
		}
		c.mu.Unlock()
		select {
		case <-wake:
		case <-c.done:
			return nil, ErrClosed
		case <-ctx.Done():
			st := c.State()
			return nil, fmt.Errorf("cache: waiting for generation %d (state %v: %v): %w", minGeneration, st.State, st.Err, ctx.Err())
		}
	}
}

// Adopt makes a cache with IncarnationRefuse follow the incarnation inc
// (32 hex digits) when the root holds it; with inc empty, the incarnation
// it refuses now, or, when it refuses none, whatever other incarnation its
// next read of the root finds (then the permission lapses). It is how an
// operator accepts a ZooKeeper that was wiped or rebuilt.
func (c *Cache) Adopt(inc string) error {
	if inc != "" && !manifest.ValidIncarnation(inc) {
		return fmt.Errorf("cache: adopt: %q is not an incarnation id (32 lower-case hex digits)", inc)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.adopt:
	default:
	}
	c.adopt <- inc
	c.pokeLoop()
	return nil
}

// pokeLoop wakes the sync loop, which then looks at what changed (see
// poke). It never blocks: a pending poke already wakes it.
func (c *Cache) pokeLoop() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// Close stops the cache; no goroutine of it outlives Close. A connection the
// cache dialled is closed; one given with WithClient is not (requests still in
// flight on it are waited for, up to a grace period; nothing is applied
// after Close either way). Close is idempotent and must not be called from
// the OnUpdate callback.
func (c *Cache) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.cancel()
		if c.ownConn {
			c.client.Close()
		}
		grace := time.NewTimer(closeGrace)
		defer grace.Stop()
		select {
		case <-c.loopDone:
		case <-grace.C:
			c.log.Warn("a ZooKeeper request is still in flight on the application's connection; it ends when that connection answers or closes (nothing is applied after Close)")
			return
		}
		waited := make(chan struct{})
		go func() { c.inflight.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-grace.C:
			c.log.Warn("a ZooKeeper request is still in flight on the application's connection; it ends when that connection answers or closes")
		}
	})
	return nil
}

// convertState writes s, loaded from a state in an older layout (a commit
// file naming a pack of bare contents, a file per item, or items inline),
// to a framed pack, and removes the old files. A failure is logged: the
// old state stays as it was until a write succeeds (a crash before the
// new commit point leaves it, after it the new one).
func (c *Cache) convertState(s *Snapshot) {
	if err := c.store.write(s); err != nil {
		c.log.Warn("could not convert the state file to the packed layout; the next write retries", "path", c.opts.stateFile, "err", err)
		return
	}
	c.log.Info("converted the state file to the packed layout", "path", c.opts.stateFile, "generation", s.Generation(), "removed_files", c.store.last.removedFiles)
}

// apply hands out s: it becomes Snapshot(), wakes Wait, replaces the
// pending Updates value and feeds OnUpdate, after persisting it; with
// WithDurableBarrier, while persisting it (Snapshot.Durable waits for the
// write).
func (c *Cache) apply(s *Snapshot) {
	if c.store == nil {
		c.handOutNew(s)
		return
	}
	// Persisted before anyone can see the snapshot, or before Durable
	// lets anyone show it: a consumer (confagent) may act on it at once,
	// and a crash right after must not restart from an older state file
	// and act on that (never backwards; found by the chaos suite killing
	// an agent just after an apply).
	s.durable = newDurability()
	if c.opts.durableBarrier {
		c.handOutNew(s)
	}
	committed := c.persist(s)
	if !c.opts.durableBarrier {
		c.handOutNew(s)
	}
	if committed {
		if err := c.store.cleanup(); err != nil {
			c.log.Debug("state file cleanup stopped", "err", err)
		}
	}
}

// persist writes s's state up to its commit point and finishes s's
// durability: nil once the state holds s, or once the older state is
// removed after a failed write. It reports whether the write committed
// (the store's cleanup is then due).
func (c *Cache) persist(s *Snapshot) bool {
	persistStart := time.Now()
	err := c.store.commit(s)
	if err == nil {
		s.durable.finish(nil, time.Since(persistStart))
		return true
	}
	c.stats.persistErrors.Add(1)
	// A full disk (or any write error) must not leave an older generation
	// behind as the restart state: a crash after this hand-out would
	// restart from it and act on it (backwards). Without a state file a
	// restart waits for ZooKeeper instead. Removing a file works on a
	// full disk.
	var derr error
	if rerr := c.store.retract(); rerr != nil {
		c.log.Error("could not persist the snapshot nor remove the older persisted one: a restart before the next successful write would start from an older generation",
			"path", c.opts.stateFile, "generation", s.Generation(), "err", err, "remove_err", rerr)
		derr = fmt.Errorf("%w: generation %d: %w; removing the older state: %w", ErrNotPersisted, s.Generation(), err, rerr)
	} else {
		c.log.Warn("could not persist the snapshot; removed the older persisted one (a restart before the next successful write waits for ZooKeeper)",
			"path", c.opts.stateFile, "generation", s.Generation(), "err", err)
	}
	s.durable.finish(derr, time.Since(persistStart))
	return false
}

// appliedWake returns a channel closed when the next snapshot is applied.
// c.mu is held. It is made here, for a waiter, not at every apply: a
// cache without waiters (most of them, most of the time) then makes and
// closes no channel per publish.
func (c *Cache) appliedWake() <-chan struct{} {
	if c.snapWake == nil {
		c.snapWake = make(chan struct{})
	}
	return c.snapWake
}

// handOutNew makes s the newest snapshot: Snapshot(), Wait, Updates and
// OnUpdate.
func (c *Cache) handOutNew(s *Snapshot) {
	c.stats.applied.Add(1)
	c.stats.lastApply.Store(time.Now().UnixNano())
	// Stored and offered under c.mu, which Wait holds to take the
	// snapshot it returns off the Updates slot (handOut).
	c.mu.Lock()
	c.snap.Store(s)
	c.state.Generation, c.state.Incarnation = s.Generation(), s.Incarnation()
	if c.snapWake != nil {
		close(c.snapWake)
		c.snapWake = nil
	}
	offer(c.updates, s)
	c.mu.Unlock()
	if c.opts.onUpdate != nil {
		offer(c.notify, s)
	}
}

// offer puts v in a one-slot channel, replacing a value not yet received.
// Only the cache's own goroutine sends, so it never blocks.
func offer[T any](ch chan T, v T) {
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- v:
	default:
	}
}

// setState records a state transition (or a new Err or generation within
// the state) and publishes it on StateChanges when anything changed.
func (c *Cache) setState(st State, err error) {
	c.mu.Lock()
	prev := c.state
	next := prev
	next.State, next.Err = st, err
	if s := c.snap.Load(); s != nil {
		next.Generation, next.Incarnation = s.Generation(), s.Incarnation()
	}
	next.Expiries = c.stats.expiries.Load()
	next.IncarnationSwitches = c.stats.incarnationSwitches.Load()
	// A new generation alone is kept (State reports it) but is no
	// transition: Updates delivers it, and a live cache would otherwise
	// report live -> live at every publish.
	if prev.State == st && sameErr(prev.Err, err) && prev.Expiries == next.Expiries &&
		prev.Incarnation == next.Incarnation && prev.IncarnationSwitches == next.IncarnationSwitches {
		c.state = next
		c.mu.Unlock()
		return
	}
	if prev.State != st {
		next.Since = time.Now()
	}
	c.state = next
	c.mu.Unlock()
	offer(c.states, next)
	if prev.State != st {
		attrs := []any{"from", prev.State.String(), "to", st.String(), "generation", next.Generation}
		if err != nil {
			attrs = append(attrs, "reason", err)
		}
		c.log.Info("cache state", attrs...)
	}
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.Error() == b.Error()
}

// notifier runs the OnUpdate callback off the cache's goroutine.
func (c *Cache) notifier(ctx context.Context) {
	defer c.inflight.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-c.notify:
			c.opts.onUpdate(s)
		}
	}
}

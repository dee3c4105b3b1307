package cache

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/zkclient"
)

// Retry delays of the sync loop.
var (
	// tornFast bounds the wait before re-reading after a torn read; after
	// tornPatience consecutive torn reads tornSlow takes over.
	tornFast = backoff.Policy{Base: 10 * time.Millisecond, Max: 2 * time.Second}
	tornSlow = backoff.Policy{Base: 2 * time.Second, Max: 30 * time.Second}
	// errBackoff bounds the wait after a failed request.
	errBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 10 * time.Second}
)

const (
	// tornPatience is how many torn reads in a row are retried quickly.
	tornPatience = 20
	// tornReport is from which torn read in a row the state names the item.
	tornReport = 5
	// permRetry is how often a cache without permission to read re-checks.
	permRetry = 30 * time.Second
	// refusedReport is how long handshakes must have failed before the
	// state says ErrRefused.
	refusedReport = 10 * time.Second
)

// tornDelay is the wait before the next read after attempt torn reads in a
// row.
func tornDelay(attempt int) time.Duration {
	if attempt > tornPatience {
		return tornSlow.Delay(attempt - tornPatience)
	}
	return tornFast.Delay(attempt)
}

// jittered returns d ± 10%.
func jittered(d time.Duration) time.Duration {
	j := d / 10
	if j <= 0 {
		return d
	}
	return d - j + rand.N(2*j+1)
}

// errAgain asks the loop to run another cycle at once (the root appeared
// between two reads).
var errAgain = errors.New("cache: root changed between reads")

// watchSet holds the armed one-shot watches. A nil channel is not armed.
type watchSet struct {
	// root is the data watch on the root (from GetW), or the exists watch
	// while the root does not exist (from ExistsW).
	root <-chan zk.Event
	// marker is the data watch on the marker while one exists (from GetW,
	// which arms nothing when the node is missing).
	marker <-chan zk.Event
	// liveness is the exists watch on the liveness node of the publish a
	// marker names, while the cache waits for that publish: it fires when
	// the publisher goes away and leaves its marker behind.
	liveness <-chan zk.Event
}

// loopState is the sync loop's private state.
type loopState struct {
	epoch     uint64 // session epoch last synced in (0: none yet)
	expiries  uint64 // session expiries already handled
	unmatched uint64 // expiries seen on watch channels before the tracker counted them
	replaced  uint64 // connection replacements already reported
	due       bool   // a cycle is due (a watch fired, a session changed, a retry)
	needSync  bool   // Sync before the next read (new session or reconnect)
	full      bool   // next cycle is a full resync: check the marker regardless
	// markerAbsentCversion is the root's cversion at which the marker was
	// seen absent (-1: unknown), and markerAbsentCzxid the root's creation
	// zxid then. While the same root znode's cversion is unchanged no child
	// was created or deleted, so the marker is still absent.
	markerAbsentCversion int32
	markerAbsentCzxid    int64
	torn                 int    // consecutive torn reads
	errs                 int    // consecutive failed cycles
	connClosed           bool   // the application closed its connection: idle until Close
	lastWait             string // last waiting condition logged
	// refused is the incarnation refused by the last read (IncarnationRefuse);
	// adopted the one the application adopted; adoptAny adopts whichever
	// other incarnation the next read finds.
	refused, adopted string
	adoptAny         bool
	watches          watchSet
	// retry is the pending retry or jitter delay (nil: none): a due cycle
	// waits for it.
	retry *time.Timer
	// resync is the safety-net resync's timer (nil: disabled): it fires
	// at c.resyncAt, which every cycle moves (restartResync), and pokes
	// the loop.
	resync *time.Timer
}

func (loop *loopState) setRetry(d time.Duration) {
	loop.clearRetry()
	loop.retry = time.NewTimer(d)
}

func (loop *loopState) clearRetry() {
	if loop.retry != nil {
		loop.retry.Stop()
		loop.retry = nil
	}
}

// settle records a cycle that ended without fetching anything: the resync
// is complete, no torn read is pending, and the marker and liveness watches
// are no longer waited for.
func (loop *loopState) settle() {
	loop.watches.marker, loop.watches.liveness = nil, nil
	loop.full, loop.torn = false, 0
}

// run is the cache's single sync loop. Each turn it takes the session's
// status, runs one cycle when one is due and no retry delay is pending,
// and otherwise waits for the next event. It never blocks on a consumer:
// it only offers values to one-slot channels.
func (c *Cache) run(ctx context.Context) {
	defer close(c.loopDone)
	// Every change of the session pokes the loop: registered before the
	// first Status, so no change after it goes unnoticed.
	defer c.sess.Notify(c.poke)()
	initial := c.sess.Status()
	loop := &loopState{due: true, needSync: true, full: true, markerAbsentCversion: -1,
		expiries: initial.Expiries, replaced: initial.Replaced}
	if c.opts.resync > 0 {
		c.restartResync(loop)
		// Created stopped and started once the callback can see it.
		var t *time.Timer
		t = time.AfterFunc(time.Duration(math.MaxInt64), func() { c.onResyncTimer(t) })
		t.Reset(jittered(c.opts.resync))
		loop.resync = t
		defer t.Stop()
	}
	defer loop.clearRetry()

	for ctx.Err() == nil {
		st := c.sess.Status()
		if conn := c.client.Conn(); conn != c.conn {
			c.conn = conn // the Client replaced it (refused session)
		}
		if c.checkExpiry(loop, st) {
			loop.due = true
		}
		if loop.connClosed {
			<-ctx.Done()
			return
		}
		if !st.Connected {
			c.onDisconnected(loop, st)
		} else {
			if st.Epoch != loop.epoch {
				c.onSession(loop, st.Epoch)
			}
			if loop.due && loop.retry == nil {
				c.step(ctx, loop)
				if loop.due {
					continue
				}
				// Nothing due: wait at once, without taking the
				// session's status again (once per publish). The
				// session was connected when this turn began; a
				// change since left a wake-up in poke (Notify), so
				// the wait returns at once and the next turn sees it.
			}
		}
		c.wait(ctx, loop, st.Connected)
	}
}

// wait blocks until something may change what the loop does: the context
// ends, the session changes, or a watch fires; with a session also the
// retry timer, an Adopt request or the safety-net resync. The session's
// changes (Session.Notify), the last two, and Close come through c.poke:
// with the root's watch, two channels to wait on per publish. What Adopt
// and the resync ask is taken here, at the next wait with a session (so
// an Adopt while disconnected waits for one).
func (c *Cache) wait(ctx context.Context, loop *loopState, connected bool) {
	var retryC <-chan time.Time
	if connected {
		select {
		case inc := <-c.adopt:
			c.onAdopt(loop, inc)
			loop.full, loop.due = true, true
			return
		default:
		}
		// Loaded first: a swap writes the cache line at every wait.
		if c.resyncDue.Load() && c.resyncDue.Swap(false) {
			c.stats.resyncs.Add(1)
			loop.full, loop.due = true, true
			c.restartResync(loop)
			loop.resync.Reset(jittered(c.opts.resync))
			return
		}
		if loop.retry != nil {
			retryC = loop.retry.C
		}
	}
	if ctx.Err() != nil {
		return
	}
	select {
	case <-c.poke:
	case ev, ok := <-loop.watches.root:
		loop.watches.root = nil
		c.onWatch(loop, ev, ok)
	case ev, ok := <-loop.watches.marker:
		loop.watches.marker = nil
		c.onWatch(loop, ev, ok)
	case ev, ok := <-loop.watches.liveness:
		loop.watches.liveness = nil
		c.onWatch(loop, ev, ok)
	case <-retryC:
		loop.retry = nil
	}
}

// onResyncTimer runs on the resync timer's goroutine when it fires: it
// re-arms the timer when a cycle moved the period's end since, and
// otherwise marks the resync due and wakes the loop.
func (c *Cache) onResyncTimer(t *time.Timer) {
	select {
	case <-c.done:
		return // closed: nothing re-arms
	default:
	}
	if d := time.Until(time.Unix(0, c.resyncAt.Load())); d > 0 {
		t.Reset(d)
		return
	}
	c.resyncDue.Store(true)
	c.pokeLoop()
}

// step runs one cycle and schedules what follows it: a retry after a torn
// read or a failure, another cycle at once when the root changed between
// reads. Every cycle restarts the safety-net resync's period.
func (c *Cache) step(ctx context.Context, loop *loopState) {
	loop.due = false
	err := c.cycle(ctx, loop)
	switch {
	case ctx.Err() != nil:
		return
	case err == nil:
		loop.errs = 0
		if loop.torn > 0 {
			loop.setRetry(tornDelay(loop.torn))
			loop.due = true
		}
	case errors.Is(err, errAgain):
		loop.due = true
	default:
		c.onCycleError(loop, err)
	}
	c.restartResync(loop)
}

// onCycleError counts a failed cycle and schedules the retry.
func (c *Cache) onCycleError(loop *loopState, err error) {
	c.stats.errors.Add(1)
	loop.errs++
	loop.due = true
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		// A permission problem (a wrong password looks the same: digest
		// auth never fails, access does). Not a connection problem, so no
		// reconnect: report it clearly and re-check slowly, so that an ACL
		// repaired by the operator is picked up without a restart.
		err = zkclient.Explain(err, c.root, zkclient.OpRead)
		if loop.errs == 1 {
			c.log.Error("no permission to read the root", "err", err)
		}
		c.waiting(loop, err)
		loop.setRetry(permRetry)
	case zkclient.IsRecoverable(err) || zkclient.IsFatal(err):
		// The session tracker reports the disconnect or expiry (it does so
		// before the client fails the requests); the retry timer only
		// keeps the loop from spinning if not.
		c.log.Debug("read interrupted by a connection change", "err", err)
		loop.setRetry(errBackoff.Delay(loop.errs))
	default:
		c.log.Warn("reading the root failed; retrying", "err", err, "attempt", loop.errs)
		c.waiting(loop, err)
		loop.setRetry(errBackoff.Delay(loop.errs))
	}
}

// restartResync starts the safety-net resync's period over: the timer
// is not reset at every cycle (a reset costs more than a store), it finds
// the new end when it fires.
func (c *Cache) restartResync(_ *loopState) {
	if c.opts.resync > 0 {
		c.resyncAt.Store(time.Now().Add(jittered(c.opts.resync)).UnixNano())
	}
}

// waiting records that the cache cannot go Live for reason err: Stale with
// a snapshot, Starting without one. Each new reason is logged once.
func (c *Cache) waiting(loop *loopState, err error) {
	if c.snap.Load() == nil {
		c.setState(StateStarting, err)
	} else {
		c.setState(StateStale, err)
	}
	if msg := err.Error(); msg != loop.lastWait {
		loop.lastWait = msg
		if s := c.snap.Load(); s != nil {
			c.log.Warn("not in sync with ZooKeeper; serving the held snapshot", "reason", err, "generation", s.Generation())
		} else {
			// Never claim a snapshot the cache does not hold.
			c.log.Warn("not in sync with ZooKeeper; no snapshot to serve yet", "reason", err)
		}
	}
}

func (c *Cache) live(loop *loopState) {
	loop.lastWait = ""
	c.setState(StateLive, nil)
}

// call runs fn, a blocking client call, on the caller's goroutine (no
// goroutine and channel per request: every cache makes a few requests per
// notification), and returns ctx's error when ctx ended meanwhile. Close
// cancels ctx and, on a connection the cache owns, closes it, which ends a
// request at once; on the application's connection it waits for the
// request up to a grace period, as it does for the fetch workers.
func (c *Cache) call(ctx context.Context, fn func() error) error { return call(ctx, fn) }

// call is Cache.call, for the Group's requests as well.
func call(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := fn()
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

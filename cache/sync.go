package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/zkconn"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Backoff bounds.
const (
	// tornBase and tornCap bound the wait before re-reading after a torn
	// read; after tornPatience consecutive torn reads the cap grows to
	// tornSlowCap and the state says ErrTorn.
	tornBase     = 10 * time.Millisecond
	tornCap      = 2 * time.Second
	tornSlowCap  = 30 * time.Second
	tornPatience = 20
	tornReport   = 5
	// errBase and errCap bound the wait after a failed request.
	errBase = 100 * time.Millisecond
	errCap  = 10 * time.Second
)

// errAgain asks the loop to run another cycle at once (the root appeared
// between two reads).
var errAgain = errors.New("cache: root changed between reads")

// errMismatch marks an item whose content does not match the manifest.
var errMismatch = errors.New("item does not match the manifest")

// errAborted marks an item read skipped because another read of the same
// attempt already failed.
var errAborted = errors.New("item read abandoned")

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
	needSync  bool   // Sync before the next read (new session or reconnect)
	full      bool   // next cycle is a full resync: check the marker regardless
	// noMarker is the root's cversion at which the marker was seen absent
	// (-1: unknown), and noMarkerCzxid the root's creation zxid then. While
	// the same root znode's cversion is unchanged no child was created or
	// deleted, so the marker is still absent.
	noMarker      int32
	noMarkerCzxid int64
	torn          int // consecutive torn reads
	errs          int // consecutive failed cycles
	connClosed    bool
	lastWait      string // last waiting condition logged
	// refused is the incarnation refused by the last read (IncarnationRefuse);
	// adopted the one the application adopted; adoptAny adopts whichever
	// other incarnation the next read finds.
	refused, adopted string
	adoptAny         bool
	replaced         uint64 // connection replacements already reported
	w                watchSet
}

// run is the cache's single sync loop. It never blocks on a consumer: it
// only offers values to one-slot channels.
func (c *Cache) run(ctx context.Context) {
	defer close(c.loopDone)
	ls := &loopState{needSync: true, full: true, noMarker: -1}
	ls.expiries = c.sess.Status().Expiries
	ls.replaced = c.sess.Status().Replaced

	var retry *time.Timer // pending retry or jitter delay; cycles wait for it
	var retryC <-chan time.Time
	setRetry := func(d time.Duration) {
		if retry != nil {
			retry.Stop()
		}
		retry = time.NewTimer(d)
		retryC = retry.C
	}
	clearRetry := func() {
		if retry != nil {
			retry.Stop()
		}
		retry, retryC = nil, nil
	}
	defer clearRetry()

	var resyncC <-chan time.Time
	var resync *time.Timer
	if c.opts.resync > 0 {
		resync = time.NewTimer(jittered(c.opts.resync))
		defer resync.Stop()
		resyncC = resync.C
	}

	dirty := true
	for ctx.Err() == nil {
		changed := c.sess.Changed()
		st := c.sess.Status()
		if conn := c.client.Conn(); conn != c.conn {
			c.conn = conn // the Client replaced it (refused session)
		}
		if c.checkExpiry(ls, st) {
			dirty = true
		}
		if ls.connClosed {
			<-ctx.Done()
			return
		}
		if !st.Connected {
			c.onDisconnected(ls, st)
			select {
			case <-ctx.Done():
			case <-changed:
			case ev, ok := <-ls.w.root:
				ls.w.root = nil
				dirty = c.onWatch(ls, ev, ok) || dirty
			case ev, ok := <-ls.w.marker:
				ls.w.marker = nil
				dirty = c.onWatch(ls, ev, ok) || dirty
			case ev, ok := <-ls.w.liveness:
				ls.w.liveness = nil
				dirty = c.onWatch(ls, ev, ok) || dirty
			}
			continue
		}
		if st.Epoch != ls.epoch {
			first := ls.epoch == 0
			ls.epoch, ls.needSync, ls.full, dirty = st.Epoch, true, true, true
			clearRetry()
			if !first {
				if c.State().State == StateLive {
					c.setState(StateStale, ErrResyncing)
				}
				c.stats.reconnects.Add(1)
				c.stats.resyncs.Add(1)
				delay := time.Duration(0)
				if c.opts.jitter > 0 {
					delay = rand.N(c.opts.jitter)
					setRetry(delay)
				}
				c.log.Info("reconnected to ZooKeeper; resyncing", "server", c.conn.Server(), "delay", delay)
			}
		}
		if dirty && retry == nil {
			dirty = false
			err := c.cycle(ctx, ls)
			switch {
			case ctx.Err() != nil:
				return
			case err == nil:
				ls.errs = 0
				if ls.torn > 0 {
					setRetry(tornBackoff(ls.torn))
					dirty = true
				}
			case errors.Is(err, errAgain):
				dirty = true
			default:
				c.stats.errors.Add(1)
				ls.errs++
				dirty = true
				if errors.Is(err, zk.ErrNoAuth) {
					// A permission problem (a wrong password looks the same:
					// digest auth never fails, access does). Not a
					// connection problem, so no reconnect: report it
					// clearly and re-check slowly, so that an ACL repaired
					// by the operator is picked up without a restart.
					err = access.Explain(err, c.root, access.OpRead)
					if ls.errs == 1 {
						c.log.Error("no permission to read the root", "err", err)
					}
					c.waiting(ls, err)
					setRetry(permRetry)
					if resync != nil {
						resync.Reset(jittered(c.opts.resync))
					}
					continue
				}
				if zkconn.IsRecoverable(err) || zkconn.IsFatal(err) {
					// The session tracker reports the disconnect or expiry
					// (it does so before the client fails the requests); the
					// retry timer only keeps the loop from spinning if not.
					c.log.Debug("read interrupted by a connection change", "err", err)
				} else {
					c.log.Warn("reading the root failed; retrying", "err", err, "attempt", ls.errs)
					c.waiting(ls, err)
				}
				setRetry(backoff(errBase, errCap, ls.errs))
			}
			if resync != nil {
				resync.Reset(jittered(c.opts.resync))
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case ev, ok := <-ls.w.root:
			ls.w.root = nil
			dirty = c.onWatch(ls, ev, ok) || dirty
		case ev, ok := <-ls.w.marker:
			ls.w.marker = nil
			dirty = c.onWatch(ls, ev, ok) || dirty
		case ev, ok := <-ls.w.liveness:
			ls.w.liveness = nil
			dirty = c.onWatch(ls, ev, ok) || dirty
		case <-retryC:
			retry, retryC = nil, nil
		case inc := <-c.adopt:
			c.onAdopt(ls, inc)
			ls.full, dirty = true, true
		case <-resyncC:
			c.stats.resyncs.Add(1)
			ls.full, dirty = true, true
			resync.Reset(jittered(c.opts.resync))
		}
	}
}

// onWatch handles an event from one of the one-shot watch channels (the
// caller has disarmed it) and reports whether a cycle is due. A closed
// channel is never read twice: the caller set it to nil.
func (c *Cache) onWatch(ls *loopState, ev zk.Event, ok bool) bool {
	if !ok {
		return false
	}
	if ev.Type != zk.EventNotWatching {
		return true
	}
	switch {
	case errors.Is(ev.Err, zk.ErrSessionExpired):
		if c.sess.Status().Expiries == ls.expiries {
			// The tracker has not counted this expiry (yet): count it here
			// and let checkExpiry absorb the tracker's increment.
			ls.unmatched++
			c.onExpiry(ls, 1)
		}
		return true
	case errors.Is(ev.Err, zk.ErrClosing):
		if !c.client.Redials() || c.client.Closed() {
			ls.connClosed = true
			c.waiting(ls, ErrConnClosed)
			c.log.Error("the application closed the ZooKeeper connection under the cache; it serves its last snapshot until Close")
		}
		return false
	default:
		return true
	}
}

// checkExpiry notices expiries counted by the session tracker.
func (c *Cache) checkExpiry(ls *loopState, st zkclient.Status) bool {
	if st.Expiries == ls.expiries {
		return false
	}
	d := st.Expiries - ls.expiries
	ls.expiries = st.Expiries
	absorbed := min(d, ls.unmatched)
	ls.unmatched -= absorbed
	if d -= absorbed; d > 0 {
		c.onExpiry(ls, d)
	}
	return true
}

// onExpiry reports a session expiry: every watch is gone and the next
// session starts from a Sync and a full resync.
func (c *Cache) onExpiry(ls *loopState, n uint64) {
	c.stats.expiries.Add(n)
	ls.needSync, ls.full, ls.noMarker = true, true, -1
	ls.w = watchSet{}
	ls.lastWait = ""
	c.setState(StateExpired, fmt.Errorf("%w (%w)", ErrSessionExpired, zk.ErrSessionExpired))
	if r := c.sess.Status().Replaced; r != ls.replaced {
		ls.replaced = r
		c.log.Warn("the ZooKeeper connection was replaced (the servers refused its session): serving the last snapshot and resyncing on the new session")
		return
	}
	if c.ownConn {
		c.log.Warn("ZooKeeper session expired; serving the last snapshot and resyncing on a new session")
	} else {
		c.log.Warn("ZooKeeper session of the application's connection expired; the cache resyncs on the client's new session, everything else tied to the old session is the application's to handle")
	}
}

// onDisconnected reports a lost session (state Stale, or still Expired or
// Starting).
func (c *Cache) onDisconnected(ls *loopState, st zkclient.Status) {
	err := ErrDisconnected
	if st.State == zk.StateAuthFailed {
		err = fmt.Errorf("%w: %w", ErrDisconnected, zkclient.ErrAuthFailed)
	}
	if st.Refused(2, refusedReport) {
		// A Client replaces the connection itself (its bound is the
		// session timeout); WithConn's owner has to.
		err = fmt.Errorf("%w (%d handshakes closed in %v)", ErrRefused, st.HandshakeFailures, time.Since(st.FailingSince).Round(time.Second))
		if ls.lastWait != ErrRefused.Error() {
			ls.lastWait = ErrRefused.Error()
			c.log.Error("ZooKeeper closes every session handshake of this connection: a server wiped or rebuilt on the same address refuses a client that has seen a newer zxid", "owner_redials", c.client.Redials(), "err", err)
		}
	}
	switch c.State().State {
	case StateExpired:
		// Stays Expired until the resync on the new session.
	case StateStarting:
		c.setState(StateStarting, err)
	default:
		c.setState(StateStale, err)
	}
}

// waiting records that the cache cannot go Live for reason err: Stale with
// a snapshot, Starting without one. Each new reason is logged once.
func (c *Cache) waiting(ls *loopState, err error) {
	if c.snap.Load() == nil {
		c.setState(StateStarting, err)
	} else {
		c.setState(StateStale, err)
	}
	if msg := err.Error(); msg != ls.lastWait {
		ls.lastWait = msg
		c.log.Warn("not in sync with ZooKeeper; serving the held snapshot", "reason", err, "generation", c.State().Generation)
	}
}

func (c *Cache) live(ls *loopState) {
	ls.lastWait = ""
	c.setState(StateLive, nil)
}

// cycle reads the root once and, when it names a newer generation, fetches
// and applies it. It returns nil when the cache is in sync or waiting for a
// watch (the state says which); ls.torn > 0 asks for a retry after backoff.
func (c *Cache) cycle(ctx context.Context, ls *loopState) error {
	full := ls.full
	if ls.needSync {
		err := c.call(ctx, func() error { _, err := c.conn.Sync(c.root); return err })
		c.stats.requests.Add(1)
		c.stats.syncs.Add(1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("sync %s: %w", c.root, err)
		}
		ls.needSync = false
	}

	var (
		data []byte
		stat *zk.Stat
		rw   <-chan zk.Event
	)
	err := c.call(ctx, func() (err error) { data, stat, rw, err = c.conn.GetW(c.root); return err })
	c.stats.requests.Add(1)
	c.stats.rootReads.Add(1)
	if errors.Is(err, zk.ErrNoNode) {
		var exists bool
		var ew <-chan zk.Event
		err := c.call(ctx, func() (err error) { exists, _, ew, err = c.conn.ExistsW(c.root); return err })
		c.stats.requests.Add(1)
		if err != nil {
			return fmt.Errorf("watch for %s: %w", c.root, err)
		}
		ls.w = watchSet{root: ew}
		ls.noMarker = -1
		if exists {
			return errAgain
		}
		ls.full, ls.torn = false, 0
		c.waiting(ls, ErrRootMissing)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", c.root, err)
	}
	ls.w.root = rw

	m, err := manifest.Decode(data)
	if err != nil {
		ls.w.marker, ls.w.liveness = nil, nil
		ls.full, ls.torn = false, 0
		if errors.Is(err, manifest.ErrEmpty) {
			c.waiting(ls, ErrNotPublished)
			return nil
		}
		err = fmt.Errorf("cache: root %s: %w", c.root, err)
		if ls.lastWait != err.Error() {
			c.log.Error("the root does not hold a manifest this zkconf can read; keeping the held snapshot", "err", err)
		}
		c.waiting(ls, err)
		return nil
	}

	cur := c.snap.Load()
	switching := false
	if cur != nil {
		if cur.same(m) {
			ls.w.marker, ls.w.liveness = nil, nil
			ls.full, ls.torn = false, 0
			ls.adoptAny, ls.refused = false, ""
			c.live(ls)
			return nil
		}
		if !cur.sameIncarnation(&incView{inc: m.Incarnation, gen: m.Generation, zxid: stat.Mzxid}) {
			if refuse := c.checkSwitch(ls, cur, m, stat.Mzxid); refuse != nil {
				ls.w.marker, ls.w.liveness = nil, nil
				ls.full, ls.torn = false, 0
				c.waiting(ls, refuse)
				return nil
			}
			switching = true
		} else if !cur.supersededBy(m.Generation, stat.Mzxid) {
			ls.w.marker, ls.w.liveness = nil, nil
			ls.full, ls.torn = false, 0
			c.stats.backwardsRejected.Add(1)
			berr := &BackwardsError{HeldGeneration: cur.Generation(), HeldZxid: cur.Zxid(), SeenGeneration: m.Generation, SeenZxid: stat.Mzxid}
			if ls.lastWait != berr.Error() {
				c.log.Warn("refusing to go backwards: ZooKeeper returned an older generation than the one held (lagging server, another ensemble, or a state file newer than the server); waiting for a newer publish",
					"held_generation", cur.Generation(), "held_zxid", cur.Zxid(), "seen_generation", m.Generation, "seen_zxid", stat.Mzxid)
			}
			c.waiting(ls, berr)
			return nil
		}
	}

	// The marker: read it when the root's children changed since it was
	// last seen absent, and on every full resync.
	if full || stat.Cversion != ls.noMarker || stat.Czxid != ls.noMarkerCzxid {
		var mdata []byte
		var mstat *zk.Stat
		var mw <-chan zk.Event
		err := c.call(ctx, func() (err error) { mdata, mstat, mw, err = c.conn.GetW(c.paths.Marker()); return err })
		c.stats.requests.Add(1)
		c.stats.markerChecks.Add(1)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			ls.noMarker, ls.noMarkerCzxid = stat.Cversion, stat.Czxid
			ls.w.marker, ls.w.liveness = nil, nil
		case err != nil:
			return fmt.Errorf("read %s: %w", c.paths.Marker(), err)
		default:
			ls.noMarker = -1
			ls.w.marker = mw
			ls.full, ls.torn = false, 0
			mk, lw, err := c.markerOwner(ctx, mdata)
			if err != nil {
				return err
			}
			if mk.live {
				ls.w.liveness = lw
				c.stats.markerWaits.Add(1)
				c.logMarker(mdata)
				c.waiting(ls, ErrPublishInProgress)
				return nil
			}
			ls.w.liveness = nil
			return c.abandonedMarker(ctx, ls, m, stat.Mzxid, cur, mk, mstat.Mzxid)
		}
	}

	s, err := c.fetch(ctx, m, stat.Mzxid, cur)
	var mismatch *ItemMismatchError
	if errors.As(err, &mismatch) {
		ls.full = false
		ls.torn++
		c.stats.tornRetries.Add(1)
		c.log.Debug("items did not match the manifest; a newer publish is landing, re-reading", "generation", m.Generation, "item", mismatch.Item, "attempt", ls.torn)
		if ls.torn >= tornReport {
			// Named: an item edited behind the publisher's back stays
			// this way until the next publish repairs it.
			c.waiting(ls, mismatch)
		}
		return nil
	}
	if err != nil {
		return err
	}
	ls.full = false
	ls.torn = 0
	if err := ctx.Err(); err != nil {
		return err // closed meanwhile: nothing is applied or persisted after Close
	}
	s.left = cur.nextLeft(m.Incarnation)
	ls.adoptAny, ls.refused = false, ""
	if switching {
		c.stats.incarnationSwitches.Add(1)
		c.log.Warn("the root holds a new incarnation (ZooKeeper wiped or rebuilt, or another ensemble): following it; its generations start over",
			"held_incarnation", orLegacy(cur.Incarnation()), "held_generation", cur.Generation(), "held_zxid", cur.Zxid(),
			"new_incarnation", m.Incarnation, "new_generation", m.Generation, "new_zxid", stat.Mzxid, "policy", c.opts.incarnation.String())
	}
	c.apply(s)
	c.live(ls)
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.Debug("applied", "generation", s.Generation(), "zxid", s.Zxid(), "items", s.Len())
	}
	return nil
}

// checkSwitch decides on a root read naming another incarnation than the
// held snapshot's: nil to follow it, else the reason to keep the held
// snapshot (an incarnation held before, at a generation not newer than the
// one held in it; or the policy refuses and nothing was adopted).
func (c *Cache) checkSwitch(ls *loopState, cur *Snapshot, m *manifest.Manifest, zxid int64) error {
	if mark, ok := cur.leftMark(m.Incarnation); ok && !(m.Generation > mark.Generation && zxid > mark.Zxid) {
		// Never backwards within an incarnation, even one left since.
		c.stats.backwardsRejected.Add(1)
		berr := &BackwardsError{HeldGeneration: mark.Generation, HeldZxid: mark.Zxid, SeenGeneration: m.Generation, SeenZxid: zxid}
		if ls.lastWait != berr.Error() {
			c.log.Warn("refusing to go backwards: the root holds an incarnation this cache held before, at a generation not newer than the one it held in it",
				"incarnation", m.Incarnation, "held_generation", mark.Generation, "seen_generation", m.Generation,
				"current_incarnation", orLegacy(cur.Incarnation()), "current_generation", cur.Generation())
		}
		ls.adoptAny = false
		return berr
	}
	if c.opts.incarnation != IncarnationRefuse || ls.adoptAny || (ls.adopted != "" && ls.adopted == m.Incarnation) {
		return nil
	}
	ls.refused = m.Incarnation
	ierr := &IncarnationError{HeldIncarnation: cur.Incarnation(), HeldGeneration: cur.Generation(), SeenIncarnation: m.Incarnation, SeenGeneration: m.Generation}
	if ls.lastWait != ierr.Error() {
		c.stats.incarnationsRefused.Add(1)
		c.log.Warn("refusing the root's new incarnation (incarnation policy refuse); serving the held snapshot until an operator adopts it",
			"held_incarnation", orLegacy(cur.Incarnation()), "held_generation", cur.Generation(),
			"new_incarnation", m.Incarnation, "new_generation", m.Generation)
	}
	return ierr
}

// onAdopt records an Adopt request.
func (c *Cache) onAdopt(ls *loopState, inc string) {
	switch {
	case inc != "":
		ls.adopted = inc
	case ls.refused != "":
		ls.adopted = ls.refused
	default:
		ls.adoptAny = true
	}
	if ls.adoptAny {
		c.log.Info("adopting, on request, whatever new incarnation of the root the next read finds")
		return
	}
	c.log.Info("adopting a new incarnation of the root on request", "incarnation", ls.adopted)
}

// markerInfo is what the cache reads of a marker.
type markerInfo struct {
	publishID, publisher string
	foreign              bool // not written by a zkconf publisher
	live                 bool // its publish's liveness node exists
}

// markerOwner reads whether the publish that set a marker is alive: its
// liveness node exists. A publisher creates that ephemeral node before the
// marker and deletes it only after its final commit removed the marker, so
// a marker without one belongs to a dead publisher (or was not written by
// one at all). While the publish is alive the returned watch fires when the
// liveness node goes.
func (c *Cache) markerOwner(ctx context.Context, data []byte) (markerInfo, <-chan zk.Event, error) {
	var mk struct {
		PublishID string `json:"publish_id"`
		Publisher string `json:"publisher"`
	}
	if json.Unmarshal(data, &mk) != nil || mk.PublishID == "" || strings.ContainsAny(mk.PublishID, "/\x00") ||
		mk.PublishID == "." || mk.PublishID == ".." {
		return markerInfo{foreign: true}, nil, nil
	}
	info := markerInfo{publishID: mk.PublishID, publisher: mk.Publisher}
	var lw <-chan zk.Event
	err := c.call(ctx, func() (err error) {
		info.live, _, lw, err = c.conn.ExistsW(c.paths.PublishingNode(mk.PublishID))
		return err
	})
	c.stats.requests.Add(1)
	if err != nil {
		return info, nil, fmt.Errorf("read %s: %w", c.paths.PublishingNode(mk.PublishID), err)
	}
	return info, lw, nil
}

// abandonedMarker handles a marker whose publisher is gone. Waiting for it
// would block this cache until someone publishes again, so: if every item
// verifies against the root's manifest, that generation is consistent and
// is served (the marker is only reported); otherwise the held snapshot is
// kept and the state says that an abandoned marker blocks the root and that
// the next publish takes it over. The root and marker watches are armed.
func (c *Cache) abandonedMarker(ctx context.Context, ls *loopState, m *manifest.Manifest, zxid int64, cur *Snapshot, mk markerInfo, markerMzxid int64) error {
	s, err := c.fetch(ctx, m, zxid, cur)
	var mismatch *ItemMismatchError
	switch {
	case errors.As(err, &mismatch):
		// A publish that just finished deletes its marker in its final
		// commit and its liveness node right after: if the marker is
		// gone or was rewritten since it was read, read the root again
		// rather than report an abandoned marker that is not.
		var ok bool
		var now *zk.Stat
		err := c.call(ctx, func() (err error) { ok, now, err = c.conn.Exists(c.paths.Marker()); return err })
		c.stats.requests.Add(1)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.paths.Marker(), err)
		}
		if !ok || now.Mzxid != markerMzxid {
			return errAgain
		}
		c.stats.markerWaits.Add(1)
		c.waiting(ls, &AbandonedMarkerError{Marker: c.paths.Marker(), PublishID: mk.publishID, Publisher: mk.publisher,
			Foreign: mk.foreign, Generation: m.Generation, Item: mismatch.Item})
		return nil
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	c.log.Warn("an abandoned marker is on the root (its publisher is gone), but every item verifies against the root's manifest: serving that generation; the next confpush publish takes the marker over",
		"marker", c.paths.Marker(), "publish_id", mk.publishID, "publisher", mk.publisher, "foreign", mk.foreign, "generation", m.Generation)
	c.apply(s)
	c.live(ls)
	return nil
}

// logMarker logs who is publishing (never item contents).
func (c *Cache) logMarker(data []byte) {
	var mk struct {
		PublishID      string    `json:"publish_id"`
		Publisher      string    `json:"publisher"`
		StartedAt      time.Time `json:"started_at"`
		BaseGeneration int64     `json:"base_generation"`
	}
	if err := json.Unmarshal(data, &mk); err != nil {
		c.log.Info("a marker-mode publish is in progress; waiting for it (marker unreadable)")
		return
	}
	c.log.Info("a marker-mode publish is in progress; waiting for it",
		"publish_id", mk.PublishID, "publisher", mk.Publisher, "started_at", mk.StartedAt, "base_generation", mk.BaseGeneration)
}

// fetch assembles generation m: items whose sha256 equals the held
// snapshot's are reused, the others are read, several in flight, and each
// is verified against m. It returns an *ItemMismatchError naming an item
// that is missing or does not match (a newer publish is landing, or the
// item was changed behind the publisher's back): nothing from two
// generations is ever assembled.
func (c *Cache) fetch(ctx context.Context, m *manifest.Manifest, zxid int64, cur *Snapshot) (*Snapshot, error) {
	items := make(map[string][]byte, len(m.Items))
	var todo []string
	heldNames := 0 // names of m the held snapshot has too
	for name, it := range m.Items {
		if cur != nil {
			if held, ok := cur.m.Items[name]; ok {
				heldNames++
				if held == it {
					items[name] = cur.items[name]
					continue
				}
			}
		}
		todo = append(todo, name)
	}
	// The held snapshot's sorted names serve when the set of names is the
	// same (the common case: contents changed, no item added or removed).
	var names []string
	if cur != nil && heldNames == len(m.Items) && len(cur.m.Items) == len(m.Items) {
		names = cur.names
	}
	if len(todo) == 0 {
		return newSnapshotNames(m, zxid, items, names, false), nil
	}
	if len(todo) == 1 {
		// One item (the common case): read it here, not on a worker.
		name := todo[0]
		var data []byte
		err := c.call(ctx, func() (err error) { data, _, err = c.conn.Get(c.paths.Item(name)); return err })
		c.stats.requests.Add(1)
		c.stats.itemsFetched.Add(1)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil && m.Matches(name, data):
			items[name] = data
			return newSnapshotNames(m, zxid, items, names, false), nil
		case err == nil, errors.Is(err, zk.ErrNoNode):
			// Torn: a newer publish is landing (or the item was changed
			// behind the publisher's back).
			return nil, &ItemMismatchError{Item: name, Generation: m.Generation, Missing: err != nil}
		default:
			return nil, fmt.Errorf("read item %s: %w", name, err)
		}
	}

	type result struct {
		name string
		data []byte
		err  error
	}
	results := make(chan result, len(todo)) // never blocks a worker
	var next atomic.Int64
	var abort atomic.Bool
	workers := min(c.opts.concurrency, len(todo))
	c.inflight.Add(workers)
	for range workers {
		go func() {
			defer c.inflight.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				name := todo[i]
				if abort.Load() || ctx.Err() != nil {
					results <- result{name: name, err: errAborted}
					continue
				}
				data, _, err := c.conn.Get(c.paths.Item(name))
				c.stats.requests.Add(1)
				c.stats.itemsFetched.Add(1)
				if err == nil && !m.Matches(name, data) {
					err = errMismatch
				}
				if err != nil {
					abort.Store(true)
				}
				results <- result{name: name, data: data, err: err}
			}
		}()
	}
	var torn *ItemMismatchError
	var firstErr error
	for range todo {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case r := <-results:
			switch {
			case r.err == nil:
				items[r.name] = r.data
			case errors.Is(r.err, errMismatch), errors.Is(r.err, zk.ErrNoNode):
				if torn == nil || r.name < torn.Item { // the same item each time, when it is the only one
					torn = &ItemMismatchError{Item: r.name, Generation: m.Generation, Missing: errors.Is(r.err, zk.ErrNoNode)}
				}
			case errors.Is(r.err, errAborted):
			default:
				if firstErr == nil {
					firstErr = fmt.Errorf("read item %s: %w", r.name, r.err)
				}
			}
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if torn != nil {
		return nil, torn
	}
	return newSnapshotNames(m, zxid, items, names, false), nil
}

// call runs fn, a blocking client call, on the caller's goroutine (no
// goroutine and channel per request: every cache makes a few requests per
// notification), and returns ctx's error when ctx ended meanwhile. Close
// cancels ctx and, on a connection the cache owns, closes it, which ends a
// request at once; on the application's connection it waits for the
// request up to a grace period, as it does for the fetch workers.
func (c *Cache) call(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := fn()
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// refusedReport is how long handshakes must have failed before the state
// says ErrRefused.
const refusedReport = 10 * time.Second

// permRetry is how often a cache without permission to read re-checks.
const permRetry = 30 * time.Second

// backoff returns a jittered delay in [d/2, d] for d = base·2^(attempt-1)
// capped at max.
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d/2 + rand.N(d/2+1)
}

func tornBackoff(attempt int) time.Duration {
	if attempt > tornPatience {
		return backoff(tornCap, tornSlowCap, attempt-tornPatience)
	}
	return backoff(tornBase, tornCap, attempt)
}

// jittered returns d ± 10%.
func jittered(d time.Duration) time.Duration {
	j := d / 10
	if j <= 0 {
		return d
	}
	return d - j + rand.N(2*j+1)
}

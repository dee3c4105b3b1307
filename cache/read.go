package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// rootRead is one read of the root: the manifest it holds and its znode's
// stat (Mzxid is the generation's commit zxid; Cversion and Czxid tell
// whether the marker can have appeared since it was last seen absent).
//
// For a member following a canary rollout's candidate, m is the candidate
// manifest (read from the candidate node and verified against the root's
// canary) and stable the root's own manifest, whose items may hold the
// candidate's contents; stable is nil otherwise.
//
// m's Items map is nil: names (increasing) and items (in the same order)
// are its entries (manifest.DecodeOwnedSorted), which a cycle walks beside
// the held snapshot's without building or looking up a map. stable, read
// only for a candidate's contents, has its map.
type rootRead struct {
	m      *manifest.Manifest
	names  []string
	items  []manifest.Item
	stat   *zk.Stat
	stable *manifest.Manifest
	read   witness // when the read was sent and answered (a Group's member only)
}

// verdict is what a cycle does with the root's generation.
type verdict int

const (
	// fetchNewer: nothing is held, or the root's generation is newer than
	// the held one in the same incarnation.
	fetchNewer verdict = iota
	// fetchSwitch: the root's generation is of another incarnation, which
	// the cache follows.
	fetchSwitch
	// keepHeld: the cycle ends here; the held snapshot is the root's
	// generation (Live) or the root's is refused (the state says why).
	keepHeld
)

// cycle reads the root once and, when it names a newer generation, fetches
// and applies it: sync, read the root, judge its generation against the
// held one, check the marker, fetch the items, install the snapshot. It
// returns nil when the cache is in sync or waiting for a watch (the state
// says which); loop.torn > 0 asks for a retry after backoff.
func (c *Cache) cycle(ctx context.Context, loop *loopState) error {
	full := loop.full
	c.cycleStarted = time.Now()
	if err := c.syncRoot(ctx, loop); err != nil {
		return err
	}
	var read rootRead // on the stack: nothing allocated for it per publish
	if ok, err := c.readRoot(ctx, loop, &read); !ok || err != nil {
		return err
	}
	root := &read
	var err error
	held := c.snap.Load()
	if root, err = c.followed(ctx, loop, root, held); root == nil || err != nil {
		return err
	}
	v := c.judge(loop, held, root)
	if v == keepHeld {
		return nil
	}
	if full || loop.markerMayExist(root.stat) {
		if done, err := c.checkMarker(ctx, loop, root, held, v); done || err != nil {
			return err
		}
	}
	s, err := c.fetch(ctx, root, held)
	if err != nil {
		// Inside the branch: errors.As's target escapes, and a cycle
		// that fetched allocates nothing for it.
		if errors.As(err, new(*manifest.ItemMismatchError)) {
			c.onTorn(loop, err)
			return nil
		}
		return err
	}
	loop.full, loop.torn = false, 0
	if err := ctx.Err(); err != nil {
		return err // closed meanwhile: nothing is applied or persisted after Close
	}
	c.install(ctx, loop, s, held, v)
	return nil
}

// syncRoot sends Sync(root) when the session is new or reconnected, so that
// the server answering is as current as the leader.
func (c *Cache) syncRoot(ctx context.Context, loop *loopState) error {
	if !loop.needSync {
		return nil
	}
	err := c.call(ctx, func() error { _, err := c.conn.Sync(c.root); return err })
	c.stats.requests.Add(1)
	c.stats.syncs.Add(1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("sync %s: %w", c.root, err)
	}
	loop.needSync = false
	return nil
}

// readRoot reads the root's manifest into read and arms the root's watch.
// It returns false and no error when the root holds nothing to follow
// (missing, never published, or not a manifest this cache reads): the
// state says which.
func (c *Cache) readRoot(ctx context.Context, loop *loopState, read *rootRead) (bool, error) {
	var (
		data []byte
		stat *zk.Stat
		rw   <-chan zk.Event
		w    witness
	)
	err := c.call(ctx, func() (err error) {
		w.sent = c.tick()
		data, stat, rw, err = c.conn.GetW(c.root)
		w.answered = c.tick()
		return err
	})
	c.stats.requests.Add(1)
	c.stats.rootReads.Add(1)
	if errors.Is(err, zk.ErrNoNode) {
		return false, c.watchMissingRoot(ctx, loop)
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", c.root, err)
	}
	loop.watches.root = rw

	m, names, items, err := manifest.DecodeOwnedSorted(data) // the client's own buffer, read once
	if err != nil {
		loop.settle()
		if errors.Is(err, manifest.ErrEmpty) {
			c.waiting(loop, ErrNotPublished)
			return false, nil
		}
		err = fmt.Errorf("cache: root %s: %w", c.root, err)
		if loop.lastWait != err.Error() {
			c.log.Error("the root does not hold a manifest this zkconf can read; keeping the held snapshot", "err", err)
		}
		c.waiting(loop, err)
		return false, nil
	}
	*read = rootRead{m: m, names: names, items: items, stat: stat, read: w}
	return true, nil
}

// watchMissingRoot arms an exists watch on a root that is not there, the
// only watch then. It returns errAgain when the root appeared meanwhile.
func (c *Cache) watchMissingRoot(ctx context.Context, loop *loopState) error {
	var exists bool
	var ew <-chan zk.Event
	err := c.call(ctx, func() (err error) { exists, _, ew, err = c.conn.ExistsW(c.root); return err })
	c.stats.requests.Add(1)
	if err != nil {
		return fmt.Errorf("watch for %s: %w", c.root, err)
	}
	loop.watches = watchSet{root: ew}
	loop.markerAbsentCversion = -1
	if exists {
		return errAgain
	}
	loop.settle()
	c.waiting(loop, ErrRootMissing)
	return nil
}

// judge compares the root's generation with the held snapshot: never
// backwards within an incarnation, another incarnation per the policy.
func (c *Cache) judge(loop *loopState, held *Snapshot, root *rootRead) verdict {
	if held == nil {
		return fetchNewer
	}
	m, zxid := root.m, root.stat.Mzxid
	switch {
	case held.same(m):
		loop.settle()
		loop.adoptAny, loop.refused = false, ""
		c.live(loop)
		return keepHeld
	case !held.sameIncarnation(&incView{inc: m.Incarnation, gen: m.Generation, zxid: zxid}):
		if refuse := c.checkSwitch(loop, held, m, zxid); refuse != nil {
			loop.settle()
			c.waiting(loop, refuse)
			return keepHeld
		}
		return fetchSwitch
	case !held.supersededBy(m.Generation, zxid):
		loop.settle()
		berr := c.backwards(loop, held.Generation(), held.Zxid(), m.Generation, zxid,
			"refusing to go backwards: ZooKeeper returned an older generation than the one held (lagging server, another ensemble, or a state file newer than the server); waiting for a newer publish",
			"held_generation", held.Generation(), "held_zxid", held.Zxid(), "seen_generation", m.Generation, "seen_zxid", zxid)
		c.waiting(loop, berr)
		return keepHeld
	}
	return fetchNewer
}

// checkSwitch decides on a root read naming another incarnation than the
// held snapshot's: nil to follow it, else the reason to keep the held
// snapshot (an incarnation held before, at a generation not newer than the
// one held in it; or the policy refuses and nothing was adopted).
func (c *Cache) checkSwitch(loop *loopState, held *Snapshot, m *manifest.Manifest, zxid int64) error {
	if mark, ok := held.leftMark(m.Incarnation); ok && !(m.Generation > mark.Generation && zxid > mark.Zxid) {
		// Never backwards within an incarnation, even one left since.
		loop.adoptAny = false
		return c.backwards(loop, mark.Generation, mark.Zxid, m.Generation, zxid,
			"refusing to go backwards: the root holds an incarnation this cache held before, at a generation not newer than the one it held in it",
			"incarnation", m.Incarnation, "held_generation", mark.Generation, "seen_generation", m.Generation,
			"current_incarnation", orLegacy(held.Incarnation()), "current_generation", held.Generation())
	}
	if c.opts.incarnation != IncarnationRefuse || loop.adoptAny || (loop.adopted != "" && loop.adopted == m.Incarnation) {
		return nil
	}
	loop.refused = m.Incarnation
	ierr := &IncarnationError{HeldIncarnation: held.Incarnation(), HeldGeneration: held.Generation(), SeenIncarnation: m.Incarnation, SeenGeneration: m.Generation}
	if loop.lastWait != ierr.Error() {
		c.stats.incarnationsRefused.Add(1)
		c.log.Warn("refusing the root's new incarnation (incarnation policy refuse); serving the held snapshot until an operator adopts it",
			"held_incarnation", orLegacy(held.Incarnation()), "held_generation", held.Generation(),
			"new_incarnation", m.Incarnation, "new_generation", m.Generation)
	}
	return ierr
}

// backwards counts a refused generation (seen, not newer than held) and
// returns the reason, logging msg with attrs when the reason is new.
func (c *Cache) backwards(loop *loopState, heldGen, heldZxid, seenGen, seenZxid int64, msg string, attrs ...any) error {
	c.stats.backwardsRejected.Add(1)
	berr := &BackwardsError{HeldGeneration: heldGen, HeldZxid: heldZxid, SeenGeneration: seenGen, SeenZxid: seenZxid}
	if loop.lastWait != berr.Error() {
		c.log.Warn(msg, attrs...)
	}
	return berr
}

// onAdopt records an Adopt request.
func (c *Cache) onAdopt(loop *loopState, inc string) {
	switch {
	case inc != "":
		loop.adopted = inc
	case loop.refused != "":
		loop.adopted = loop.refused
	default:
		loop.adoptAny = true
	}
	if loop.adoptAny {
		c.log.Info("adopting, on request, whatever new incarnation of the root the next read finds")
		return
	}
	c.log.Info("adopting a new incarnation of the root on request", "incarnation", loop.adopted)
}

// onTorn records a read whose items did not match the manifest: a newer
// publish is landing, so the root is read again after a backoff.
func (c *Cache) onTorn(loop *loopState, mismatch error) {
	loop.full = false
	loop.torn++
	c.stats.tornRetries.Add(1)
	c.log.Debug("the read did not match the root's manifest; a newer publish is landing, re-reading", "reason", mismatch, "attempt", loop.torn)
	if loop.torn >= tornReport {
		// Named: an item edited behind the publisher's back stays this
		// way until the next publish repairs it.
		c.waiting(loop, mismatch)
	}
}

// install hands out s, the root's generation, verified (fetch built it
// from held, with the incarnations left carried over), which v (fetchNewer
// or fetchSwitch) says is newer than held or of another incarnation. It is
// the only way a cycle applies a snapshot: a switch is counted, whether a
// marker was on the root or not.
func (c *Cache) install(ctx context.Context, loop *loopState, s, held *Snapshot, v verdict) {
	loop.adoptAny, loop.refused = false, ""
	if v == fetchSwitch {
		c.stats.incarnationSwitches.Add(1)
		c.log.Warn("the root holds a new incarnation (ZooKeeper wiped or rebuilt, or another ensemble): following it; its generations start over",
			"held_incarnation", orLegacy(held.Incarnation()), "held_generation", held.Generation(), "held_zxid", held.Zxid(),
			"new_incarnation", s.Incarnation(), "new_generation", s.Generation(), "new_zxid", s.Zxid(), "policy", c.opts.incarnation.String())
	}
	c.apply(s)
	c.live(loop)
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.Debug("applied", "generation", s.Generation(), "zxid", s.Zxid(), "items", s.Len())
	}
}

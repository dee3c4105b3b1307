package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// markerOwner is what the cache derives from a marker on the root.
type markerOwner struct {
	manifest.Marker      // zero when foreign
	foreign         bool // not written by a zkconf publisher
	live            bool // its publish's liveness node exists
}

// markerMayExist reports whether the marker can have appeared since it was
// last seen absent: the root's children changed, or the root znode was
// re-created. Creating the marker changes the root's cversion.
func (loop *loopState) markerMayExist(root *zk.Stat) bool {
	return root.Cversion != loop.markerAbsentCversion || root.Czxid != loop.markerAbsentCzxid
}

// checkMarker reads the marker and arms its watch. Without a marker the
// cycle goes on to fetch (done false). With one the cycle ends here (done
// true): a live publish is waited for, an abandoned marker is handled by
// abandonedMarker.
func (c *Cache) checkMarker(ctx context.Context, loop *loopState, root *rootRead, held *Snapshot, v verdict) (done bool, err error) {
	var (
		data []byte
		stat *zk.Stat
		mw   <-chan zk.Event
	)
	err = c.call(ctx, func() (err error) { data, stat, mw, err = c.conn.GetW(c.paths.Marker()); return err })
	c.stats.requests.Add(1)
	c.stats.markerChecks.Add(1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		loop.markerAbsentCversion, loop.markerAbsentCzxid = root.stat.Cversion, root.stat.Czxid
		loop.watches.marker, loop.watches.liveness = nil, nil
		return false, nil
	case err != nil:
		return true, fmt.Errorf("read %s: %w", c.paths.Marker(), err)
	}
	loop.markerAbsentCversion = -1
	loop.watches.marker = mw
	loop.full, loop.torn = false, 0
	owner, lw, err := c.markerOwner(ctx, data)
	if err != nil {
		return true, err
	}
	if owner.live {
		loop.watches.liveness = lw
		c.stats.markerWaits.Add(1)
		c.log.Info("a marker-mode publish is in progress; waiting for it",
			"publish_id", owner.PublishID, "publisher", owner.Publisher, "started_at", owner.StartedAt, "base_generation", owner.BaseGeneration)
		c.waiting(loop, ErrPublishInProgress)
		return true, nil
	}
	loop.watches.liveness = nil
	return true, c.abandonedMarker(ctx, loop, root, held, v, owner, stat.Mzxid)
}

// markerOwner reads whether the publish that set a marker is alive: its
// liveness node exists. A publisher creates that ephemeral node before the
// marker and deletes it only after its final commit removed the marker, so
// a marker without one belongs to a dead publisher (or was not written by
// one at all: foreign). While the publish is alive the returned watch
// fires when the liveness node goes.
func (c *Cache) markerOwner(ctx context.Context, data []byte) (markerOwner, <-chan zk.Event, error) {
	mk, err := manifest.DecodeMarker(data)
	if err != nil { // manifest.ErrForeign: no publish to wait for
		return markerOwner{foreign: true}, nil, nil
	}
	owner := markerOwner{Marker: *mk}
	var lw <-chan zk.Event
	err = c.call(ctx, func() (err error) {
		owner.live, _, lw, err = c.conn.ExistsW(c.paths.PublishingNode(mk.PublishID))
		return err
	})
	c.stats.requests.Add(1)
	if err != nil {
		return owner, nil, fmt.Errorf("read %s: %w", c.paths.PublishingNode(mk.PublishID), err)
	}
	return owner, lw, nil
}

// abandonedMarker handles a marker whose publisher is gone. Waiting for it
// would block this cache until someone publishes again, so: if every item
// verifies against the root's manifest, that generation is consistent and
// is served (the marker is only reported); otherwise the held snapshot is
// kept and the state says that an abandoned marker blocks the root and that
// the next publish takes it over. The root and marker watches are armed.
func (c *Cache) abandonedMarker(ctx context.Context, loop *loopState, root *rootRead, held *Snapshot, v verdict, owner markerOwner, markerMzxid int64) error {
	m := root.m
	s, err := c.fetch(ctx, root, held)
	var mismatch *manifest.ItemMismatchError
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
		c.waiting(loop, &AbandonedMarkerError{Marker: c.paths.Marker(), PublishID: owner.PublishID, Publisher: owner.Publisher,
			Foreign: owner.foreign, Generation: m.Generation, Item: mismatch.Item})
		return nil
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	c.log.Warn("an abandoned marker is on the root (its publisher is gone), but every item verifies against the root's manifest: serving that generation; the next confpush publish takes the marker over",
		"marker", c.paths.Marker(), "publish_id", owner.PublishID, "publisher", owner.Publisher, "foreign", owner.foreign, "generation", m.Generation)
	c.install(ctx, loop, s, held, v)
	return nil
}

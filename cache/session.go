package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// onWatch handles an event from one of the one-shot watch channels (the
// caller has disarmed it): a change makes a cycle due. A closed channel is
// never read twice: the caller set it to nil.
func (c *Cache) onWatch(loop *loopState, ev zk.Event, ok bool) {
	if !ok {
		return
	}
	if ev.Type != zk.EventNotWatching {
		loop.due = true
		return
	}
	switch {
	case errors.Is(ev.Err, zk.ErrSessionExpired):
		if c.sess.Status().Expiries == loop.expiries {
			// The tracker has not counted this expiry (yet): count it here
			// and let checkExpiry absorb the tracker's increment.
			loop.unmatched++
			c.onExpiry(loop, 1)
		}
		loop.due = true
	case errors.Is(ev.Err, zk.ErrClosing):
		if !c.client.Redials() || c.client.Closed() {
			loop.connClosed = true
			c.waiting(loop, ErrConnClosed)
			c.log.Error("the application closed the ZooKeeper connection under the cache; it serves its last snapshot until Close")
		}
	default:
		loop.due = true
	}
}

// checkExpiry notices expiries counted by the session tracker.
func (c *Cache) checkExpiry(loop *loopState, st zkclient.Status) bool {
	if st.Expiries == loop.expiries {
		return false
	}
	d := st.Expiries - loop.expiries
	loop.expiries = st.Expiries
	absorbed := min(d, loop.unmatched)
	loop.unmatched -= absorbed
	if d -= absorbed; d > 0 {
		c.onExpiry(loop, d)
	}
	return true
}

// onExpiry reports a session expiry: every watch is gone and the next
// session starts from a Sync and a full resync.
func (c *Cache) onExpiry(loop *loopState, n uint64) {
	c.stats.expiries.Add(n)
	loop.needSync, loop.full, loop.markerAbsentCversion = true, true, -1
	loop.watches = watchSet{}
	loop.lastWait = ""
	c.setState(StateExpired, fmt.Errorf("cache: ZooKeeper session expired (%w)", zkclient.ErrSessionExpired))
	if r := c.sess.Status().Replaced; r != loop.replaced {
		loop.replaced = r
		c.log.Warn("the ZooKeeper connection was replaced (the servers refused its session): serving the last snapshot and resyncing on the new session")
		return
	}
	if c.ownConn {
		c.log.Warn("ZooKeeper session expired; serving the last snapshot and resyncing on a new session")
	} else {
		c.log.Warn("ZooKeeper session of the application's connection expired; the cache resyncs on the client's new session, everything else tied to the old session is the application's to handle")
	}
}

// onSession starts a full resync, after a Sync, in a session the loop has
// not synced in: the first one, a new one after an expiry, or the same one
// after a reconnect (watches may have missed changes meanwhile). After the
// first, the resync waits for a random delay up to the resync jitter.
func (c *Cache) onSession(loop *loopState, epoch uint64) {
	first := loop.epoch == 0
	loop.epoch, loop.needSync, loop.full, loop.due = epoch, true, true, true
	loop.clearRetry()
	if first {
		return
	}
	if c.State().State == StateLive {
		c.setState(StateStale, ErrResyncing)
	}
	c.stats.reconnects.Add(1)
	c.stats.resyncs.Add(1)
	delay := time.Duration(0)
	if c.opts.jitter > 0 {
		delay = rand.N(c.opts.jitter)
		loop.setRetry(delay)
	}
	c.log.Info("reconnected to ZooKeeper; resyncing", "server", c.conn.Server(), "delay", delay)
}

// onDisconnected reports a lost session (state Stale, or still Expired or
// Starting).
func (c *Cache) onDisconnected(loop *loopState, st zkclient.Status) {
	err := ErrDisconnected
	if st.State == zk.StateAuthFailed {
		err = fmt.Errorf("%w: %w", ErrDisconnected, zkclient.ErrAuthFailed)
	}
	if st.Refused(2, c.opts.refusedReport) {
		// A Client replaces the connection itself (its bound is the
		// session timeout); a Fixed client's owner has to.
		err = fmt.Errorf("%w (%d handshakes closed in %v)", ErrRefused, st.HandshakeFailures, time.Since(st.FailingSince).Round(time.Second))
		if loop.lastWait != ErrRefused.Error() {
			loop.lastWait = ErrRefused.Error()
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

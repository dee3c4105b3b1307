package cache

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// wipeScenario publishes generations 1..3 of incarnation old on a
// standalone server, lets the cache hold generation 3, wipes the server
// (same address, data gone: its zxids start over) and publishes
// generations 1..4 of a new incarnation, returning it and the items of its
// generation 4, and the manifest of the old generation 3.
type wipeScenario struct {
	zk       *zktest.Cluster
	oldInc   string
	newInc   string
	oldGen3  *manifest.Manifest
	newItems map[string][]byte
}

func startWipeScenario(t *testing.T) *wipeScenario {
	t.Helper()
	w := &wipeScenario{zk: zktest.Start(t), oldInc: manifest.NewIncarnation(), newInc: manifest.NewIncarnation()}
	// History before the publishes: the old generations' zxids, and those
	// clients have seen, stay above what the wiped server reaches in the
	// test, so it keeps refusing their sessions and its generations look
	// older by zxid too (as after wiping a long-lived ensemble).
	w.zk.BumpZxid(t, 200)
	rp := newRawPublisher(t, w.zk.Connect(t, 10*time.Second), "/config")
	rp.inc = w.oldInc
	for i := range 3 {
		rp.publish(set(3, "old"+string(rune('a'+i))))
	}
	m, _, err := rp.current()
	if err != nil {
		t.Fatal(err)
	}
	w.oldGen3 = m
	return w
}

// dial is the option of the scenario's caches that dial themselves: a 4 s
// session, and a refusal bound of 2 s (a Client's least) rather than the
// session timeout, which the tests would wait out after every wipe.
func (w *wipeScenario) dial() Option {
	return WithConfig(zkclient.Config{Servers: w.zk.Addrs(), SessionTimeout: 4 * time.Second, RedialAfter: 2 * time.Second})
}

// cacheWithState starts a cache of the scenario's root that persists to
// a state file in a temporary directory, and waits for it to hold the old
// incarnation's generation 3.
func (w *wipeScenario) cacheWithState(t *testing.T, log *slog.Logger) (*Cache, string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	c := newCache(t, "/config", w.dial(), WithLogger(log), WithStateFile(state))
	waitGen(t, c, 3, nil)
	return c, state
}

// wipeAndRepublish wipes the server and publishes 4 generations of the
// new incarnation through a fresh connection.
func (w *wipeScenario) wipeAndRepublish(t *testing.T) {
	t.Helper()
	w.zk.Wipe(0)
	rp := newRawPublisher(t, w.zk.Connect(t, 10*time.Second), "/config")
	rp.inc = w.newInc
	for i := range 4 {
		w.newItems = set(2, "new"+string(rune('a'+i)))
		rp.publish(w.newItems)
	}
}

// setRoot overwrites the root's data (what a lagging server, or the old
// ensemble, would answer).
func setRoot(t *testing.T, c *zktest.Cluster, m *manifest.Manifest) {
	t.Helper()
	conn := c.Connect(t, 10*time.Second)
	if _, err := conn.Set("/config", m.Encode(), -1); err != nil {
		t.Fatal(err)
	}
}

// TestCacheFollowsWipedZooKeeper: a cache that dials itself reconnects to
// a ZooKeeper wiped and restarted on the same address (the server refuses
// the old client's session), follows the new incarnation to its generation
// 4 although generation 3 of the old one was held, and then still refuses
// to go backwards: the old incarnation's generation 3 (held before) and a
// lower generation of the new one.
func TestCacheFollowsWipedZooKeeper(t *testing.T) {
	w := startWipeScenario(t)
	log, _ := testLogger(t)
	c := newCache(t, "/config", w.dial(), WithLogger(log))
	waitGen(t, c, 3, nil)
	heldZxid := c.Snapshot().Zxid()

	w.wipeAndRepublish(t)
	st := waitState(t, c, "generation 4 of the new incarnation", func(st StateInfo) bool {
		return isLive(st) && st.Incarnation == w.newInc && st.Generation == 4
	})
	checkItems(t, c.Snapshot(), w.newItems)
	if st.IncarnationSwitches != 1 || c.Stats().IncarnationSwitches != 1 {
		t.Fatalf("switches: state %d, stats %d, want 1", st.IncarnationSwitches, c.Stats().IncarnationSwitches)
	}
	if left := c.Snapshot().LeftIncarnations(); len(left) != 1 || left[0] != (IncarnationMark{w.oldInc, 3, heldZxid}) {
		t.Fatalf("left incarnations %+v", left)
	}

	// The old incarnation again (a flip back to the old data): refused.
	setRoot(t, w.zk, w.oldGen3)
	waitState(t, c, "the old incarnation's generation 3 refused", func(st StateInfo) bool {
		var b *BackwardsError
		return errors.As(st.Err, &b) && b.SeenGeneration == 3 && b.HeldGeneration == 3
	})
	// A lower generation of the held incarnation (a lagging server): refused.
	lower := c.Snapshot().Manifest()
	lower.Generation, lower.PublishID = 2, "lagging"
	setRoot(t, w.zk, lower)
	waitState(t, c, "generation 2 refused", func(st StateInfo) bool {
		var b *BackwardsError
		return errors.As(st.Err, &b) && b.SeenGeneration == 2 && b.HeldGeneration == 4
	})
	if s := c.Snapshot(); s.Generation() != 4 || s.Incarnation() != w.newInc {
		t.Fatalf("went backwards: generation %d of %s", s.Generation(), s.Incarnation())
	}
}

// TestCacheRefusesNewIncarnationUntilAdopted: with IncarnationRefuse a
// restarted cache (state file holding the old incarnation's generation 3)
// keeps it and reports the refusal; Adopt makes it follow. The state file
// then remembers the old incarnation, so a restart does not go back to it.
func TestCacheRefusesNewIncarnationUntilAdopted(t *testing.T) {
	w := startWipeScenario(t)
	log, _ := testLogger(t)
	c, state := w.cacheWithState(t, log)
	_ = c.Close()

	w.wipeAndRepublish(t)
	c = newCache(t, "/config", w.dial(), WithLogger(log), WithStateFile(state),
		WithIncarnationPolicy(IncarnationRefuse))
	st := waitState(t, c, "the new incarnation refused", func(st StateInfo) bool {
		return errors.Is(st.Err, ErrIncarnationRefused)
	})
	var ierr *IncarnationError
	if !errors.As(st.Err, &ierr) || ierr.SeenIncarnation != w.newInc || ierr.HeldIncarnation != w.oldInc || ierr.HeldGeneration != 3 || ierr.SeenGeneration != 4 {
		t.Fatalf("refusal %#v", st.Err)
	}
	if s := c.Snapshot(); s.Generation() != 3 || s.Incarnation() != w.oldInc {
		t.Fatalf("serving generation %d of %s, want the held 3", s.Generation(), s.Incarnation())
	}
	if err := c.Adopt(""); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "the adopted incarnation's generation 4", func(st StateInfo) bool {
		return isLive(st) && st.Incarnation == w.newInc && st.Generation == 4
	})
	_ = c.Close()

	s, err := loadState(state, "/config")
	if err != nil || s.Incarnation() != w.newInc || len(s.LeftIncarnations()) != 1 || s.LeftIncarnations()[0].Incarnation != w.oldInc {
		t.Fatalf("persisted state: %v, %+v", err, s)
	}
}

// TestFixedClientReportsRefusedSession: a cache on the application's
// connection cannot replace it; it says so (ErrRefused) instead of "no
// session" forever. It says so after 2 s of refused handshakes here, not
// the 10 s a cache waits out of tests.
func TestFixedClientReportsRefusedSession(t *testing.T) {
	w := startWipeScenario(t)
	log, _ := testLogger(t)
	sess := zkclient.NewSession()
	conn, _, err := zk.Connect(w.zk.Addrs(), 4*time.Second, zk.WithEventCallback(sess.Callback), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	c := newCache(t, "/config", WithClient(zkclient.Fixed(conn, sess)), WithLogger(log), withRefusedReport(2*time.Second))
	waitGen(t, c, 3, nil)
	w.wipeAndRepublish(t)
	waitState(t, c, "ErrRefused", func(st StateInfo) bool { return errors.Is(st.Err, ErrRefused) })
}

// TestSwitchPastAbandonedMarkerRemembersLeftIncarnation: a cache that
// follows a new incarnation whose root carries an abandoned marker (its
// items verify, so the generation is served) counts the switch and
// remembers, in memory and in the state file, the incarnation it left,
// exactly as without a marker: the old incarnation's generation 3 is then
// refused as backwards.
func TestSwitchPastAbandonedMarkerRemembersLeftIncarnation(t *testing.T) {
	w := startWipeScenario(t)
	log, _ := testLogger(t)
	c, state := w.cacheWithState(t, log)
	heldZxid := c.Snapshot().Zxid()

	w.zk.Wipe(0)
	rp := newRawPublisher(t, w.zk.Connect(t, 10*time.Second), "/config")
	rp.inc = w.newInc
	if err := zkclient.EnsurePath(context.Background(), rp.conn, rp.p.Root, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := rp.conn.Create(rp.p.Marker(), []byte("made by hand"), 0, acl); err != nil {
		t.Fatal(err)
	}
	items := set(2, "new")
	gen, _ := rp.publish(items)
	st := waitState(t, c, "the new incarnation served past the abandoned marker", func(st StateInfo) bool {
		return isLive(st) && st.Incarnation == w.newInc && st.Generation == gen
	})
	checkItems(t, c.Snapshot(), items)
	if st.IncarnationSwitches != 1 || c.Stats().IncarnationSwitches != 1 {
		t.Errorf("switches: state %d, stats %d, want 1", st.IncarnationSwitches, c.Stats().IncarnationSwitches)
	}
	want := IncarnationMark{w.oldInc, 3, heldZxid}
	if left := c.Snapshot().LeftIncarnations(); len(left) != 1 || left[0] != want {
		t.Fatalf("left incarnations %+v, want [%+v]", left, want)
	}
	if s, err := loadState(state, "/config"); err != nil || len(s.LeftIncarnations()) != 1 || s.LeftIncarnations()[0] != want {
		t.Fatalf("persisted state: %v, %+v", err, s)
	}

	setRoot(t, w.zk, w.oldGen3)
	waitState(t, c, "the old incarnation's generation 3 refused", func(st StateInfo) bool {
		var b *BackwardsError
		return errors.As(st.Err, &b) && b.SeenGeneration == 3 && b.HeldGeneration == 3
	})
}

// withRefusedReport sets how long handshakes must have failed before the
// cache's state says ErrRefused (refusedReport by default).
func withRefusedReport(d time.Duration) Option {
	return func(o *options) error { o.refusedReport = d; return nil }
}

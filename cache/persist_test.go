package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestRestartWithZooKeeperDown: a cache persists what it applies; restarted
// while ZooKeeper is down it serves the persisted snapshot at once (Stale),
// and goes Live without re-reading items once ZooKeeper is back.
func TestRestartWithZooKeeperDown(t *testing.T) {
	zkc := zktest.Start(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	dir := filepath.Join(t.TempDir(), "new", "state")
	path := filepath.Join(dir, "config.state")

	v1 := set(5, "v1")
	pub.publish(v1)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	waitGen(t, c, 1, v1)
	v2 := withItem(v1, "item04", "second")
	g2, z2 := pub.publish(v2)
	waitGen(t, c, g2, v2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("state file mode %o, want 600", m)
	}
	if m := fileMode(t, dir); m != 0o700 {
		t.Errorf("state directory mode %o, want 700", m)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("state directory holds %d entries, want the state file and its item directory (temporary files left?)", len(ents))
	}
	if m := fileMode(t, path+itemDirSuffix); m != 0o700 {
		t.Errorf("item directory mode %o, want 700", m)
	}
	// Generation 2 changed one of 5 items: the item directory holds one
	// pack, which generation 2's write appended to.
	if ents, _ := os.ReadDir(path + itemDirSuffix); len(ents) != 1 || !validPackName(ents[0].Name()) {
		t.Errorf("item directory holds %v, want one pack", ents)
	}

	t0 := time.Now()
	zkc.Stop(0)
	t.Logf("stop took %v", time.Since(t0))
	c2 := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	s := c2.Snapshot() // at once, no waiting
	if s == nil || s.Generation() != g2 || s.Zxid() != z2 || !s.FromStateFile() {
		t.Fatalf("restarted cache serves %+v, want generation %d from the state file", s, g2)
	}
	checkItems(t, s, v2)
	if st := c2.State(); st.State != StateStale || st.Generation != g2 {
		t.Fatalf("state %+v, want stale at %d", st, g2)
	}
	if got, err := c2.Wait(testCtx(t), g2); err != nil || got != s {
		t.Fatalf("Wait: %v %v", got, err)
	}

	t0 = time.Now()
	zkc.Restart(0)
	t.Logf("restart took %v", time.Since(t0))
	t0 = time.Now()
	waitState(t, c2, "live after ZooKeeper is back", isLive)
	t.Logf("live %v after the restart", time.Since(t0))
	if c2.Snapshot() != s {
		t.Fatal("the snapshot was replaced by an identical generation")
	}
	if st := c2.Stats(); st.ItemsFetched != 0 {
		t.Fatalf("re-read %d items of a generation already held", st.ItemsFetched)
	}
	// And it follows from there. The publisher dials afresh: its old
	// connection may still be between dial attempts, and go-zookeeper fails
	// a request queued across a pass over its server list with ErrNoServer
	// (seen under load: "zk: could not connect to a server").
	pub = newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	v3 := withItem(v2, "item00", "third")
	g3, _ := pub.publish(v3)
	waitGen(t, c2, g3, v3)
}

// TestCorruptStateFileIgnored: a state file that is garbage, corrupted in
// its body, truncated, empty, or of another root is ignored with a warning;
// the cache starts from ZooKeeper and rewrites a good file.
func TestCorruptStateFileIgnored(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	v1 := set(3, "v1")
	pub.publish(v1)

	good := encodeTestState(t, "/config", newTestSnapshot(t, 7, v1), time.Now())
	other := encodeTestState(t, "/other", newTestSnapshot(t, 7, v1), time.Now())
	flipped := bytes.Clone(good)
	i := bytes.Index(flipped, []byte("item01"))
	flipped[i] ^= 0x01 // one bit in the body

	for name, data := range map[string][]byte{
		"garbage":    []byte("\x00\x01 not json at all"),
		"bit flip":   flipped,
		"truncated":  good[:len(good)/2],
		"empty":      {},
		"other root": other,
		"no body":    []byte(`{"kind":"zkconf-cache-state","format":1,"checksum":""}`),
	} {
		t.Run(name, func(t *testing.T) {
			log, buf := testLogger(t)
			path := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
			if s := c.Snapshot(); s != nil {
				t.Fatalf("served generation %d from a bad state file", s.Generation())
			}
			if !strings.Contains(buf.String(), "ignoring the state file") {
				t.Fatalf("no warning logged:\n%s", buf.String())
			}
			waitGen(t, c, 1, v1)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := loadState(path, "/config")
			if err != nil || s == nil || s.Generation() != 1 {
				t.Fatalf("state file not rewritten: %v %v", s, err)
			}
		})
	}
}

// TestPersistedNewerNotReplaced: a cache persisted generation 5 from one
// ensemble (the shared server); started against a fresh ensemble at
// generation 2 it keeps generation 5, refuses the older data (logged,
// counted, Stale with ErrBackwards) and never overwrites the state file
// with it.
func TestPersistedNewerNotReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	log, buf := testLogger(t)

	a := sharedZooKeeper.For(t)
	pubA := newRawPublisher(t, a.Connect(t, 4*time.Second), "/config")
	var v5 map[string][]byte
	for g := range 5 {
		v5 = set(4, "a"+string(rune('1'+g)))
		pubA.publish(v5)
	}
	ca := newCache(t, "/config", WithServers(a.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	waitGen(t, ca, 5, v5)
	ca.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	b := zktest.Start(t)
	pubB := newRawPublisher(t, b.Connect(t, 4*time.Second), "/config")
	pubB.publish(set(4, "b1"))
	pubB.publish(set(4, "b2"))
	cb := newCache(t, "/config", WithServers(b.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	st := waitState(t, cb, "backwards refused", func(st StateInfo) bool { return errors.Is(st.Err, ErrBackwards) })
	var be *BackwardsError
	if !errors.As(st.Err, &be) || be.HeldGeneration != 5 || be.SeenGeneration != 2 {
		t.Fatalf("error %v", st.Err)
	}
	if st.State != StateStale || cb.Snapshot().Generation() != 5 {
		t.Fatalf("state %v generation %d; want stale, 5 kept", st.State, cb.Snapshot().Generation())
	}
	checkItems(t, cb.Snapshot(), v5)
	if cb.Stats().BackwardsRejected < 1 {
		t.Fatal("not counted")
	}
	if !strings.Contains(buf.String(), "refusing to go backwards") {
		t.Fatal("not logged")
	}
	// A third publish on B (generation 3) is still older: still refused.
	pubB.publish(set(4, "b3"))
	waitState(t, cb, "generation 3 refused", func(st StateInfo) bool {
		return errors.As(st.Err, &be) && be.SeenGeneration == 3
	})
	cb.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the state file was rewritten")
	}
}

// TestPersistedBeforeHandout: whenever a snapshot becomes visible (Updates,
// OnUpdate, Snapshot), the persisted state already holds it or a newer
// one, complete: a process that acts on a snapshot and crashes right after
// restarts from at least that generation (never backwards).
func TestPersistedBeforeHandout(t *testing.T) {
	testPersistedBefore(t, false)
}

// TestPersistedBeforeDurable is TestPersistedBeforeHandout with
// WithDurableBarrier: a snapshot is handed out while its state is written,
// and whenever its Durable has returned nil, the persisted state holds it
// or a newer one, complete: a process that shows a snapshot only after
// Durable (confagent) and crashes right after restarts from at least that
// generation.
func TestPersistedBeforeDurable(t *testing.T) {
	testPersistedBefore(t, true)
}

func testPersistedBefore(t *testing.T, barrier bool) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	path := filepath.Join(t.TempDir(), "state")
	v := set(6, "v1")
	pub.publish(v)

	// OnUpdate runs on its own goroutine, so the cache may be persisting
	// the next generation while check reads: a load that fails while the
	// commit file changed under it read a moving state, and is read
	// again; one that fails on an unchanged commit file is a real failure.
	check := func(who string, s *Snapshot) error {
		if barrier {
			if err := s.Durable(context.Background()); err != nil {
				return fmt.Errorf("%s: generation %d: %v", who, s.Generation(), err)
			}
		}
		for {
			before, _ := os.ReadFile(path)
			p, err := loadState(path, "/config")
			switch {
			case err != nil:
				if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
					continue
				}
				return fmt.Errorf("%s: generation %d handed out, state unusable: %v", who, s.Generation(), err)
			case p == nil || p.Generation() < s.Generation():
				return fmt.Errorf("%s: generation %d handed out before it was persisted (state %v)", who, s.Generation(), p)
			}
			return nil
		}
	}
	errs := make(chan error, 1000)
	opts := []Option{WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path),
		WithOnUpdate(func(s *Snapshot) {
			if err := check("OnUpdate", s); err != nil {
				errs <- err
			}
		})}
	if barrier {
		opts = append(opts, WithDurableBarrier())
	}
	c := newCache(t, "/config", opts...)
	var last int64
	for i := range 30 {
		v = withItem(v, fmt.Sprintf("item%02d", i%6), fmt.Sprintf("g%d", i))
		last, _ = pub.publish(v)
		s := <-c.Updates()
		if err := check("Updates", s); err != nil {
			t.Fatal(err)
		}
		if err := check("Snapshot", c.Snapshot()); err != nil {
			t.Fatal(err)
		}
	}
	waitGen(t, c, last, v)
	c.Close()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p, err := loadState(path, "/config")
	if err != nil || p.Generation() != last {
		t.Fatalf("final state %v %v, want generation %d", p, err, last)
	}
	checkItems(t, p, v)
}

// TestDurableBarrier: with WithDurableBarrier the snapshot is handed out
// while its state is written (here held at the point where the new
// contents are appended to the pack, before the commit record), and
// its Durable returns only once the write committed: until then the
// persisted state is the previous generation. A write that fails is
// retracted (the older state removed): Durable returns nil, since a
// restart then waits for ZooKeeper; a write that fails and whose
// retraction fails too leaves the older state as the restart state:
// Durable returns ErrNotPersisted, and the consumer must not show it.
func TestDurableBarrier(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, _ := testLogger(t)
	path := filepath.Join(t.TempDir(), "state")
	v := set(4, "v1")
	g1, _ := pub.publish(v)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path), WithDurableBarrier())
	waitGen(t, c, g1, v)
	if err := c.Snapshot().Durable(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	persisted := func() int64 {
		t.Helper()
		p, err := loadState(path, "/config")
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return 0
		}
		return p.Generation()
	}
	if g := persisted(); g != g1 {
		t.Fatalf("persisted generation %d, want %d", g, g1)
	}
	done := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()

	// (1) The write held before its commit point.
	reached, release := make(chan struct{}), make(chan struct{})
	hold := func(step string) error {
		if step == stepAppended {
			close(reached)
			<-release
		}
		return nil
	}
	c.store.crashAt.Store(&hold)
	v = withItem(v, "item01", "v2")
	g2, _ := pub.publish(v)
	s := waitGen(t, c, g2, v) // handed out while the write is held
	<-reached
	if err := s.Durable(done); err == nil || errors.Is(err, ErrNotPersisted) {
		t.Fatalf("generation %d durable while its write is held: %v", g2, err)
	}
	if g := persisted(); g != g1 {
		t.Fatalf("persisted generation %d while the write is held, want %d", g, g1)
	}
	close(release)
	if err := s.Durable(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if g := persisted(); g != g2 {
		t.Fatalf("persisted generation %d once durable, want %d", g, g2)
	}
	if s.Timings().Persist <= 0 {
		t.Fatalf("timings %+v: no persist", s.Timings())
	}

	// (2) The write fails, the retraction works: durable (no state).
	errCut := errors.New("write failed")
	failAt := func(steps ...string) *func(string) error {
		hook := func(step string) error {
			if slices.Contains(steps, step) {
				return errCut
			}
			return nil
		}
		return &hook
	}
	c.store.crashAt.Store(failAt(stepAppended))
	v = withItem(v, "item01", "v3")
	g3, _ := pub.publish(v)
	s = waitGen(t, c, g3, v)
	if err := s.Durable(testCtx(t)); err != nil {
		t.Fatalf("generation %d, write failed and older state removed: %v", g3, err)
	}
	if g := persisted(); g != 0 {
		t.Fatalf("persisted generation %d after a failed write, want none", g)
	}

	// (3) A good write, then one that fails with its retraction.
	c.store.crashAt.Store(nil)
	v = withItem(v, "item01", "v4")
	g4, _ := pub.publish(v)
	if err := waitGen(t, c, g4, v).Durable(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	c.store.crashAt.Store(failAt(stepAppended, stepRetract))
	v = withItem(v, "item01", "v5")
	g5, _ := pub.publish(v)
	s = waitGen(t, c, g5, v)
	if err := s.Durable(testCtx(t)); !errors.Is(err, ErrNotPersisted) || !errors.Is(err, errCut) {
		t.Fatalf("generation %d, neither written nor the older state removed: Durable %v, want ErrNotPersisted", g5, err)
	}
	if g := persisted(); g != g4 {
		t.Fatalf("persisted generation %d, want the older %d left", g, g4)
	}
	if c.Stats().PersistErrors != 2 {
		t.Fatalf("persist errors %d, want 2", c.Stats().PersistErrors)
	}
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUpdatesAfterWaitHandlesEachGenerationOnce: the snapshot Wait (or
// Snapshot) returned is not delivered again by Updates, so the loop
// the package documentation shows handles each generation once: the first
// value Updates gives after Wait returned generation 1 is generation 2. The
// same holds for the snapshot loaded from the state file.
func TestUpdatesAfterWaitHandlesEachGenerationOnce(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	pub.publish(set(2, "a"))
	log, _ := testLogger(t)
	state := t.TempDir() + "/state"
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	s1 := waitGen(t, c, 1, nil)
	next := func() *Snapshot {
		t.Helper()
		select {
		case s := <-c.Updates():
			return s
		case <-testCtx(t).Done():
			t.Fatal("no update")
			return nil
		}
	}
	pub.publish(set(2, "b"))
	if s := next(); s == s1 || s.Generation() != 2 {
		t.Fatalf("Updates delivered generation %d after Wait returned generation %d, want 2", s.Generation(), s1.Generation())
	}
	_ = c.Close()

	// Restarted from the state file: the persisted generation 2 is what
	// Wait returns at once; Updates does not deliver it again. Snapshot
	// before it is a look only and takes nothing from Updates.
	c = newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(state))
	if s := c.Snapshot(); s == nil || s.Generation() != 2 {
		t.Fatalf("persisted snapshot %v", s)
	}
	s2, err := c.Wait(testCtx(t), 0)
	if err != nil || s2.Generation() != 2 {
		t.Fatalf("Wait after a restart: %v, %v", s2, err)
	}
	pub.publish(set(2, "c"))
	s3 := next()
	if s3 == s2 || s3.Generation() != 3 {
		t.Fatalf("Updates delivered generation %d after Wait returned generation 2, want 3", s3.Generation())
	}

	// Snapshot from another goroutine (a status page) never takes a
	// snapshot from the one receiving Updates (the agent's loop).
	pub.publish(set(2, "d"))
	ctx := testCtx(t)
	for s := c.Snapshot(); s == nil || s.Generation() < 4; s = c.Snapshot() {
		select {
		case <-ctx.Done():
			t.Fatal("generation 4 never held")
		case <-time.After(10 * time.Millisecond): // polls a look; no event to await without taking Updates
		}
	}
	if s := next(); s.Generation() != 4 {
		t.Fatalf("Updates delivered generation %d after a Snapshot look at generation 4, want 4", s.Generation())
	}
}

// TestStateChangesOnlyTransitions: a live cache that follows publishes
// does not report live -> live for every generation (Updates delivers
// them); State carries the generation all the same.
func TestStateChangesOnlyTransitions(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	pub.publish(set(1, "a"))
	applied := make(chan int64, 100)
	h := &recordHandler{onMsg: func(r slog.Record) {
		if r.Message != "applied" {
			return
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "generation" {
				applied <- a.Value.Int64()
			}
			return true
		})
	}}
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(slog.New(h)))
	waitState(t, c, "live", isLive)
	// Everything up to Live has been delivered or replaced; take what is
	// pending.
	select {
	case <-c.StateChanges():
	default:
	}
	for g := int64(2); g <= 3; g++ {
		pub.publish(set(1, fmt.Sprintf("g%d", g)))
		// "applied" is logged after the cycle reported Live: the state
		// the generation would have offered is in the slot by now.
		for got := int64(0); got != g; {
			select {
			case got = <-applied:
			case <-testCtx(t).Done():
				t.Fatalf("generation %d never applied", g)
			}
		}
	}
	select {
	case st := <-c.StateChanges():
		t.Fatalf("StateChanges delivered %v, a new generation of a live cache", st)
	default:
	}
	if st := c.State(); st.State != StateLive || st.Generation != 3 {
		t.Fatalf("State() = %v, want live at generation 3", st)
	}
}

// recordHandler calls onMsg for every record at any level.
type recordHandler struct {
	mu    sync.Mutex
	onMsg func(slog.Record)
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onMsg(r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestStateInfoString(t *testing.T) {
	for _, tc := range []struct {
		st   StateInfo
		want string
	}{
		{StateInfo{State: StateLive, Generation: 7}, "live, generation 7"},
		{StateInfo{State: StateStale, Generation: 7, Err: ErrDisconnected}, "stale, generation 7: cache: no ZooKeeper session"},
		{StateInfo{State: StateStarting, Err: ErrRootMissing}, "starting, no snapshot: cache: config root does not exist"},
	} {
		if got := tc.st.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// TestDefaultLoggerWarnOnly: without WithLogger the cache logs WARN and
// above through slog.Default()'s handler, and nothing below: a root that
// does not exist is a WARN the application sees, the routine INFO lines
// (state transitions) are not written.
func TestDefaultLoggerWarnOnly(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	var mu sync.Mutex
	var levels []string
	warned := make(chan struct{}, 1)
	h := &recordHandler{onMsg: func(r slog.Record) {
		mu.Lock()
		defer mu.Unlock()
		levels = append(levels, r.Level.String()+" "+r.Message)
		if r.Level == slog.LevelWarn {
			select {
			case warned <- struct{}{}:
			default:
			}
		}
	}}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	c, err := New(context.Background(), "/nothing-here", WithServers(zkc.Addrs(), 4*time.Second))
	slog.SetDefault(old)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	waitState(t, c, "root missing", func(st StateInfo) bool { return errors.Is(st.Err, ErrRootMissing) })
	if c.log.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("the default logger writes INFO")
	}
	select {
	case <-warned:
	case <-testCtx(t).Done():
		t.Fatal("no WARN reached slog.Default")
	}
	mu.Lock()
	got := strings.Join(levels, "\n")
	mu.Unlock()
	if !strings.Contains(got, "WARN not in sync with ZooKeeper; no snapshot to serve yet") || strings.Contains(got, "INFO") || strings.Contains(got, "DEBUG") {
		t.Fatalf("slog.Default got:\n%s", got)
	}
}

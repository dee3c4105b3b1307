package agent

import (
	"log/slog"
	"math"
	"testing"
)

func TestAutoMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		data int64
		want int64
	}{
		{0, 16 * mib},
		{-5, 16 * mib},
		{400 << 10, 16*mib + 6*(400<<10)}, // 100 × 4 KiB: 18.3 MiB
		{50 * mib, 316 * mib},
		{math.MaxInt64 / 2, math.MaxInt64},
	} {
		if got := autoMemoryLimit(tt.data); got != tt.want {
			t.Errorf("autoMemoryLimit(%d) = %d, want %d", tt.data, got, tt.want)
		}
	}
	// Measured (confbench footprint, linux/amd64): 5.5-5.9 MiB of the
	// runtime's memory is not heap, and the live heap is 3.7-4.3 MiB plus
	// what the set keeps alive, at most about 5 times its size. The heap
	// goal the limit leaves must stay well above that live heap, or the
	// collector runs back to back.
	const nonHeap, ownLive = 6 * mib, 4 * mib
	// A small set: GOGC's own goal (twice the live heap) fits under the
	// limit, so the collector is paced by GOGC, not by the limit (12 MiB
	// did not leave it: the collector ran at every publish, 3.5 times the
	// CPU; confbench latency).
	if goal := autoMemoryLimit(20<<10) - nonHeap; goal < 2*(ownLive+5*(20<<10)) {
		t.Errorf("autoMemoryLimit(20 KiB) = %d leaves a heap of %d, below GOGC's goal for a live heap of %d",
			autoMemoryLimit(20<<10), goal, ownLive+5*(20<<10))
	}
	for data := int64(0); data < 1<<40; data = data*4 + 1024 {
		live := ownLive + 5*data
		if goal := autoMemoryLimit(data) - nonHeap; goal < live+live/5 {
			t.Errorf("autoMemoryLimit(%d) = %d leaves a heap of %d for a live heap of %d: would thrash",
				data, autoMemoryLimit(data), goal, live)
		}
	}
}

func TestMemLimiter(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var calls []int64
	set := func(n int64) int64 { calls = append(calls, n); return 0 }
	t.Run("auto", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		calls = nil
		m := newMemLimiter(log, MemoryLimitAuto, set)
		if len(calls) != 0 {
			t.Fatalf("limit set before any snapshot: %v", calls)
		}
		m.observe(1 << 20)
		m.observe(1 << 20) // unchanged: not set again
		m.observe(2 << 20)
		want := []int64{autoMemoryLimit(1 << 20), autoMemoryLimit(2 << 20)}
		if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
			t.Fatalf("limits set %v, want %v", calls, want)
		}
		m.configure(64 << 20) // reconfigured to a fixed limit
		m.observe(3 << 20)
		m.configure(MemoryLimitOff)
		if got := calls[2:]; len(got) != 2 || got[0] != 64<<20 || got[1] != math.MaxInt64 {
			t.Fatalf("after fixed and off: %v", got)
		}
		m.configure(MemoryLimitAuto) // back to auto: sized from the last snapshot
		if got := calls[len(calls)-1]; got != autoMemoryLimit(3<<20) {
			t.Fatalf("back to auto: %d", got)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		calls = nil
		m := newMemLimiter(log, 32<<20, set)
		m.observe(100 << 20)
		if len(calls) != 1 || calls[0] != 32<<20 {
			t.Fatalf("limits set %v", calls)
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		calls = nil
		m := newMemLimiter(log, MemoryLimitOff, set)
		m.observe(100 << 20)
		if len(calls) != 0 {
			t.Fatalf("limits set %v", calls)
		}
	})
	t.Run("GOMEMLIMIT wins", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "20MiB")
		for _, setting := range []int64{MemoryLimitAuto, 64 << 20, MemoryLimitOff} {
			calls = nil
			m := newMemLimiter(log, setting, set)
			m.observe(1 << 20)
			m.configure(128 << 20)
			if len(calls) != 0 {
				t.Fatalf("setting %d: limits set %v despite GOMEMLIMIT", setting, calls)
			}
		}
	})
}

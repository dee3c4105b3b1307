package agent

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestAutoMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		data int64
		want int64
	}{
		{0, 14 * mib},
		{-5, 14 * mib},
		{400 << 10, 14 * mib}, // 100 × 4 KiB: the floor
		{50 * mib, 300 * mib},
		{math.MaxInt64 / 2, math.MaxInt64},
	} {
		if got := autoMemoryLimit(tt.data, 0); got != tt.want {
			t.Errorf("autoMemoryLimit(%d, 0) = %d, want %d", tt.data, got, tt.want)
		}
	}
	// A render's allocation adds to the set's part, whatever the set.
	for _, tt := range []struct{ data, render, want int64 }{
		{20 << 10, 45 << 20, 6*(20<<10) + 45<<20},
		{20 << 10, 60 << 10, 14 * mib}, // 20 × 1 KiB and a small template: the floor
		{0, -1, 14 * mib},
		{1 << 20, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 / 2, 1, math.MaxInt64},
	} {
		if got := autoMemoryLimit(tt.data, tt.render); got != tt.want {
			t.Errorf("autoMemoryLimit(%d, %d) = %d, want %d", tt.data, tt.render, got, tt.want)
		}
	}
	// Measured (confbench latency, the agent's debug "memory" line,
	// linux/amd64): 5.8-6.3 MiB of the runtime's memory is not heap, the
	// agent's own live heap is 0.7-0.8 MB (20 × 1 KiB), and the set keeps
	// at most two snapshots alive besides what a render holds (which the
	// renders' part covers: what a render allocated bounds it;
	// docs/bench/latency-rssheap-2026-11-27b). Margins on both.
	const nonHeap, ownLive = 7 * mib, 1 * mib
	// A small set: GOGC's own goal fits under the limit with room to spare,
	// so the collector is paced by GOGC, not by the limit (a limit that
	// left no room ran the collector at every publish, 3.5 times the CPU;
	// confbench latency). The runtime's smallest goal is 4 MiB of heap.
	for _, data := range []int64{0, 20 << 10, 80 << 10, 400 << 10} {
		if goal := autoMemoryLimit(data, 0) - nonHeap; goal < 3*mib/2+max(4*mib, 2*(ownLive+2*data)) {
			t.Errorf("autoMemoryLimit(%d, 0) = %d leaves a heap of %d, not above GOGC's goal for a live heap of %d",
				data, autoMemoryLimit(data, 0), goal, ownLive+2*data)
		}
	}
	for data := int64(0); data < 1<<40; data = data*4 + 1024 {
		live := ownLive + 2*data
		if goal := autoMemoryLimit(data, 0) - nonHeap; goal < live+live/5 {
			t.Errorf("autoMemoryLimit(%d, 0) = %d leaves a heap of %d for a live heap of %d: would thrash",
				data, autoMemoryLimit(data, 0), goal, live)
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
		// Sets above the floor (6 × 3 MiB > 14 MiB), so each is a new limit.
		m.observe(3<<20, 0)
		m.observe(3<<20, 0) // unchanged: not set again
		m.observe(4<<20, 0)
		m.observe(4<<20, 40<<20) // a render allocated 40 MiB: room for it
		want := []int64{autoMemoryLimit(3<<20, 0), autoMemoryLimit(4<<20, 0), autoMemoryLimit(4<<20, 40<<20)}
		if len(calls) != 3 || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
			t.Fatalf("limits set %v, want %v", calls, want)
		}
		m.configure(96 << 20) // reconfigured to a fixed limit
		m.observe(3<<20, 1<<20)
		m.configure(MemoryLimitOff)
		if got := calls[3:]; len(got) != 2 || got[0] != 96<<20 || got[1] != math.MaxInt64 {
			t.Fatalf("after fixed and off: %v", got)
		}
		m.configure(MemoryLimitAuto) // back to auto: sized from the last snapshot and renders
		if got := calls[len(calls)-1]; got != autoMemoryLimit(3<<20, 1<<20) {
			t.Fatalf("back to auto: %d", got)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		calls = nil
		m := newMemLimiter(log, 32<<20, set)
		m.observe(100<<20, 100<<20)
		if len(calls) != 1 || calls[0] != 32<<20 {
			t.Fatalf("limits set %v", calls)
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		calls = nil
		m := newMemLimiter(log, MemoryLimitOff, set)
		m.observe(100<<20, 100<<20)
		if len(calls) != 0 {
			t.Fatalf("limits set %v", calls)
		}
	})
	t.Run("GOMEMLIMIT wins", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "20MiB")
		for _, setting := range []int64{MemoryLimitAuto, 64 << 20, MemoryLimitOff} {
			calls = nil
			m := newMemLimiter(log, setting, set)
			m.observe(1<<20, 1<<20)
			m.configure(128 << 20)
			if len(calls) != 0 {
				t.Fatalf("setting %d: limits set %v despite GOMEMLIMIT", setting, calls)
			}
		}
	})
}

// TestRenderBytes: the renderer reports what its template targets' last
// renders allocated (at least the output each built), which the automatic
// memory limit adds to its size so that a large render does not make the
// collector run back to back; a dir target renders nothing.
func TestRenderBytes(t *testing.T) {
	out := t.TempDir()
	dir := TargetSpec{Name: "d", Kind: KindDir, Dest: filepath.Join(out, "d"), Mode: 0o644, UID: -1, GID: -1}
	specs := []TargetSpec{dir,
		{Name: "t1", Kind: KindTemplate, Template: `{{ range names }}{{ item . }}{{ end }}`, Dest: filepath.Join(out, "t1"), Mode: 0o644, UID: -1, GID: -1},
		{Name: "t2", Kind: KindTemplate, Template: `{{ range names }}{{ item . | b64enc }}{{ end }}`, Dest: filepath.Join(out, "t2"), Mode: 0o644, UID: -1, GID: -1},
	}
	r, err := NewRenderer(specs, ApplyAll, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.renderBytes(); n != 0 {
		t.Fatalf("before any render: %d", n)
	}
	items := map[string][]byte{}
	for i := range 20 {
		items[fmt.Sprintf("item%02d", i)] = bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
	}
	if o := r.Apply(context.Background(), NewSnapshot(1, items)); o.Err != nil {
		t.Fatal(o.Err)
	}
	var outputs int64
	for _, name := range []string{"t1", "t2"} {
		fi, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs += fi.Size()
	}
	if n := r.renderBytes(); n < outputs {
		t.Fatalf("renders allocated %d bytes, less than their outputs (%d bytes)", n, outputs)
	}
	if err := r.configure([]TargetSpec{dir}, ApplyAll); err != nil {
		t.Fatal(err)
	}
	if o := r.Apply(context.Background(), NewSnapshot(2, items)); o.Err != nil {
		t.Fatal(o.Err)
	}
	if n := r.renderBytes(); n != 0 {
		t.Fatalf("a dir target only: renders allocated %d bytes, want 0", n)
	}
}

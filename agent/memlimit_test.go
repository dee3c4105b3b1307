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
		{0, 16 * mib},
		{-5, 16 * mib},
		{400 << 10, 16*mib + 6*(400<<10)}, // 100 × 4 KiB: 18.3 MiB
		{50 * mib, 316 * mib},
		{math.MaxInt64 / 2, math.MaxInt64},
	} {
		if got := autoMemoryLimit(tt.data, 0); got != tt.want {
			t.Errorf("autoMemoryLimit(%d, 0) = %d, want %d", tt.data, got, tt.want)
		}
	}
	// A render's allocation comes on top, whatever the set.
	for _, tt := range []struct{ data, render, want int64 }{
		{20 << 10, 45 << 20, 16*mib + 6*(20<<10) + 45<<20},
		{0, -1, 16 * mib},
		{1 << 20, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 / 2, 1, math.MaxInt64},
	} {
		if got := autoMemoryLimit(tt.data, tt.render); got != tt.want {
			t.Errorf("autoMemoryLimit(%d, %d) = %d, want %d", tt.data, tt.render, got, tt.want)
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
	if goal := autoMemoryLimit(20<<10, 0) - nonHeap; goal < 2*(ownLive+5*(20<<10)) {
		t.Errorf("autoMemoryLimit(20 KiB, 0) = %d leaves a heap of %d, below GOGC's goal for a live heap of %d",
			autoMemoryLimit(20<<10, 0), goal, ownLive+5*(20<<10))
	}
	for data := int64(0); data < 1<<40; data = data*4 + 1024 {
		live := ownLive + 5*data
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
		m.observe(1<<20, 0)
		m.observe(1<<20, 0) // unchanged: not set again
		m.observe(2<<20, 0)
		m.observe(2<<20, 40<<20) // a render allocated 40 MiB: room for it
		want := []int64{autoMemoryLimit(1<<20, 0), autoMemoryLimit(2<<20, 0), autoMemoryLimit(2<<20, 40<<20)}
		if len(calls) != 3 || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
			t.Fatalf("limits set %v, want %v", calls, want)
		}
		m.configure(64 << 20) // reconfigured to a fixed limit
		m.observe(3<<20, 1<<20)
		m.configure(MemoryLimitOff)
		if got := calls[3:]; len(got) != 2 || got[0] != 64<<20 || got[1] != math.MaxInt64 {
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

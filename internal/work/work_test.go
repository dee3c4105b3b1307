package work

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestParallelRunsEveryIndexOnce(t *testing.T) {
	var seen [100]atomic.Int32
	var running, peak atomic.Int32
	err := Parallel(context.Background(), len(seen), 4, func(ctx context.Context, i int) error {
		if r := running.Add(1); r > peak.Load() {
			peak.Store(r)
		}
		defer running.Add(-1)
		seen[i].Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("index %d ran %d times", i, n)
		}
	}
	if p := peak.Load(); p > 4 {
		t.Fatalf("%d calls ran at once, want at most 4", p)
	}
}

func TestParallelFirstErrorStopsNewCalls(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := Parallel(context.Background(), 1000, 1, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("%d calls, want 4 (none after the error)", n)
	}
}

func TestParallelCancelledIsNotSuccess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Parallel(ctx, 10, 1, func(ctx context.Context, i int) error {
		if i == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled: work was left undone", err)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

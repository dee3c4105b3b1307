package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayGrowsToCapWithinJitter(t *testing.T) {
	p := Policy{Base: time.Second, Max: 30 * time.Second}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i, w := range want {
		n := i + 1
		if got := p.Ceiling(n); got != w*time.Second {
			t.Errorf("Ceiling(%d) = %v, want %v", n, got, w*time.Second)
		}
		for range 200 {
			d := p.Delay(n)
			if d < w*time.Second/2 || d > w*time.Second {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", n, d, w*time.Second/2, w*time.Second)
			}
		}
	}
}

func TestDelayIsJittered(t *testing.T) {
	p := Policy{Base: time.Second, Max: time.Second}
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[p.Delay(1)] = true
	}
	if len(seen) < 50 {
		t.Fatalf("100 delays took only %d distinct values: not jittered", len(seen))
	}
}

func TestTimerResetStartsOver(t *testing.T) {
	b := NewTimer(Policy{Base: time.Hour, Max: 8 * time.Hour})
	defer b.Reset()
	for range 3 {
		b.Schedule()
	}
	if d := b.Schedule(); d < 4*time.Hour {
		t.Fatalf("fourth delay %v, want at least 4h", d)
	}
	b.Reset()
	if b.Attempts() != 0 {
		t.Fatalf("Attempts after Reset = %d", b.Attempts())
	}
	if d := b.Schedule(); d > time.Hour {
		t.Fatalf("first delay after Reset %v, want at most 1h", d)
	}
}

func TestTimerFires(t *testing.T) {
	b := NewTimer(Policy{Base: time.Millisecond, Max: time.Millisecond})
	b.Schedule()
	<-b.C() // a timer that never fires hangs the test until its deadline
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Policy{Base: time.Hour, Max: time.Hour}).Sleep(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v", err)
	}
}

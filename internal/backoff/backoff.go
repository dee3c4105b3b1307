// Package backoff is the one retry-delay policy of zkconf: delays grow
// exponentially from a base to a cap, and each is drawn at random from
// [d/2, d], so that a fleet retrying the same failure (a lost server, a
// torn read) spreads its retries instead of arriving together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/zkconf/zkconf/internal/work"
)

// Policy is an exponential backoff: retry n (from 1) waits
// d = Base·2^(n-1), capped at Max, jittered into [d/2, d].
type Policy struct {
	// Base is the undrawn delay of the first retry.
	Base time.Duration
	// Max caps the undrawn delay.
	Max time.Duration
}

// Ceiling is the undrawn delay of retry n: the largest Delay(n) can be.
func (p Policy) Ceiling(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Delay returns the delay before retry n (n ≥ 1).
func (p Policy) Delay(n int) time.Duration {
	d := p.Ceiling(n)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits Delay(n), or returns ctx's error if ctx ends first.
func (p Policy) Sleep(ctx context.Context, n int) error {
	return work.Sleep(ctx, p.Delay(n))
}

// Timer is a resettable retry timer for an event loop: each Schedule arms
// the next delay of its Policy, Reset starts again from the first. It is
// not safe for concurrent use.
type Timer struct {
	p Policy
	n int
	t *time.Timer
}

// NewTimer returns a stopped Timer.
func NewTimer(p Policy) *Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Timer{p: p, t: t}
}

// C fires when the scheduled delay has passed.
func (b *Timer) C() <-chan time.Time { return b.t.C }

// Schedule arms the timer with the next delay and returns it.
func (b *Timer) Schedule() time.Duration {
	b.n++
	d := b.p.Delay(b.n)
	b.t.Reset(d)
	return d
}

// Reset stops the timer and makes the next Schedule use the first delay.
func (b *Timer) Reset() {
	b.n = 0
	b.t.Stop()
}

// Attempts is how many delays were scheduled since the last Reset.
func (b *Timer) Attempts() int { return b.n }

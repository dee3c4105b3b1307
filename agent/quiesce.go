package agent

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// quiescer coalesces bursts of generations, as consul-template's wait
// does: a generation that arrives starts (or extends) a quiet period of
// min; when the period passes with nothing newer, or max has passed since
// the first generation of the burst, the daemon applies the cache's
// newest snapshot. Only the moment of the apply changes: the snapshot
// applied is always the newest the cache holds, so a newer generation is
// never followed by an older one, and the last of a burst is always
// applied (after at most max).
type quiescer struct {
	min, max time.Duration
	timer    *time.Timer
	first    time.Time // arrival of the burst's first generation; zero when none is waiting
}

func newQuiescer(minWait, maxWait time.Duration) *quiescer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	q := &quiescer{timer: t}
	q.configure(minWait, maxWait)
	return q
}

// configure sets the window; a max below min is taken as min. A burst
// already waiting keeps its start and gets the new deadlines at its next
// arrival (or fires on the timer already set).
func (q *quiescer) configure(minWait, maxWait time.Duration) {
	q.min, q.max = minWait, max(maxWait, minWait)
	if q.min <= 0 && !q.first.IsZero() {
		// Turned off while a burst waits: apply it now.
		q.timer.Reset(0)
	}
}

// arrived records a new generation and reports whether to apply it at
// once (no wait configured).
func (q *quiescer) arrived(snap Snapshot, log *slog.Logger) bool {
	if q.min <= 0 {
		return true
	}
	now := time.Now()
	if q.first.IsZero() {
		q.first = now
	}
	wait := min(q.min, q.max-now.Sub(q.first))
	q.timer.Reset(max(wait, 0))
	if snap != nil {
		log.Debug("generation arrived, waiting for quiet", "generation", snap.Generation(), "wait", wait)
	}
	return false
}

// C fires when the waiting burst is to be applied.
func (q *quiescer) C() <-chan time.Time { return q.timer.C }

// fired ends the burst: the next generation starts a new one.
func (q *quiescer) fired() { q.first = time.Time{} }

func (q *quiescer) stop() { q.timer.Stop() }

// setReloadSplay sets the reload splay (Options.ReloadSplay).
func (r *Renderer) setReloadSplay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadSplay = d
}

// stopOn makes a splay in progress end when stop closes (the daemon
// shutting down): the reloads then run at once, since the new output is
// already in place and its service should load it. A render in progress
// is interrupted (renderContext): nothing of its generation is in place
// yet.
func (r *Renderer) stopOn(stop <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop = stop
}

// splay sleeps a random duration in [0, reloadSplay) before the reloads
// of a new output (some target of ts changed and has a reload command), so
// that a fleet receiving one publish does not restart its services in the
// same second. Retried reloads are not splayed: their backoff is already
// jittered, and a failed reload leaves a service on its old configuration.
// Check commands and the swap are never delayed: the splay comes after
// them. Called with r.mu held.
func (r *Renderer) splay(ctx context.Context, ts []*target, changed map[*target]bool) {
	if r.reloadSplay <= 0 {
		return
	}
	due := false
	for _, t := range ts {
		if changed[t] && t.spec.Reload != "" {
			due = true
			break
		}
	}
	if !due {
		return
	}
	d := rand.N(r.reloadSplay)
	r.log.Debug("splaying reloads", "delay", d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	case <-r.stop:
	}
}

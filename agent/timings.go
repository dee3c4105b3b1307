package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkconf/zkconf/cache"
)

// applyPhases is how long one Apply spent staging (render and write the
// staged output, every target), running check commands, waiting for the
// snapshot's state to be durable (what of the cache's persist staging and
// checking did not cover), and swapping (the pending-reload file and the
// commits), summed over targets. A few clock reads per apply: always on.
type applyPhases struct {
	stage, check, durable, swap time.Duration
}

// lap adds the time since start to *d and returns now.
func (p *applyPhases) lap(d *time.Duration, start time.Time) time.Time {
	now := time.Now()
	*d += now.Sub(start)
	return now
}

// logTimings logs, at debug level, where the time between the cache's
// cycle and the end of the apply of snap went: the cache's fetch (reads,
// verification) and persist, then the renderer's phases. Latency
// benchmarks read these lines; with debug off it costs one Enabled call.
func (d *Daemon) logTimings(ctx context.Context, s Snapshot, applied time.Time) {
	snap, ok := s.(*cache.Snapshot)
	if !ok || !d.log.Enabled(ctx, slog.LevelDebug) {
		return // several roots: each root's fetch is its cache's
	}
	ft := snap.Timings()
	if ft.Started.IsZero() {
		return // loaded from the state file: nothing was fetched
	}
	d.r.mu.Lock()
	p := d.r.phases
	d.r.mu.Unlock()
	d.log.Debug("apply timings", "generation", snap.Generation(),
		"cycle_start", ft.Started, "applied", applied, "items_read", ft.Read,
		"fetch", ft.Fetched, "verify", ft.Verify, "persist", ft.Persist,
		"stage", p.stage, "check", p.check, "durable_wait", p.durable, "swap", p.swap)
}

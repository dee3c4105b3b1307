package agent

import (
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

// appliedAttrs are the attributes of the "applied" line: the generation,
// the targets whose output changed, the apply's duration, and where the
// time between the cache's cycle and the end of the apply went, so that
// an operator (and confbench latency, which reads this line) sees it at
// the default level without a separate debug line: when the cycle started
// (cycle_start: a watch fired), the items it read (items_read), the
// fetch (fetch: root and item reads, verification included), the
// verification alone (verify, summed over reads in flight), the state
// file (persist), and the renderer's stage, check, durable_wait and swap.
// The fetch and persist are the cache's: a snapshot of several roots (each
// root's fetch is its cache's) or one loaded from the state file (nothing
// was fetched) logs only the renderer's phases.
func appliedAttrs(snap Snapshot, changed []string, took time.Duration, p applyPhases) []slog.Attr {
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs, slog.Int64("generation", snap.Generation()), slog.Any("changed", changed),
		slog.Duration("duration", took))
	if cs, ok := snap.(*cache.Snapshot); ok {
		if ft := cs.Timings(); !ft.Started.IsZero() {
			attrs = append(attrs, slog.Time("cycle_start", ft.Started), slog.Int("items_read", ft.Read),
				slog.Duration("fetch", ft.Fetched), slog.Duration("verify", ft.Verify),
				slog.Duration("persist", ft.Persist))
		}
	}
	return append(attrs, slog.Duration("stage", p.stage), slog.Duration("check", p.check),
		slog.Duration("durable_wait", p.durable), slog.Duration("swap", p.swap))
}

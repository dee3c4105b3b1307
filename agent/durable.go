package agent

import (
	"context"
	"fmt"

	"github.com/zkconf/zkconf/cache"
)

// durableSnapshot is a Snapshot that may be handed to the renderer while
// its state is still being written (cache.WithDurableBarrier):
// *cache.Snapshot, and the daemon's combination of several roots. Durable
// returns once no restart can start from an older generation, or an
// error when that cannot be had (the renderer then shows nothing of the
// snapshot). A Snapshot without the method counts as durable.
type durableSnapshot interface {
	Durable(ctx context.Context) error
}

var (
	_ durableSnapshot = (*cache.Snapshot)(nil)
	_ durableSnapshot = (*rootsSnapshot)(nil)
)

// durable is the barrier of applyRun's commit phase: it waits for the
// snapshot's state to be durable. A failure is not the generation's
// fault: the unit is aborted (nothing of the generation shows, the
// outputs in place stay) and retried.
func (a *applyRun) durable(ctx context.Context) {
	d, ok := a.snap.(durableSnapshot)
	if !ok {
		return
	}
	if err := d.Durable(ctx); err != nil {
		a.errs = append(a.errs, fmt.Errorf("generation %d not applied yet, retried: its state is not durable: %w", a.gen, err))
	}
}

// Durable waits for every root snapshot s holds (each root's newest and
// the cut's): each root's cache writes its own state.
func (s *rootsSnapshot) Durable(ctx context.Context) error {
	for _, name := range s.names {
		if err := s.latest[name].Durable(ctx); err != nil {
			return fmt.Errorf("root %s: %w", name, err)
		}
		if c := s.cut[name]; c != s.latest[name] {
			if err := c.Durable(ctx); err != nil {
				return fmt.Errorf("root %s: %w", name, err)
			}
		}
	}
	return nil
}

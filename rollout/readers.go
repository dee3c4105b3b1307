package rollout

import (
	"context"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/publish"
)

// Readers is the publish option that makes a publisher refuse a manifest
// format the agents f expects cannot read (publish.ErrOldAgents), judged
// by fleet.ReadersBelow. publish does not read agent status itself: the
// writer of generations does not depend on the reader of the fleet.
func Readers(f *fleet.Fleet) publish.Option {
	return publish.WithReaders(func(ctx context.Context, format int) ([]publish.OldAgent, error) {
		agents, err := f.ReadersBelow(ctx, format)
		if err != nil {
			return nil, err
		}
		old := make([]publish.OldAgent, 0, len(agents))
		for _, a := range agents {
			version, maxFormat, _ := a.Reads()
			old = append(old, publish.OldAgent{ID: a.ID, Version: version, MaxFormat: maxFormat})
		}
		return old, nil
	})
}

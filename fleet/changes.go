package fleet

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zkconf/zkconf/internal/aclmodel"
)

// Changes calls changed once at the start and then after every change of
// the root's fleet seen through ZooKeeper watches (no polling): a status node
// created, changed or deleted, the agent registry changed, or the root
// node (its live generation) changed. It reads no node's data: status
// nodes are followed with exists watches, and on a tree with an access
// policy only those named after an agent identity of the policy. changed runs on the caller's
// goroutine, one call at a time; a burst of changes may give one call. It
// returns when ctx ends (with ctx.Err()), when changed returns an error
// (that error), or when a watch cannot be set.
func (f *Fleet) Changes(ctx context.Context, changed func() error) error {
	conn, p := f.cl.Conn(), f.paths
	// The trust rules only say which names are foreign (not followed);
	// a reader that cannot read them follows every node. Status nodes
	// are followed with exists watches: no data is read.
	trust, err := readTrust(ctx, conn, p)
	if err != nil {
		trust = aclmodel.Trust{}
	}
	w := newWaiter(conn, p, trust)
	w.statOnly = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rootDirty atomic.Bool
	rootDirty.Store(true)
	for {
		if err := w.refreshChildren(ctx); err != nil {
			return err
		}
		if w.takeRegistryDirty() {
			if err := w.refreshRegistry(ctx); err != nil {
				return err
			}
		}
		if rootDirty.Swap(false) {
			_, _, ev, err := conn.ExistsW(p.Root)
			if err != nil {
				return fmt.Errorf("follow %s: %w", p.Root, err)
			}
			go func() {
				select {
				case <-ctx.Done():
				case <-ev:
					rootDirty.Store(true)
					w.signal()
				}
			}()
		}
		if err := changed(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.wake:
		}
	}
}

package fleet

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
)

// Changes calls changed once at the start and then after every change of
// root's fleet seen through ZooKeeper watches (no polling): a status node
// created, changed or deleted, the agent registry changed, or the root
// node (its live generation) changed. changed runs on the caller's
// goroutine, one call at a time; a burst of changes may give one call. It
// returns when ctx ends (with ctx.Err()), when changed returns an error
// (that error), or when a watch cannot be set.
func Changes(ctx context.Context, conn *zk.Conn, root, meta string, changed func() error) error {
	p := paths(root, meta)
	// Trust only decides what readNode reports, which Changes does not
	// use: an open trust spares the ACL reads.
	w := &waiter{conn: conn, p: p, trust: access.Trust{}, agents: map[string]Agent{}, seen: map[string]bool{},
		registered: map[string]bool{}, regDirty: true, acls: map[string]aclSeen{}, watched: map[string]bool{},
		wake: make(chan struct{}, 1)}
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

package publish

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// DriverLease is a rollout driver's liveness node
// (rollout-driver/<rollout id>): ephemeral, with the rollout record's ACL
// (publishers only). Publisher.Rollout reports a driver alive
// (RolloutState.DriverAlive) while its node exists; a rollout started
// with a driver whose node is gone has lost its driver.
type DriverLease struct {
	p    *Publisher
	node string
	acl  []zk.ACL
}

// HoldDriver creates the liveness node of the driver of rollout
// rolloutID. The caller releases it when it stops driving.
func (p *Publisher) HoldDriver(ctx context.Context, rolloutID string) (*DriverLease, error) {
	if rolloutID == "" {
		return nil, &InputError{Err: fmt.Errorf("no rollout id to drive")}
	}
	acl, _, err := p.conn().GetACL(p.paths.Rollout())
	if err != nil {
		return nil, fmt.Errorf("read the ACL of the rollout record %s: %w", p.paths.Rollout(), err)
	}
	if err := p.ensurePath(ctx, p.paths.RolloutDriver(), acl); err != nil {
		return nil, err
	}
	l := &DriverLease{p: p, node: p.paths.RolloutDriver() + "/" + rolloutID, acl: acl}
	return l, p.createLiveness(ctx, l.node, []byte(p.name()), acl)
}

// Keep creates the node again when it is gone (an expired session takes
// it), so that a driver still running is not reported gone. Best effort:
// a failure is logged.
func (l *DriverLease) Keep(ctx context.Context) {
	if st, err := l.p.exists(ctx, l.node); err == nil && st == nil {
		if err := l.p.createLiveness(ctx, l.node, []byte(l.p.name()), l.acl); err != nil {
			l.p.log.Warn("could not recreate the rollout driver node", "path", l.node, "error", err)
		}
	}
}

// Release deletes the node, best effort (it goes with the session
// anyway).
func (l *DriverLease) Release(ctx context.Context) { l.p.dropLiveness(ctx, l.node) }

// CheckFence returns an error wrapping ErrFenced when node, the fence of
// a leader (Request.Fence), does not exist: for a write that is not one
// transaction with the fence (Widen), checked just before it.
func (p *Publisher) CheckFence(ctx context.Context, node string) error {
	return p.checkFence(ctx, node)
}

package access

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
)

// RepairWithHook is Repair with a hook run before each SetACL, for tests
// that need a concurrent change at an exact point.
func RepairWithHook(ctx context.Context, conn *zk.Conn, paths layout.Paths, p Policy, hook func(path string)) (Report, error) {
	e, err := newEngine(conn, paths, p)
	if err != nil {
		return Report{}, err
	}
	e.beforeSetACL = hook
	return e.repair(ctx)
}

// StatusDocument exposes the status-ACL document of a policy.
func (p Policy) StatusDocument() []byte { return p.statusDocument() }

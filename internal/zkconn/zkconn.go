// Package zkconn dials ZooKeeper the way every zkconf component needs it:
// with state tracked through the client's synchronous event callback (its
// 6-slot event channel drops events), session expiry made visible (the
// go-zookeeper client silently opens a new session after expiry), the
// library's logging routed to slog, and helpers that give the client's
// blocking calls a context.
package zkconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkconf/zkconf/zkclient"
)

// IsRecoverable reports whether err is a ZooKeeper connection error after
// which the handle is still valid (the recoverable class: the connection
// was lost, the session may live on): the
// outcome of a write in flight is unknown and must be checked, not assumed.
func IsRecoverable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// IsFatal reports whether err means the session or handle is gone (the
// fatal class): expiry, authentication failure, or a closed handle.
func IsFatal(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zkclient.ErrAuthFailed)
}

// Call runs fn, a blocking client call, and returns its error or ctx's,
// whichever comes first. The client has no per-request deadline; when ctx
// ends first fn keeps running in the background until the client gives up
// on it (it fails at the latest when the session times out or the
// connection closes).
func Call(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// EnsurePath creates p and its missing parents as persistent nodes with acl.
// It is idempotent: NodeExists is success. Existing nodes are looked up
// before any create, because under ACLs a create of an existing node whose
// parent denies CREATE fails with NoAuth rather than NodeExists.
func EnsurePath(conn *zk.Conn, p string, acl []zk.ACL) error {
	if p == "" || p == "/" {
		return nil
	}
	if ok, _, err := conn.Exists(p); err == nil && ok {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		if ok, _, err := conn.Exists(cur); err == nil && ok {
			continue
		}
		if _, err := conn.Create(cur, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

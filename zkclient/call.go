package zkclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Call runs fn, a blocking client call, and returns its result or ctx's
// error, whichever comes first. The client has no per-request deadline;
// when ctx ends first, fn keeps running in the background until the client
// gives up on it (at the latest when the session times out or the
// connection closes) and its result is dropped: the caller must treat a
// write cut short this way as uncertain.
func Call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// IsRecoverable reports whether err is a ZooKeeper connection error after
// which the handle is still valid (the connection was lost, the session
// may live on). A read may simply be sent again; the outcome of a write in
// flight is unknown and must be checked, not assumed (IsUncertain).
func IsRecoverable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// IsFatal reports whether err means the session or the handle is gone:
// expiry (ErrSessionExpired), refused credentials (ErrAuthFailed), or a
// closed handle.
func IsFatal(err error) bool {
	return errors.Is(err, ErrSessionExpired) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, ErrAuthFailed)
}

// IsUncertain reports whether a write that returned err may or may not
// have been applied: the connection was lost (IsRecoverable) or the
// session expired with the request in flight. An idempotent request (a
// read, EnsurePath) may be sent again after such an error.
func IsUncertain(err error) bool {
	return IsRecoverable(err) || errors.Is(err, ErrSessionExpired)
}

// IsDenied reports whether err is a refusal by ZooKeeper's access control
// (NoAuth: ErrPermission; rejected credentials: ErrAuthFailed) or by an
// enforced quota (ErrQuotaExceeded), explained or not. Retrying or
// reconnecting cannot change the answer: it is never retried.
func IsDenied(err error) bool {
	return err != nil && (errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, ErrPermission) || errors.Is(err, ErrAuthFailed) || IsQuotaExceeded(err))
}

// EnsurePath creates p and its missing parents as persistent nodes with
// acl. It is idempotent (NodeExists is success), so a caller may send it
// again after an uncertain error. Existing nodes are looked up before any
// create, because under ACLs a create of an existing node whose parent
// denies CREATE fails with NoAuth rather than NodeExists. A refusal is
// explained (Explain: the node and the permission missing).
func EnsurePath(ctx context.Context, conn *zk.Conn, p string, acl []zk.ACL) error {
	if p == "" || p == "/" {
		return nil
	}
	exists := func(n string) (bool, error) {
		ok, err := Call(ctx, func() (bool, error) {
			ok, _, err := conn.Exists(n)
			return ok, err
		})
		if err != nil {
			return false, fmt.Errorf("stat %s: %w", n, err)
		}
		return ok, nil
	}
	if ok, err := exists(p); err != nil || ok {
		return err
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		ok, err := exists(cur)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		_, err = Call(ctx, func() (string, error) { return conn.Create(cur, nil, 0, acl) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
		case IsDenied(err):
			return Explain(err, cur, OpCreate)
		default:
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// ReadACL reads p's ACL with its digests, so that it can be compared or
// copied. ZooKeeper shows a digest only to a session with ADMIN on the
// node (others get "user:x"): such an ACL is refused with a
// *PermissionError, as is a read the node's ACL refuses. NoNode is
// returned as the client's error, wrapped.
func ReadACL(ctx context.Context, conn *zk.Conn, p string) ([]zk.ACL, *zk.Stat, error) {
	type aclStat struct {
		acl  []zk.ACL
		stat *zk.Stat
	}
	r, err := Call(ctx, func() (aclStat, error) {
		acl, st, err := conn.GetACL(p)
		return aclStat{acl, st}, err
	})
	if err != nil {
		if IsDenied(err) {
			return nil, nil, Explain(err, p, OpReadACL)
		}
		return nil, nil, fmt.Errorf("%s %s: %w", OpReadACL, p, err)
	}
	if redacted(r.acl) {
		return nil, nil, &PermissionError{Op: OpReadACL, Path: p, Node: p, Perm: "ADMIN (needed to copy its ACL)", Err: zk.ErrNoAuth}
	}
	return r.acl, r.stat, nil
}

// redacted reports whether acl was returned by GetACL to a session without
// ADMIN on the node: ZooKeeper then replaces every digest hash with "x".
func redacted(acl []zk.ACL) bool {
	for _, a := range acl {
		if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
			return true
		}
	}
	return false
}

// IsLostWrite reports whether err is the client's failure to write a
// request on its connection (the go-zookeeper client answers the request
// with the socket's error, not ErrConnectionClosed, closes the connection
// and reconnects): a server that closed the connection meanwhile (a
// ZooKeeper older than 3.6 does right after refusing a multiRead) resets
// the writes behind. The request did not go out whole, so a read may be
// sent again, as after IsRecoverable's errors; the classes above are
// unchanged for every other caller.
func IsLostWrite(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

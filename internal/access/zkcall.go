package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// call runs fn, a blocking client call, and returns its result or ctx's
// error, whichever comes first. The client has no per-request deadline;
// when ctx ends first, fn finishes in the background (at the latest when
// the client gives up on the request) and its result is dropped.
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
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

type aclStat struct {
	acl  []zk.ACL
	stat *zk.Stat
}

// getACL reads a node's ACL; errors are explained.
func getACL(ctx context.Context, conn *zk.Conn, p string) ([]zk.ACL, *zk.Stat, error) {
	r, err := call(ctx, func() (aclStat, error) {
		acl, st, err := conn.GetACL(p)
		return aclStat{acl, st}, err
	})
	if err != nil {
		return nil, nil, wrap(Explain(err, p, OpReadACL), p, OpReadACL)
	}
	return r.acl, r.stat, nil
}

// children lists p's children.
func children(ctx context.Context, conn *zk.Conn, p string) ([]string, error) {
	return call(ctx, func() ([]string, error) {
		kids, _, err := conn.Children(p)
		return kids, err
	})
}

// getData reads p's data.
func getData(ctx context.Context, conn *zk.Conn, p string) ([]byte, error) {
	return call(ctx, func() ([]byte, error) {
		b, _, err := conn.Get(p)
		return b, err
	})
}

// exists reports whether p exists. ZooKeeper checks no permission for it.
func exists(ctx context.Context, conn *zk.Conn, p string) (bool, error) {
	ok, err := call(ctx, func() (bool, error) {
		ok, _, err := conn.Exists(p)
		return ok, err
	})
	if err != nil {
		return false, fmt.Errorf("exists %s: %w", p, err)
	}
	return ok, nil
}

// wrap adds the operation and path to errors that do not carry them yet.
func wrap(err error, p string, op Op) error {
	var pe *PermissionError
	var ae *AuthError
	if err == nil || errors.As(err, &pe) || errors.As(err, &ae) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

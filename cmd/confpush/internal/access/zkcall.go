package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

type aclStat struct {
	acl  []zk.ACL
	stat *zk.Stat
}

// getACL reads a node's ACL; errors are explained.
func getACL(ctx context.Context, conn *zk.Conn, p string) ([]zk.ACL, *zk.Stat, error) {
	r, err := zkclient.Call(ctx, func() (aclStat, error) {
		acl, st, err := conn.GetACL(p)
		return aclStat{acl, st}, err
	})
	if err != nil {
		return nil, nil, wrap(zkclient.Explain(err, p, zkclient.OpReadACL), p, zkclient.OpReadACL)
	}
	return r.acl, r.stat, nil
}

// children lists p's children.
func children(ctx context.Context, conn *zk.Conn, p string) ([]string, error) {
	return zkclient.Call(ctx, func() ([]string, error) {
		kids, _, err := conn.Children(p)
		return kids, err
	})
}

// getData reads p's data.
func getData(ctx context.Context, conn *zk.Conn, p string) ([]byte, error) {
	return zkclient.Call(ctx, func() ([]byte, error) {
		b, _, err := conn.Get(p)
		return b, err
	})
}

// exists reports whether p exists. ZooKeeper checks no permission for it.
func exists(ctx context.Context, conn *zk.Conn, p string) (bool, error) {
	ok, err := zkclient.Call(ctx, func() (bool, error) {
		ok, _, err := conn.Exists(p)
		return ok, err
	})
	if err != nil {
		return false, fmt.Errorf("exists %s: %w", p, err)
	}
	return ok, nil
}

// wrap adds the operation and path to errors that do not carry them yet.
func wrap(err error, p string, op zkclient.Op) error {
	var pe *zkclient.PermissionError
	var ae *zkclient.AuthError
	if err == nil || errors.As(err, &pe) || errors.As(err, &ae) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/internal/zkconn"
	"github.com/zkconf/zkconf/zkclient"
)

// denied reports whether err is a refusal by ZooKeeper's access control
// (NoAuth, or rejected credentials) or by an enforced quota
// (QuotaExceeded). It is fatal: retrying or reconnecting cannot change the
// answer, so it is never retried; access.Explain and ExplainMulti name the
// node.
func denied(err error) bool {
	return err != nil && (errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, access.ErrPermission) || errors.Is(err, access.ErrAuthRejected) || zkclient.IsQuotaExceeded(err))
}

// call runs a blocking client call under ctx. The result is only read when
// the call completed, never while it may still be running in the
// background after ctx ended.
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var out T
	err := zkconn.Call(ctx, func() error {
		v, err := fn()
		out = v
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// retryableRead reports whether a read may simply be sent again: reads are
// idempotent, so connection loss and even session expiry (the client opens
// a new session) are retried.
func retryableRead(err error) bool {
	return zkconn.IsRecoverable(err) || errors.Is(err, zk.ErrSessionExpired)
}

// uncertain reports whether a write that returned err may or may not have
// been applied.
func uncertain(err error) bool {
	return zkconn.IsRecoverable(err) || errors.Is(err, zk.ErrSessionExpired)
}

// readRetry is the delay policy of the publisher's retried reads: from
// 25 ms, doubling up to 800 ms, jittered.
func readRetry() backoff.Policy {
	return backoff.Policy{Base: 25 * time.Millisecond, Max: 800 * time.Millisecond}
}

// read runs an idempotent request, retrying connection loss and session
// expiry until it succeeds, fails for another reason, or ctx ends.
func read[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := call(ctx, fn)
		if err == nil || !retryableRead(err) || ctx.Err() != nil {
			return v, err
		}
		if werr := readRetry().Sleep(ctx, attempt+1); werr != nil {
			return v, fmt.Errorf("%w (last error: %v)", werr, err)
		}
	}
}

// get reads a node; NoNode is reported as (nil, nil, nil).
func (p *Publisher) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	return readNode(ctx, path, access.OpRead, "read", func() ([]byte, *zk.Stat, error) { return p.conn.Get(path) })
}

// children lists a node's children; NoNode is reported as (nil, false, nil).
func (p *Publisher) children(ctx context.Context, path string) ([]string, bool, error) {
	c, st, err := p.childrenStat(ctx, path)
	return c, st != nil, err
}

// childrenStat lists a node's children with the node's stat as of the
// listing; NoNode is reported as (nil, nil, nil).
func (p *Publisher) childrenStat(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	return readNode(ctx, path, access.OpList, "list", func() ([]string, *zk.Stat, error) { return p.conn.Children(path) })
}

// readNode runs a read of path that returns a value and the node's stat,
// retried like every read; NoNode is reported as a zero value and a nil
// stat, a refusal is explained for op, other errors name verb and path.
func readNode[T any](ctx context.Context, path string, op access.Op, verb string, fn func() (T, *zk.Stat, error)) (T, *zk.Stat, error) {
	type result struct {
		v  T
		st *zk.Stat
	}
	var zero T
	r, err := read(ctx, func() (result, error) {
		v, st, err := fn()
		return result{v, st}, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return zero, nil, nil
	case denied(err):
		return zero, nil, access.Explain(err, path, op)
	case err != nil:
		return zero, nil, fmt.Errorf("%s %s: %w", verb, path, err)
	}
	return r.v, r.st, nil
}

// exists stats a node; NoNode is reported as (nil, nil).
func (p *Publisher) exists(ctx context.Context, path string) (*zk.Stat, error) {
	type res struct {
		ok bool
		st *zk.Stat
	}
	r, err := read(ctx, func() (res, error) {
		ok, st, err := p.conn.Exists(path)
		return res{ok, st}, err
	})
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !r.ok {
		return nil, nil
	}
	return r.st, nil
}

// multi sends one transaction, once (a write is never re-sent here), and
// returns the per-op responses also when it failed. When ctx ends first the
// transaction may still be applied: the caller must treat that as unknown.
// A refusal by access control is explained (access.ExplainMulti: the node
// and the permission missing); callers must not retry it (denied).
func (p *Publisher) multi(ctx context.Context, ops []any) ([]zk.MultiResponse, error) {
	done := make(chan struct{})
	var resp []zk.MultiResponse
	var err error
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	go func() {
		defer close(done)
		resp, err = p.conn.Multi(ops...)
	}()
	select {
	case <-done:
		if denied(err) {
			err = access.ExplainMulti(err, ops, resp)
		}
		return resp, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensurePath creates p and its missing ancestors with acl, like
// zkconn.EnsurePath, retrying connection loss (every step is idempotent)
// and explaining a refusal with the node and the permission missing.
func (p *Publisher) ensurePath(ctx context.Context, path string, acl []zk.ACL) error {
	if st, err := p.exists(ctx, path); err != nil || st != nil {
		return err
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + part
		st, err := p.exists(ctx, cur)
		if err != nil {
			return err
		}
		if st != nil {
			continue
		}
		_, err = read(ctx, func() (string, error) { return p.conn.Create(cur, nil, 0, acl) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
		case denied(err):
			return access.Explain(err, cur, access.OpCreate)
		default:
			return fmt.Errorf("create metadata path %s: %w", cur, err)
		}
	}
	return nil
}

// failedOp returns the index and error of the op that made a transaction
// fail: the first op with an error (earlier ops report success, later ones
// a rolled-back marker error).
func failedOp(resp []zk.MultiResponse) (int, error) {
	for i, r := range resp {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, nil
}

// sessionMark remembers which session a sequence of writes started in.
type sessionMark struct {
	id       int64
	expiries uint64
}

func (p *Publisher) mark() sessionMark {
	m := sessionMark{id: p.conn.SessionID()}
	if p.sess != nil {
		m.expiries = p.sess.Status().Expiries
	}
	return m
}

// expiredSince reports whether the session of m is gone: the tracker saw
// an expiry, or the client now runs another session (it silently opens a
// new one after expiry).
func (p *Publisher) expiredSince(m sessionMark) bool {
	if p.sess != nil && p.sess.Status().Expiries > m.expiries {
		return true
	}
	return m.id != 0 && p.conn.SessionID() != m.id
}

// waitSession waits until the connection has a session again and the
// server it is connected to has caught up with the leader (Sync), so that
// the reads that follow see every write committed before.
func (p *Publisher) waitSession(ctx context.Context) error {
	if p.sess != nil {
		if _, err := p.sess.WaitConnected(ctx); err != nil {
			return err
		}
	}
	_, err := read(ctx, func() (string, error) { return p.conn.Sync(p.paths.Root) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("sync %s: %w", p.paths.Root, err)
	}
	return nil
}

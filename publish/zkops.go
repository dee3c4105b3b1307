package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/zkclient"
)

// readRetry is the delay policy of the publisher's retried reads: from
// 25 ms, doubling up to 800 ms, jittered.
func readRetry() backoff.Policy {
	return backoff.Policy{Base: 25 * time.Millisecond, Max: 800 * time.Millisecond}
}

// read runs an idempotent request, sending it again after connection loss
// and session expiry (zkclient.IsUncertain: the client opens a new session)
// and after a failed write of the request (zkclient.IsLostWrite)
// until it succeeds, fails for another reason, or ctx ends.
func read[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	call := zkclient.Call[T]
	if ctx.Value(inlineKey{}) != nil {
		call = callInline[T]
	}
	for attempt := 0; ; attempt++ {
		v, err := call(ctx, fn)
		if err == nil || !(zkclient.IsUncertain(err) || zkclient.IsLostWrite(err)) || ctx.Err() != nil {
			return v, err
		}
		if werr := readRetry().Sleep(ctx, attempt+1); werr != nil {
			return v, fmt.Errorf("%w (last error: %v)", werr, err)
		}
	}
}

// inlineKey marks a context whose reads (read) make the blocking call in
// the calling goroutine instead of through zkclient.Call's own: for
// goroutines that exist only to make one read and whose waiter stops
// waiting when the context ends (startStepTwo), so that the end of the
// context need not interrupt the call itself.
type inlineKey struct{}

// inlineReads returns ctx marked for inline reads (inlineKey).
func inlineReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, inlineKey{}, true)
}

// callInline is zkclient.Call without its goroutine: fn runs to its end
// whatever ctx does.
func callInline[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	return fn()
}

// get reads a node; NoNode is reported as (nil, nil, nil).
func (p *Publisher) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	return readNode(ctx, path, zkclient.OpRead, "read", func() ([]byte, *zk.Stat, error) { return p.conn().Get(path) })
}

// children lists a node's children; NoNode is reported as (nil, false, nil).
func (p *Publisher) children(ctx context.Context, path string) ([]string, bool, error) {
	c, st, err := p.childrenStat(ctx, path)
	return c, st != nil, err
}

// childrenStat lists a node's children with the node's stat as of the
// listing; NoNode is reported as (nil, nil, nil).
func (p *Publisher) childrenStat(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	return readNode(ctx, path, zkclient.OpList, "list", func() ([]string, *zk.Stat, error) { return p.conn().Children(path) })
}

// readNode runs a read of path that returns a value and the node's stat,
// retried like every read; NoNode is reported as a zero value and a nil
// stat, a refusal is explained for op, other errors name verb and path.
func readNode[T any](ctx context.Context, path string, op zkclient.Op, verb string, fn func() (T, *zk.Stat, error)) (T, *zk.Stat, error) {
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
	case zkclient.IsDenied(err):
		return zero, nil, zkclient.Explain(err, path, op)
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
		ok, st, err := p.conn().Exists(path)
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
// A refusal by access control is explained (zkclient.ExplainMulti: the node
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
		resp, err = p.conn().Multi(ops...)
	}()
	select {
	case <-done:
		if zkclient.IsDenied(err) {
			err = zkclient.ExplainMulti(err, ops, resp)
		}
		return resp, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensurePath is zkclient.EnsurePath sent again after connection loss
// (every step is idempotent).
func (p *Publisher) ensurePath(ctx context.Context, path string, acl []zk.ACL) error {
	_, err := read(ctx, func() (struct{}, error) { return struct{}{}, zkclient.EnsurePath(ctx, p.conn(), path, acl) })
	return err
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
	m := sessionMark{id: p.conn().SessionID()}
	if p.sess() != nil {
		m.expiries = p.sess().Status().Expiries
	}
	return m
}

// expiredSince reports whether the session of m is gone: the tracker saw
// an expiry, or the client now runs another session (it silently opens a
// new one after expiry).
func (p *Publisher) expiredSince(m sessionMark) bool {
	if p.sess() != nil && p.sess().Status().Expiries > m.expiries {
		return true
	}
	return m.id != 0 && p.conn().SessionID() != m.id
}

// waitSession waits until the connection has a session again and the
// server it is connected to has caught up with the leader (Sync), so that
// the reads that follow see every write committed before.
func (p *Publisher) waitSession(ctx context.Context) error {
	if p.sess() != nil {
		if _, err := p.sess().WaitConnected(ctx); err != nil {
			return err
		}
	}
	_, err := read(ctx, func() (string, error) { return p.conn().Sync(p.paths.Root) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("sync %s: %w", p.paths.Root, err)
	}
	return nil
}

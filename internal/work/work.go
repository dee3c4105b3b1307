// Package work holds the two context-bound waiting helpers every package of
// zkconf needed a copy of: a cancellable sleep and a bounded parallel loop.
package work

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Sleep waits d, or until ctx ends, in which case it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Parallel runs fn(ctx, i) for every i in [0, n) on at most workers
// goroutines and returns the first error. After an error, or once ctx
// ends, no new call starts, and the ctx passed to running calls is
// cancelled. When ctx ended with calls left undone it returns ctx's error,
// so a nil result always means that every call ran and succeeded.
func Parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		done  atomic.Int64
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if first == nil && int(done.Load()) < n {
		return ctx.Err()
	}
	return first
}

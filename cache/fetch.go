package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// errMismatch marks an item whose content does not match the manifest.
var errMismatch = errors.New("item does not match the manifest")

// errAborted marks an item read skipped because another read of the same
// attempt already failed.
var errAborted = errors.New("item read abandoned")

// fetch assembles generation m: items whose sha256 equals the held
// snapshot's are reused, the others are read, several in flight, and each
// is verified against m. It returns an *manifest.ItemMismatchError naming an item
// that is missing or does not match (a newer publish is landing, or the
// item was changed behind the publisher's back): nothing from two
// generations is ever assembled.
//
// For a candidate (root.stable set) the contents come from the stable
// item with the same sha256 when there is one, else from the candidate
// node's child named by it; every one is verified against the candidate
// manifest alone.
func (c *Cache) fetch(ctx context.Context, root *rootRead, held *Snapshot) (*Snapshot, error) {
	m, zxid := root.m, root.stat.Mzxid
	items, todo, names := reuseHeld(m, held)
	path := c.itemSource(root)
	c.verifyNanos.Store(0)
	var err error
	switch len(todo) {
	case 0:
	case 1:
		// One item (the common case): read it here, not on a worker.
		err = c.fetchOne(ctx, m, todo[0], path, items)
	default:
		err = c.fetchMany(ctx, m, todo, path, items)
	}
	if err != nil {
		return nil, err
	}
	s := newSnapshotNames(m, zxid, items, names, false)
	s.timings = FetchTimings{Started: c.cycleStarted, Fetched: time.Since(c.cycleStarted), Read: len(todo),
		Verify: time.Duration(c.verifyNanos.Load())}
	return s, nil
}

// itemSource returns where the content of item name of root.m is read: the
// item's node for the root's own generation; for a candidate, the stable
// item with the same content, else the candidate content node.
func (c *Cache) itemSource(root *rootRead) func(name string) string {
	if root.stable == nil {
		return c.paths.Item
	}
	bySHA := make(map[string]string, len(root.stable.Items))
	for name, it := range root.stable.Items {
		if prev, ok := bySHA[it.SHA256]; !ok || name < prev {
			bySHA[it.SHA256] = name // the same one each time
		}
	}
	return func(name string) string {
		sha := root.m.Items[name].SHA256
		if stable, ok := bySHA[sha]; ok {
			return c.paths.Item(stable)
		}
		return c.paths.CandidateContent(sha)
	}
}

// reuseHeld returns the items of m that the held snapshot has with the
// same sha256, the names of those to read, and, when the set of names is
// the held one's (the common case: contents changed, no item added or
// removed), the held snapshot's sorted names.
func reuseHeld(m *manifest.Manifest, held *Snapshot) (items map[string][]byte, todo, names []string) {
	items = make(map[string][]byte, len(m.Items))
	heldNames := 0 // names of m the held snapshot has too
	for name, it := range m.Items {
		if held != nil {
			if heldItem, ok := held.m.Items[name]; ok {
				heldNames++
				if heldItem == it {
					items[name] = held.items[name]
					continue
				}
			}
		}
		todo = append(todo, name)
	}
	if held != nil && heldNames == len(m.Items) && len(held.m.Items) == len(m.Items) {
		names = held.names
	}
	return items, todo, names
}

// readItem reads item name from its node (path) and verifies it against m
// (errMismatch).
func (c *Cache) readItem(m *manifest.Manifest, name string, path func(string) string) ([]byte, error) {
	data, _, err := c.conn.Get(path(name))
	c.stats.requests.Add(1)
	c.stats.itemsFetched.Add(1)
	if err == nil {
		start := time.Now()
		if !m.Matches(name, data) {
			err = errMismatch
		}
		c.verifyNanos.Add(int64(time.Since(start)))
	}
	return data, err
}

// itemError turns a failed item read into the error fetch returns: an
// *manifest.ItemMismatchError for a missing or different item (torn), else the
// read's error.
func itemError(m *manifest.Manifest, name string, err error) error {
	if errors.Is(err, errMismatch) || errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("cache: %w (changed behind the publisher's back, or a publish is landing); keeping the held snapshot",
			&manifest.ItemMismatchError{Item: name, Generation: m.Generation, Missing: errors.Is(err, zk.ErrNoNode)})
	}
	return fmt.Errorf("read item %s: %w", name, err)
}

// fetchOne reads one item into items on the loop's goroutine.
func (c *Cache) fetchOne(ctx context.Context, m *manifest.Manifest, name string, path func(string) string, items map[string][]byte) error {
	var data []byte
	err := c.call(ctx, func() (err error) { data, err = c.readItem(m, name, path); return err })
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return itemError(m, name, err)
	}
	items[name] = data
	return nil
}

// itemResult is one worker's read of an item.
type itemResult struct {
	name string
	data []byte
	err  error
}

// fetchMany reads the items todo into items, WithFetchConcurrency reads in
// flight; the first failure makes the remaining reads skip (errAborted). A
// read error wins over a torn item; of several torn items the one named
// first in sort order is reported, the same one each time when it is the
// only one.
func (c *Cache) fetchMany(ctx context.Context, m *manifest.Manifest, todo []string, path func(string) string, items map[string][]byte) error {
	results := c.startReaders(ctx, m, todo, path)
	var torn *manifest.ItemMismatchError
	var tornErr, firstErr error
	for range todo {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-results:
			switch {
			case r.err == nil:
				items[r.name] = r.data
			case errors.Is(r.err, errAborted):
			default:
				err := itemError(m, r.name, r.err)
				var mismatch *manifest.ItemMismatchError
				if !errors.As(err, &mismatch) {
					if firstErr == nil {
						firstErr = err
					}
				} else if torn == nil || mismatch.Item < torn.Item {
					torn, tornErr = mismatch, err
				}
			}
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if torn != nil {
		return tornErr
	}
	return nil
}

// startReaders starts the workers that read todo and returns the channel
// that receives exactly one result per item; it never blocks a worker.
// Close waits for the workers (c.inflight).
func (c *Cache) startReaders(ctx context.Context, m *manifest.Manifest, todo []string, path func(string) string) <-chan itemResult {
	results := make(chan itemResult, len(todo))
	var next atomic.Int64
	var abort atomic.Bool
	workers := min(c.opts.concurrency, len(todo))
	c.inflight.Add(workers)
	for range workers {
		go func() {
			defer c.inflight.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				name := todo[i]
				if abort.Load() || ctx.Err() != nil {
					results <- itemResult{name: name, err: errAborted}
					continue
				}
				data, err := c.readItem(m, name, path)
				if err != nil {
					abort.Store(true)
				}
				results <- itemResult{name: name, data: data, err: err}
			}
		}()
	}
	return results
}

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
	names := root.names
	items, todo := reuseHeld(names, root.items, held)
	// The incarnations left, carried over (install hands s out with
	// them): taken here, while the held snapshot is in the CPU's cache,
	// not after the reads (a fleet of caches in one process ran meanwhile).
	left := held.nextLeft(m.Incarnation)
	path := c.itemSource(root)
	c.verifyNanos.Store(0)
	var err error
	switch len(todo) {
	case 0:
	case 1:
		// One item (the common case): read it here, not on a worker.
		err = c.fetchOne(ctx, m, names, todo[0], path, items)
	default:
		err = c.fetchMany(ctx, m, names, root.items, c.batches(names, todo, items), path, items)
	}
	if err != nil {
		return nil, err
	}
	s := &Snapshot{m: m, zxid: zxid, names: names, items: items, left: left, read: root.read}
	s.timings = FetchTimings{Started: c.cycleStarted, Fetched: time.Since(c.cycleStarted), Read: len(todo),
		Verify: time.Duration(c.verifyNanos.Load())}
	return s, nil
}

// itemSource returns where the content of item name of root.m is read: the
// item's node for the root's own generation; for a candidate, the stable
// item with the same content, else the candidate content node.
func (c *Cache) itemSource(root *rootRead) func(name string) string {
	if root.stable == nil {
		return c.itemPath
	}
	bySHA := make(map[string]string, len(root.stable.Items))
	for name, it := range root.stable.Items {
		if prev, ok := bySHA[it.SHA256]; !ok || name < prev {
			bySHA[it.SHA256] = name // the same one each time
		}
	}
	shaOf := make(map[string]string, len(root.names)) // not root: the cycle's root read stays on its stack
	for i, name := range root.names {
		shaOf[name] = root.items[i].SHA256
	}
	return func(name string) string {
		sha := shaOf[name]
		if stable, ok := bySHA[sha]; ok {
			return c.paths.Item(stable)
		}
		return c.paths.CandidateContent(sha)
	}
}

// reuseHeld returns the entries of a root read (names, increasing, and
// metas, in the same order) with the content of every item the held
// snapshot has under the same name with the same sha256 and size; todo
// are the positions of the others, to read. Both lists are sorted, so the
// held ones are walked beside them: no map built, no lookup.
//
// The snapshot is built with the root read's names even when the set is
// the held one's (the held names are not shared): they are substrings of
// the same root buffer as the entries' hashes, so the next cycle reads
// the held names and hashes from one buffer's lines (cold by then), not
// two, and a snapshot keeps one root buffer alive, not also the one in
// which its set of names first appeared.
func reuseHeld(names []string, metas []manifest.Item, held *Snapshot) (items []entry, todo []int) {
	items = make([]entry, len(names))
	var hn []string
	var hi []entry
	if held != nil {
		hn, hi = held.names, held.items
	}
	j := 0
	for i, name := range names {
		items[i].meta = metas[i]
		// Equal first: in the common case (the same set) every name is
		// the next held one, and one comparison reads it.
		found := false
		for j < len(hn) {
			if hn[j] == name {
				found = true
				break
			}
			if hn[j] > name {
				break
			}
			j++ // a held item the root no longer has
		}
		if found && hi[j].meta == metas[i] {
			items[i].data = hi[j].data
		} else {
			todo = append(todo, i)
		}
		if found {
			j++
		}
	}
	return items, todo
}

// multiReadBytes bounds one multiRead: the client's receive buffer holds a
// whole response, and the pages of it a response touches stay in the
// process's memory, so a batch holds no more than one large item's read
// would; the bound keeps the request far below the server's jute.maxbuffer
// as well. An item counts its size, its name and multiReadItemCost (its
// stat and the operation's headers, both ways).
const (
	multiReadBytes    = 64 << 10
	multiReadItemCost = 128
)

// batches splits todo, the positions in names of the items to read, into
// the reads sent: consecutive items of up to c.batchBytes together in one
// multiRead (one request and one answer where 20 Gets were 20 of each,
// woke 20 goroutines and, on a loaded host, spread the answers over
// milliseconds), an item larger than that alone; every position once, in
// order. Without multiRead (a server older than 3.6 said so) each item is
// a read of its own.
func (c *Cache) batches(names []string, todo []int, items []entry) [][]int {
	if c.noMultiRead.Load() {
		out := make([][]int, len(todo))
		for k := range todo {
			out[k] = todo[k : k+1 : k+1]
		}
		return out
	}
	limit := c.batchBytes.Load()
	if limit == 0 {
		limit = multiReadBytes
	}
	var out [][]int
	start, size := 0, int64(0)
	for k, i := range todo {
		n := items[i].meta.Size + int64(len(names[i])) + multiReadItemCost
		if k > start && size+n > limit {
			out = append(out, todo[start:k:k])
			start, size = k, 0
		}
		size += n
	}
	return append(out, todo[start:len(todo):len(todo)])
}

// readBatch reads the items at the positions batch of names, one Get for
// a single item and one multiRead for several, and verifies each against
// its entry (metas, in names' order); it returns one result per item, in
// batch's order. A server without
// multiRead (ErrUnimplemented) gets the items one by one, and no further
// multiRead from this cache (such a server closes the connection after
// that answer: the Gets then fail and the cycle is retried after the
// reconnect, once).
func (c *Cache) readBatch(metas []manifest.Item, names []string, batch []int, path func(string) string) []itemResult {
	out := make([]itemResult, len(batch))
	if len(batch) == 1 {
		i := batch[0]
		data, err := c.readItemAs(metas[i], names[i], path)
		out[0] = itemResult{i: i, data: data, err: err}
		return out
	}
	if hook := c.beforeItemRead.Load(); hook != nil {
		(*hook)()
	}
	paths := make([]string, len(batch))
	for k, i := range batch {
		paths[k] = path(names[i])
	}
	res, err := c.conn.MultiRead(paths...)
	c.stats.requests.Add(1)
	c.stats.itemRequests.Add(1)
	c.stats.itemsFetched.Add(uint64(len(batch)))
	if errors.Is(err, zk.ErrUnimplemented) {
		c.noMultiRead.Store(true)
		c.log.Info("ZooKeeper has no multiRead (older than 3.6; it closes the connection after refusing one): reading items one request each from now on")
		for k, i := range batch {
			data, err := c.readItemAs(metas[i], names[i], path)
			out[k] = itemResult{i: i, data: data, err: err}
		}
		return out
	}
	start := time.Now()
	for k, i := range batch {
		out[k].i = i
		switch {
		case err != nil:
			out[k].err = err
		case res[k].Error != nil:
			out[k].err = res[k].Error
		case !metas[i].Matches(res[k].Data):
			out[k].err = errMismatch
		default:
			out[k].data = res[k].Data
		}
	}
	c.verifyNanos.Add(int64(time.Since(start)))
	return out
}

// readItemAs reads item name from its node (path) and verifies it against
// it, its entry in the manifest (errMismatch; the zero Item matches
// nothing). The entry is taken before the read: after it, the manifest's
// map is cold again (a fleet of caches in one process ran meanwhile).
func (c *Cache) readItemAs(it manifest.Item, name string, path func(string) string) ([]byte, error) {
	if hook := c.beforeItemRead.Load(); hook != nil {
		(*hook)()
	}
	data, _, err := c.conn.Get(path(name))
	c.stats.requests.Add(1)
	c.stats.itemRequests.Add(1)
	c.stats.itemsFetched.Add(1)
	if err == nil {
		start := time.Now()
		if !it.Matches(data) {
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

// fetchOne reads item names[i] into items[i] on the loop's goroutine.
func (c *Cache) fetchOne(ctx context.Context, m *manifest.Manifest, names []string, i int, path func(string) string, items []entry) error {
	var data []byte
	err := c.call(ctx, func() (err error) { data, err = c.readItemAs(items[i].meta, names[i], path); return err })
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return itemError(m, names[i], err)
	}
	items[i].data = data
	return nil
}

// itemResult is one worker's read of an item (names[i]).
type itemResult struct {
	i    int
	data []byte
	err  error
}

// fetchMany reads the items at the positions of batches (batches) into
// items, WithFetchConcurrency reads in flight (one on the loop's goroutine
// when there is one read); the first failure makes the remaining reads
// skip (errAborted). A read error wins over a torn item; of several torn
// items the one named first in sort order is reported, the same one each
// time when it is the only one.
func (c *Cache) fetchMany(ctx context.Context, m *manifest.Manifest, names []string, metas []manifest.Item, batches [][]int, path func(string) string, items []entry) error {
	var results <-chan itemResult
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	if len(batches) == 1 {
		var rs []itemResult
		err := c.call(ctx, func() error { rs = c.readBatch(metas, names, batches[0], path); return nil })
		if err != nil {
			return err
		}
		ch := make(chan itemResult, len(rs))
		for _, r := range rs {
			ch <- r
		}
		results = ch
	} else {
		results = c.startReaders(ctx, metas, names, batches, n, path)
	}
	var torn *manifest.ItemMismatchError
	var tornErr, firstErr error
	for range n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-results:
			switch {
			case r.err == nil:
				items[r.i].data = r.data
			case errors.Is(r.err, errAborted):
			default:
				err := itemError(m, names[r.i], r.err)
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

// startReaders starts the workers that read the batches of item
// positions (n items in all) of names and returns the channel that
// receives exactly one result per item; it never blocks a worker. Close
// waits for the workers (c.inflight).
func (c *Cache) startReaders(ctx context.Context, metas []manifest.Item, names []string, batches [][]int, n int, path func(string) string) <-chan itemResult {
	results := make(chan itemResult, n)
	var next atomic.Int64
	var abort atomic.Bool
	workers := min(c.opts.concurrency, len(batches))
	c.inflight.Add(workers)
	for range workers {
		go func() {
			defer c.inflight.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(batches) {
					return
				}
				if abort.Load() || ctx.Err() != nil {
					for _, i := range batches[k] {
						results <- itemResult{i: i, err: errAborted}
					}
					continue
				}
				for _, r := range c.readBatch(metas, names, batches[k], path) {
					if r.err != nil {
						abort.Store(true)
					}
					results <- r
				}
			}
		}()
	}
	return results
}

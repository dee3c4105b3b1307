package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
)

// gcChunk bounds the ops of one GC transaction; gcReadWorkers the GC's
// reads in flight at once (the client pipelines them on its connection).
const (
	gcChunk       = 1000
	gcReadWorkers = 64
)

// splitHistory returns the generations of hist (sorted) a GC keeps and
// those it deletes. It deletes only once the history holds more than the
// retention plus a quarter of it, and then down to the retention: deleting
// in batches spares most publishes a server write (a transaction-log
// fsync) after their acknowledgement, which at the default retention of
// 20 was one publish's third server write every time. The history so
// keeps at least the retention and at most a quarter more; a retention
// under 4 deletes at every publish past it, as before.
func (c *config) splitHistory(hist []int64) (keep, drop []int64) {
	n := len(hist) - c.retention
	if n <= c.retention/4 {
		return hist, nil
	}
	return hist[n:], hist[:n]
}

// gc runs in step 7, after a successful commit, beside the storing of the
// new contents' blobs (it never deletes a blob our generation references),
// best effort: when history entries fall beyond the retention it deletes
// them and the blobs that no retained generation references. The blob store is listed here, after the acknowledgement,
// and only when entries are dropped (that is when blobs stop being
// referenced; orphans, say from a marker publish that died, go then too).
// Every GC transaction starts with Check(root, version right after our
// commit): if anything touched the root since (another publish, a
// marker), the GC stops and leaves the work to the next publisher. That
// makes it safe: the retained generations are the history as listed
// after our commit plus our own generation (a new entry is only ever
// created by a commit, which moves the root), so a blob they reference is
// never deleted; a blob stored after our listing is not in it and is never
// deleted either.
func (p *Publisher) gc(ctx context.Context, st *state, pl *plan, early *gcEarly) {
	if ctx.Err() != nil {
		return
	}
	ver := pl.rootVersion
	if ver < 0 {
		data, rs, err := p.get(ctx, p.paths.Root)
		if err != nil || rs == nil {
			return
		}
		m, err := manifest.Decode(data)
		if err != nil || m.PublishID != pl.next.PublishID {
			return // someone published since: their GC does the work
		}
		ver = rs.Version
	}
	hist := slices.Clone(st.history)
	if !slices.Contains(hist, pl.gen) {
		hist = append(hist, pl.gen)
	}
	slices.Sort(hist)
	keep, drop := p.cfg.splitHistory(hist)
	if len(drop) == 0 {
		p.trimCache(keep)
		return
	}
	// The state's history list was read beside the root, not after it: a
	// commit landing between the two is in the root we compared and
	// swapped with but missing from the list, and a GC on that list
	// would delete the blobs only that generation references while its
	// entry stays retained. List again now, after our commit: every entry
	// committed before ours is there, and one committed after ours fails
	// the GC's Check on the root. The blob store is listed and the
	// manifests the state's list retains are read in the same round trip
	// (a process that publishes once has none cached: one round trip
	// instead of one per retained generation); a generation the fresh
	// list retains beyond those is read after it.
	fresh, blobs, err := early.wait()
	if early == nil || err != nil {
		fresh, blobs, err = p.gcReads(ctx, keep, pl.gen)
	}
	if err != nil {
		p.log.Debug("gc skipped", "error", err)
		return
	}
	hist = fresh
	if !slices.Contains(hist, pl.gen) {
		hist = append(hist, pl.gen)
	}
	slices.Sort(hist)
	keep, drop = p.cfg.splitHistory(hist)
	defer p.trimCache(keep)
	if len(drop) == 0 {
		return
	}
	referenced := map[string]bool{}
	for _, it := range pl.next.Items {
		referenced[it.SHA256] = true
	}
	mans, err := p.historyManifests(ctx, slices.DeleteFunc(slices.Clone(keep), func(g int64) bool { return g == pl.gen }))
	if err != nil {
		// Without every retained manifest we cannot know which blobs
		// are still needed: delete nothing.
		p.log.Debug("gc skipped: cannot read a retained manifest", "error", err)
		return
	}
	for _, m := range mans {
		for _, it := range m.Items {
			referenced[it.SHA256] = true
		}
	}
	var unreferenced []string
	for _, sha := range blobs {
		if !referenced[sha] {
			unreferenced = append(unreferenced, sha)
		}
	}
	slices.Sort(unreferenced)
	var deletes []any
	for _, g := range drop {
		deletes = append(deletes, &zk.DeleteRequest{Path: p.paths.HistoryNode(g), Version: -1})
	}
	for _, sha := range unreferenced {
		deletes = append(deletes, &zk.DeleteRequest{Path: p.paths.Blob(sha), Version: -1})
	}
	done := 0
	for chunk := range slices.Chunk(deletes, gcChunk) {
		ops := append([]any{&zk.CheckVersionRequest{Path: p.paths.Root, Version: ver}}, chunk...)
		if _, err := p.multi(ctx, ops); err != nil {
			p.log.Info("gc stopped (the root changed, or another GC ran)", "deleted", done, "left", len(deletes)-done, "error", err)
			return
		}
		done += len(chunk)
	}
	p.log.Info("gc", "history_deleted", len(drop), "blobs_deleted", len(unreferenced),
		"history_kept", len(keep), "blobs_kept", len(blobs)-len(unreferenced))
}

// gcEarly is the GC's reads sent beside a multi-mode commit
// (startGCReads).
type gcEarly struct {
	done  chan struct{}
	fresh []int64
	blobs []string
	err   error
}

// startGCReads sends the GC's reads (gcReads) beside the multi-mode
// commit about to be sent, when the state's history list says entries
// will fall out, so that they are answered by the time the commit is,
// and returns at once (nil when the GC will have nothing to do). Listed
// before the commit or after it, the history is as good as listed after
// it for the GC: these reads go out after the state's reads were
// answered, so only a commit landing after the root was read could be
// missing from them, and such a commit makes ours fail its
// compare-and-swap (no GC then). Blobs stored after the listing are not
// in it, as ever.
func (p *Publisher) startGCReads(ctx context.Context, st *state, pl *plan) *gcEarly {
	hist := slices.Clone(st.history)
	if !slices.Contains(hist, pl.gen) {
		hist = append(hist, pl.gen)
	}
	slices.Sort(hist)
	keep, drop := p.cfg.splitHistory(hist)
	if len(drop) == 0 || ctx.Err() != nil {
		return nil
	}
	e := &gcEarly{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.fresh, e.blobs, e.err = p.gcReads(ctx, keep, pl.gen)
	}()
	return e
}

// wait returns the early reads' results, once answered (an error for
// nil: there were none).
func (e *gcEarly) wait() ([]int64, []string, error) {
	if e == nil {
		return nil, nil, errNoEarlyReads
	}
	<-e.done
	return e.fresh, e.blobs, e.err
}

// errNoEarlyReads is gcEarly.wait's error when no reads were sent early.
var errNoEarlyReads = errors.New("no early GC reads")

// gcReads lists the history and the blob store, and reads the manifests
// of the generations in keep but gen (they are cached for
// historyManifests), all at once. A failed manifest read is left to
// historyManifests: the fresh list may no longer retain that generation.
func (p *Publisher) gcReads(ctx context.Context, keep []int64, gen int64) (fresh []int64, blobs []string, err error) {
	var read []int64
	for _, g := range keep {
		if g != gen {
			read = append(read, g)
		}
	}
	err = work.Parallel(ctx, 2+len(read), gcReadWorkers, func(ctx context.Context, i int) error {
		var err error
		switch i {
		case 0:
			if fresh, _, err = p.historyList(ctx); err != nil {
				return fmt.Errorf("cannot list the history: %w", err)
			}
		case 1:
			if blobs, _, err = p.children(ctx, p.paths.Blobs()); err != nil {
				return fmt.Errorf("cannot list the blobs: %w", err)
			}
		default:
			_, _ = p.historyManifest(ctx, read[i-2])
		}
		return nil
	})
	return fresh, blobs, err
}

// historyManifests returns the manifests of gens, read at once (those
// cached are not read again); the first error wins.
func (p *Publisher) historyManifests(ctx context.Context, gens []int64) ([]*manifest.Manifest, error) {
	out := make([]*manifest.Manifest, len(gens))
	err := work.Parallel(ctx, len(gens), gcReadWorkers, func(ctx context.Context, i int) error {
		m, err := p.historyManifest(ctx, gens[i])
		if err != nil {
			return fmt.Errorf("generation %d: %w", gens[i], err)
		}
		out[i] = m
		return nil
	})
	return out, err
}

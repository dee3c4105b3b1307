package publish

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// gcChunk bounds the ops of one GC transaction.
const gcChunk = 1000

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
func (p *Publisher) gc(ctx context.Context, st *state, pl *plan) {
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
	keep, drop := hist, []int64(nil)
	if n := len(hist) - p.cfg.retention; n > 0 {
		keep, drop = hist[n:], hist[:n]
	}
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
	// the GC's Check on the root.
	fresh, _, err := p.historyList(ctx)
	if err != nil {
		p.log.Debug("gc skipped: cannot list the history", "error", err)
		return
	}
	hist = fresh
	if !slices.Contains(hist, pl.gen) {
		hist = append(hist, pl.gen)
	}
	slices.Sort(hist)
	keep, drop = hist, nil
	if n := len(hist) - p.cfg.retention; n > 0 {
		keep, drop = hist[n:], hist[:n]
	}
	defer p.trimCache(keep)
	if len(drop) == 0 {
		return
	}
	referenced := map[string]bool{}
	for _, it := range pl.next.Items {
		referenced[it.SHA256] = true
	}
	for _, g := range keep {
		if g == pl.gen {
			continue
		}
		m, err := p.historyManifest(ctx, g)
		if err != nil {
			// Without every retained manifest we cannot know which blobs
			// are still needed: delete nothing.
			p.log.Debug("gc skipped: cannot read a retained manifest", "generation", g, "error", err)
			return
		}
		for _, it := range m.Items {
			referenced[it.SHA256] = true
		}
	}
	blobs, _, err := p.children(ctx, p.paths.Blobs())
	if err != nil {
		p.log.Debug("gc skipped: cannot list the blobs", "error", err)
		return
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

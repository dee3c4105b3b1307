package publish

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/manifest"
)

// gcChunk bounds the ops of one GC transaction.
const gcChunk = 1000

// gc runs after a successful commit, best effort: it deletes the history
// entries beyond the retention and the blobs that no retained generation
// references. Every GC transaction starts with Check(root, version right
// after our commit): if anything touched the root since (another publish,
// a marker), the GC stops and leaves the work to the next publisher,
// because its lists could be stale. Blobs that appeared after our reads
// are not in our lists and so are never deleted; a publish that counted on
// a blob this GC deletes fails its own Check on that blob and stores it
// again.
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
	var unreferenced []string
	for sha := range st.blobs {
		if !referenced[sha] {
			unreferenced = append(unreferenced, sha)
		}
	}
	slices.Sort(unreferenced)
	defer p.trimCache(keep)
	if len(drop) == 0 && len(unreferenced) == 0 {
		return
	}
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
		"history_kept", len(keep), "blobs_kept", len(st.blobs)-len(unreferenced))
}

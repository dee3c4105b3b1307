package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// This file keeps the history invariant (docs/design.md, "History
// invariant"): every content a retained history entry references is
// stored as a blob, or is the content of a live item of the current
// generation, or both. The plan names the contents entering and leaving
// the live set (contentFlow); a commit checks that the blob of every
// departing content exists, and when one is missing (a publisher died
// between its acknowledgement and its blob stores) takes the content from
// the live items and creates the blob (missingDeparting, withMissingBlobs,
// backfill); the blobs of entering contents are stored after a multi-mode
// acknowledgement (storeEntering) or before the marker is set
// (storeBlobData), and a marker-mode publish stores the live content of
// every item before overwriting it (backfillOverwritten).

// contentFlow computes, from the live items to the next set, the data of
// every content of the next set by sha256, the contents entering the live
// set (their blobs are this publish's to store) and the contents departing
// it (their blobs must exist when it commits), by hash whatever the item
// names, each list sorted.
func contentFlow(live, next map[string]manifest.Item, items map[string][]byte, tampered map[string]bool) (blobData map[string][]byte, entering, departing []string) {
	blobData = make(map[string][]byte, len(next))
	liveSHA := make(map[string]bool, len(live))
	for _, it := range live {
		liveSHA[it.SHA256] = true
	}
	for n, it := range next {
		if _, dup := blobData[it.SHA256]; dup {
			continue
		}
		blobData[it.SHA256] = items[n]
		// A repaired item's content is stored as a blob too: its live
		// copy cannot serve as one (it was changed).
		if !liveSHA[it.SHA256] || tampered[n] {
			entering = append(entering, it.SHA256)
		}
	}
	for sha := range liveSHA {
		if _, kept := blobData[sha]; !kept {
			departing = append(departing, sha)
		}
	}
	slices.Sort(entering)
	slices.Sort(departing)
	return blobData, entering, departing
}

// withMissingBlobs rebuilds the multi-mode commit after it failed on a
// departing content's blob: the departing contents whose blobs are missing
// are read from the live items (verified) and created by the commit in
// place of their checks, or stored first when the commit would not fit
// with them inside.
func (p *Publisher) withMissingBlobs(ctx context.Context, st *state, pl *plan) ([]any, []opKind, error) {
	rootVersion := int32(-1)
	if st.rootStat != nil {
		rootVersion = st.rootStat.Version
	}
	missing, err := p.missingDeparting(ctx, st, pl.departing, rootVersion, pl.acl.Meta)
	if err != nil {
		return nil, nil, err
	}
	pl.backfill = missing
	ops, kinds := p.multiOps(st, pl)
	if len(missing) > 0 && multiSize(ops) > p.cfg.multiBudget {
		// Too large with the blobs inside: store them first (content-
		// addressed, verified: harmless if the commit never lands) and
		// keep the checks.
		if err := p.storeBlobData(ctx, missing, pl.acl.Meta); err != nil {
			return nil, nil, err
		}
		pl.backfill = nil
		ops, kinds = p.multiOps(st, pl)
	}
	return ops, kinds, nil
}

// missingDeparting returns, for every departing content whose blob does
// not exist, that content read from a live item and verified against the
// live manifest.
// rootVersion is the root's data version this publish expects (a changed
// root explains a content found nowhere as a conflict).
func (p *Publisher) missingDeparting(ctx context.Context, st *state, departing []string, rootVersion int32, acl []zk.ACL) (map[string][]byte, error) {
	exist := make([]bool, len(departing))
	err := work.Parallel(ctx, len(departing), 8, func(ctx context.Context, i int) error {
		s, err := p.exists(ctx, p.paths.Blob(departing[i]))
		exist[i] = s != nil
		return err
	})
	if err != nil {
		return nil, err
	}
	var absent []string
	for i, sha := range departing {
		if !exist[i] {
			absent = append(absent, sha)
		}
	}
	out, err := p.liveContents(ctx, st, absent, rootVersion)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		// The blobs parent may be missing too (a tree whose blobs were
		// removed by hand): creating into it would fail.
		if err := p.ensurePath(ctx, p.paths.Blobs(), acl); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// liveContents reads the content of each sha256 from a live item the
// live manifest records with it, verified. A content found in no live item
// is looked up once more as a blob (it may have been stored meanwhile);
// if it is not there either, the root moved on (a ConflictError) or the
// history is damaged (an error: nothing is written).
func (p *Publisher) liveContents(ctx context.Context, st *state, shas []string, rootVersion int32) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(shas) == 0 {
		return out, nil
	}
	names := namesByHash(st.live)
	data := make([][]byte, len(shas))
	err := work.Parallel(ctx, len(shas), 8, func(ctx context.Context, i int) error {
		d, ok, err := p.liveContent(ctx, names[shas[i]], shas[i])
		if ok {
			data[i] = d
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, sha := range shas {
		if data[i] != nil {
			out[sha] = data[i]
			continue
		}
		s, err := p.exists(ctx, p.paths.Blob(sha))
		if err != nil {
			return nil, err
		}
		if s != nil {
			continue
		}
		_, rs, err := p.get(ctx, p.paths.Root)
		if err != nil {
			return nil, err
		}
		if rs == nil || rs.Version != rootVersion {
			return nil, p.conflict(ctx, st.liveGen(), "the root changed while the live content of departing items was read")
		}
		return nil, fmt.Errorf("content %.12s of live generation %d (items %v) is neither stored as a blob (%s) nor held by a live item: the history of %s is damaged (a blob or an item was changed outside zkconf); nothing was written",
			sha, st.liveGen(), names[sha], p.paths.Blob(sha), p.paths.Root)
	}
	return out, nil
}

// liveContent reads the live items named (which the live manifest records
// with content sha) until one holds that content.
func (p *Publisher) liveContent(ctx context.Context, names []string, sha string) ([]byte, bool, error) {
	for _, n := range names {
		d, s, err := p.get(ctx, p.paths.Item(n))
		if err != nil {
			return nil, false, err
		}
		if s != nil && manifest.Hash(d) == sha {
			return d, true, nil
		}
	}
	return nil, false, nil
}

// namesByHash maps each content sha256 of m to the item names holding it.
func namesByHash(m *manifest.Manifest) map[string][]string {
	out := map[string][]string{}
	if m == nil {
		return out
	}
	for _, n := range m.Names() {
		sha := m.Items[n].SHA256
		out[sha] = append(out[sha], n)
	}
	return out
}

// storeEntering stores, after the acknowledgement (step 7), the blobs of
// the contents that entered the live set (those not created by the commit
// itself), best effort: until then those contents are live items, and the
// next publish that overwrites them stores any blob still missing.
func (p *Publisher) storeEntering(ctx context.Context, pl *plan) {
	if len(pl.entering) == 0 || ctx.Err() != nil {
		return
	}
	start := time.Now()
	blobs := make(map[string][]byte, len(pl.entering))
	for _, sha := range pl.entering {
		if _, done := pl.backfill[sha]; !done && !pl.carried[sha] && !pl.stored[sha] {
			blobs[sha] = pl.blobData[sha]
		}
	}
	if len(blobs) == 0 {
		return
	}
	// One transaction of creates (a few fsyncs instead of one per blob);
	// if it fails (a blob already stored, say a content coming back, or
	// anything else), the creates one by one, NodeExists being fine.
	ops := make([]any, 0, len(blobs))
	for _, sha := range slices.Sorted(maps.Keys(blobs)) {
		ops = append(ops, &zk.CreateRequest{Path: p.paths.Blob(sha), Data: blobs[sha], Acl: pl.acl.Meta})
	}
	if len(ops) < 2 || multiSize(ops) > p.cfg.multiBudget {
		ops = nil
	} else if _, err := p.multi(ctx, ops); err != nil {
		ops = nil
	}
	if ops == nil {
		if err := p.storeBlobData(ctx, blobs, pl.acl.Meta); err != nil {
			p.log.Warn("could not store the new contents' blobs (the next publish stores them)", "generation", pl.gen, "error", err)
			return
		}
	}
	p.log.Debug("blobs stored", "generation", pl.gen, "blobs", len(blobs), "took", time.Since(start))
}

// blobWorkers is how many blob creates are in flight at once: the client
// pipelines them on its one connection.
const blobWorkers = 16

// storeBlobData creates the blobs of the given contents (sha256 → data),
// pipelined; NodeExists is fine. A missing blobs parent is created.
func (p *Publisher) storeBlobData(ctx context.Context, blobs map[string][]byte, acl []zk.ACL) error {
	err := p.storeContents(ctx, p.paths.Blob, "blob", blobs, acl)
	if errors.Is(err, zk.ErrNoNode) {
		if err := p.ensurePath(ctx, p.paths.Blobs(), acl); err != nil {
			return err
		}
		err = p.storeContents(ctx, p.paths.Blob, "blob", blobs, acl)
	}
	return err
}

// storeContents creates the node pathOf(sha) for each content of
// contents, with acl, blobWorkers at a time; NodeExists is fine (same
// hash, same content).
func (p *Publisher) storeContents(ctx context.Context, pathOf func(string) string, what string, contents map[string][]byte, acl []zk.ACL) error {
	shas := slices.Sorted(maps.Keys(contents))
	return work.Parallel(ctx, len(shas), blobWorkers, func(ctx context.Context, i int) error {
		path := pathOf(shas[i])
		_, err := read(ctx, func() (string, error) {
			return p.conn().Create(path, contents[shas[i]], 0, acl)
		})
		if zkclient.IsDenied(err) {
			return zkclient.Explain(err, path, zkclient.OpCreate)
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("store %s %s: %w", what, path, err)
		}
		return nil
	})
}

// backfill stores, for each sha256 of the live generation whose blob is
// missing, the blob, taking the content from a live item and verifying it.
func (p *Publisher) backfill(ctx context.Context, st *state, shas []string, rootVersion int32, acl []zk.ACL) error {
	missing, err := p.missingDeparting(ctx, st, shas, rootVersion, acl)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		p.log.Info("storing live contents whose blobs are missing before overwriting them", "blobs", len(missing))
	}
	return p.storeBlobData(ctx, missing, acl)
}

// backfillOverwritten backfills the live contents of every item this
// marker-mode publish overwrites or deletes. It covers more than the
// departing contents: an item of the new set may hold a live content under
// another name, but until that item is written the content would be
// nowhere if the publish died.
func (p *Publisher) backfillOverwritten(ctx context.Context, st *state, pl *plan, rootVersion int32) error {
	if st.live == nil {
		return nil
	}
	seen := map[string]bool{}
	var shas []string
	overwritten := append(slices.Clone(pl.sets), pl.deletes...)
	for _, d := range pl.dirMakes {
		if d.empty {
			overwritten = append(overwritten, d.path) // an item that becomes a directory
		}
	}
	for _, n := range overwritten {
		if it, ok := st.live.Items[n]; ok && !seen[it.SHA256] {
			seen[it.SHA256] = true
			shas = append(shas, it.SHA256)
		}
	}
	return p.backfill(ctx, st, shas, rootVersion, pl.acl.Meta)
}

// carry chooses, for a multi-mode commit of size bytes (encoded, without
// carried blobs), the entering contents whose blobs the commit creates
// (pl.carried: those read missing beside the state, while the commit
// stays within the multi budget) and those whose blobs need no store
// (pl.stored: read present; a blob the GC deleted since leaves a content
// that is a live item once the commit lands, which the history invariant
// allows, as when a publisher stops before storing its blobs). It
// reports whether any is carried.
//
// Every blob carried is one the store after the acknowledgement does not
// write: that store is a server write of its own (a transaction-log
// fsync and a round trip the publish's exit waits for), while the same
// bytes in the commit cost only their share of its one write. So the
// commit carries all it can: a one-item publish carries one blob, a
// publish of 20 changed 4 KiB items 80 KiB of them (up to 64 KiB until
// issue 27's twelfth part, which left such a publish a second server
// write after its commit; docs/bench/latency-pushstart-2026-11-27).
// Contents that do not fit, and those of a set too large for step 2 to
// list the blob store (speculate), are stored after the
// acknowledgement, as before.
func (p *Publisher) carry(st *state, pl *plan, size int) bool {
	if p.cfg.hooks.noCarry {
		return false
	}
	room := p.cfg.multiBudget - size
	for _, sha := range pl.entering { // sorted: the same choice every time
		exists, read := st.blobExists[sha]
		if _, done := pl.backfill[sha]; !read || done {
			continue
		}
		if exists {
			if pl.stored == nil {
				pl.stored = map[string]bool{}
			}
			pl.stored[sha] = true
			continue
		}
		op := zk.CreateRequest{Path: p.paths.Blob(sha), Data: pl.blobData[sha], Acl: pl.acl.Meta}
		n := opSize(&op)
		if n > room {
			continue
		}
		room -= n
		if pl.carried == nil {
			pl.carried = map[string]bool{}
		}
		pl.carried[sha] = true
	}
	return len(pl.carried) > 0
}

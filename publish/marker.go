package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// publishMarker runs step 6 in marker mode (6a to 6f of the package
// documentation): store blobs, create the liveness node, set the marker
// (bumping the root's version), write the items one by one fenced by the
// marker's version, and commit the manifest while deleting the marker.
func (p *Publisher) publishMarker(ctx context.Context, st *state, pl *plan, res *Result) error {
	id := pl.next.PublishID
	info := (&manifest.Marker{
		PublishID: id, Publisher: p.name(), StartedAt: time.Now().UTC(),
		BaseGeneration: st.liveGen(), Generation: pl.gen,
	}).Encode()

	// Step 6a. Content first: blobs are content-addressed, so creating them is
	// idempotent and harmless if the publish goes no further.
	entering := make(map[string][]byte, len(pl.entering))
	for _, sha := range pl.entering {
		entering[sha] = pl.blobData[sha]
	}
	if err := p.storeBlobData(ctx, entering, pl.acl.Meta); err != nil {
		return err
	}

	// Step 6b. The liveness node: while it exists, the marker is alive.
	live := p.paths.PublishingNode(id)
	if err := p.createLiveness(ctx, live, info, pl.acl.Meta); err != nil {
		return err
	}
	mark := p.mark()
	// Step 6f, whatever happens next: a marker left by a failed publish is
	// dead at once, and the next publish takes it over.
	defer p.dropLiveness(ctx, live)

	// Step 6c. The marker, with the root's compare-and-swap.
	rootVer, markerVer, err := p.placeMarker(ctx, st, pl, info, mark)
	if err != nil {
		return err
	}
	p.log.Info("marker set", "generation", pl.gen, "publish_id", id, "marker_version", markerVer)

	// Step 6c2. Before any item is overwritten or deleted, the live content it
	// holds must be stored as a blob (the history invariant: a retained
	// generation's content is a blob or a live item). Under the marker no
	// other publish writes items and no GC runs (the root's version is
	// ours), so what is checked here stays true until the final commit.
	if err := p.backfillOverwritten(ctx, st, pl, rootVer); err != nil {
		return fmt.Errorf("marker-mode publish of generation %d stopped after the marker was set, before any item was written; the live generation is unchanged, the marker %s stays and the next publish takes it over: %w",
			pl.gen, p.paths.Marker(), err)
	}

	// Step 6d. Items, each write fenced by the marker's version.
	if err := p.writeItems(ctx, pl, markerVer, mark, st.liveGen()); err != nil {
		return fmt.Errorf("marker-mode publish of generation %d stopped after the marker was set; the live generation is unchanged, the marker %s stays and the next publish takes it over: %w",
			pl.gen, p.paths.Marker(), err)
	}

	// Step 6e. The final commit: manifest, marker deleted, blobs checked, history.
	ops, kinds := p.finalOps(pl, rootVer, markerVer)
	for race := 1; ; race++ {
		if p.expiredSince(mark) {
			return p.expiredMidway(pl)
		}
		err := p.commit(ctx, "final", ops, kinds, st.liveGen(), pl, res)
		var br *blobRaceError
		if errors.As(err, &br) && race < maxBlobRaces {
			// A departing blob checked before the items were written is
			// gone (removed outside zkconf: no GC runs while we hold the
			// marker), or the history parent is: restore what can be.
			p.log.Info("blob store changed before the final commit", "reason", br.Error())
			if err := p.ensureMeta(ctx, &state{rootStat: st.rootStat}, true, pl.acl.Meta); err != nil {
				return err
			}
			if br.sha != "" {
				if err := p.backfill(ctx, st, []string{br.sha}, rootVer, pl.acl.Meta); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrOutcomeUnknown) {
			return fmt.Errorf("marker-mode publish of generation %d: %w (the marker %s stays; the next publish takes it over)", pl.gen, err, p.paths.Marker())
		}
		return err
	}
}

func (p *Publisher) expiredMidway(pl *plan) error {
	return fmt.Errorf("session expired during the marker-mode publish of generation %d to %s: stopped without retrying; the live generation is unchanged, the marker stays and the next publish takes it over: %w",
		pl.gen, p.paths.Root, zkclient.ErrSessionExpired)
}

// createLiveness creates this publish's ephemeral liveness node. Its name
// is the publish id, so after a lost connection NodeExists means it was
// ours.
func (p *Publisher) createLiveness(ctx context.Context, path string, info []byte, acl []zk.ACL) error {
	_, err := read(ctx, func() (string, error) {
		return p.conn().Create(path, info, zk.FlagEphemeral, acl)
	})
	if zkclient.IsDenied(err) {
		return zkclient.Explain(err, path, zkclient.OpCreate)
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create liveness node %s: %w", path, err)
	}
	return nil
}

// dropLiveness deletes the liveness node, best effort: it is ephemeral and
// goes with the session anyway. A marker left behind by a failed publish is
// then seen as dead at once and the next publish takes it over.
func (p *Publisher) dropLiveness(ctx context.Context, path string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := zkclient.Call(ctx, func() (struct{}, error) { return struct{}{}, p.conn().Delete(path, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		p.log.Warn("could not delete the liveness node (it goes with the session)", "path", path, "error", err)
	}
}

// placeMarker creates (or takes over) the marker in one transaction with
// the root's compare-and-swap. The root's data is rewritten unchanged so
// that its version moves: any publish that read the root before cannot
// commit afterwards, and any that reads it afterwards sees the marker.
// It returns the root's and the marker's new versions.
func (p *Publisher) placeMarker(ctx context.Context, st *state, pl *plan, info []byte, mark sessionMark) (int32, int32, error) {
	var ops []any
	kinds := []opKind{{"root", ""}, {"marker", ""}}
	if st.rootStat == nil {
		ops = append(ops, &zk.CreateRequest{Path: p.paths.Root, Data: nil, Acl: pl.acl.Item})
	} else {
		ops = append(ops, &zk.SetDataRequest{Path: p.paths.Root, Data: st.rootData, Version: st.rootStat.Version})
	}
	if st.marker != nil {
		ops = append(ops, &zk.SetDataRequest{Path: p.paths.Marker(), Data: info, Version: st.marker.stat.Version})
	} else {
		ops = append(ops, &zk.CreateRequest{Path: p.paths.Marker(), Data: info, Acl: pl.acl.Item})
	}
	if pl.fence != "" {
		ops = append(ops, &zk.CheckVersionRequest{Path: pl.fence, Version: -1})
		kinds = append(kinds, opKind{"fence", pl.fence})
	}
	for send := 1; ; send++ {
		if p.expiredSince(mark) {
			return 0, 0, fmt.Errorf("session expired before the marker was set; nothing was written to %s: %w", p.paths.Root, zkclient.ErrSessionExpired)
		}
		p.cfg.hooks.commitSending("marker")
		resp, err := p.multi(ctx, ops)
		if err == nil {
			var rv, mv int32
			if resp[0].Stat != nil {
				rv = resp[0].Stat.Version
			}
			if resp[1].Stat != nil {
				mv = resp[1].Stat.Version
			}
			return rv, mv, nil
		}
		if ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
			return 0, 0, fmt.Errorf("setting the marker of %s: outcome unknown (a marker left behind is taken over by the next publish): %w", p.paths.Root, err)
		}
		if zkclient.IsUncertain(err) {
			if werr := p.waitSession(ctx); werr != nil {
				return 0, 0, fmt.Errorf("setting the marker of %s: %w", p.paths.Root, werr)
			}
			rv, mv, ours, rerr := p.markerSetBy(ctx, pl.next.PublishID)
			if rerr != nil {
				return 0, 0, rerr
			}
			if ours {
				return rv, mv, nil
			}
			if p.expiredSince(mark) || errors.Is(err, zkclient.ErrSessionExpired) {
				return 0, 0, fmt.Errorf("session expired while setting the marker of %s; it was not set: %w", p.paths.Root, zkclient.ErrSessionExpired)
			}
			if send >= maxCommitSends {
				return 0, 0, fmt.Errorf("setting the marker of %s: lost with the connection %d times: %w", p.paths.Root, send, err)
			}
			continue
		}
		if zkclient.IsDenied(err) {
			return 0, 0, err
		}
		i, opErr := failedOp(resp)
		if i < 0 {
			return 0, 0, fmt.Errorf("set the marker of %s: %w", p.paths.Root, err)
		}
		if send > 1 {
			// An earlier send may have landed late: then the marker is ours.
			if rv, mv, ours, rerr := p.markerSetBy(ctx, pl.next.PublishID); rerr == nil && ours {
				return rv, mv, nil
			}
		}
		if ferr := p.fenceFailure(ctx, pl, kinds[i], opErr); ferr != nil {
			return 0, 0, ferr
		}
		if kinds[i].what == "marker" {
			return 0, 0, p.conflict(ctx, st.liveGen(), "another marker-mode publish set or changed the marker first")
		}
		return 0, 0, p.commitFailure(ctx, kinds[i], opErr, st.liveGen())
	}
}

// markerSetBy reports whether the marker names publish id (an earlier send
// of placeMarker landed) and, if so, the root's and the marker's versions.
func (p *Publisher) markerSetBy(ctx context.Context, id string) (rootVer, markerVer int32, ours bool, err error) {
	data, ms, err := p.get(ctx, p.paths.Marker())
	if err != nil || ms == nil {
		return 0, 0, false, err
	}
	if m, derr := manifest.DecodeMarker(data); derr != nil || m.PublishID != id {
		return 0, 0, false, nil
	}
	_, rs, err := p.get(ctx, p.paths.Root)
	if err != nil || rs == nil {
		return 0, 0, false, err
	}
	return rs.Version, ms.Version, true, nil
}

// writeItems writes the plan's item operations under the marker. Each write
// is a Multi with Check(marker, version): if another publish took the
// marker over (which changes its version) or finished (which deletes it),
// the write fails and nothing more is written. Under that fence every write
// is idempotent (set to this content, delete), so a write lost with the
// connection is simply sent again, unless the session expired. The
// directories of a tree are made first, one depth at a time (parent
// first), and the ones left without items deleted last, children first; a
// directory a stray keeps stays (its parents too), reported.
func (p *Publisher) writeItems(ctx context.Context, pl *plan, markerVer int32, mark sessionMark, baseGen int64) error {
	var written atomic.Int64
	run := func(ops []kindOp) error {
		return work.Parallel(ctx, len(ops), p.cfg.hooks.itemWriters(4), func(ctx context.Context, i int) error {
			if err := p.fencedWrite(ctx, ops[i].op, ops[i].kind, markerVer, mark, pl, baseGen); err != nil {
				return err
			}
			return p.cfg.hooks.itemWritten(int(written.Add(1)))
		})
	}
	w := p.writes(pl)
	// Parent first: the directories are sorted by path, so each run of
	// one depth is written, side by side, once the runs before it are.
	for dirs := w.dirMakes; len(dirs) > 0; {
		depth := strings.Count(dirs[0].kind.name, "/")
		n := 1
		for n < len(dirs) && strings.Count(dirs[n].kind.name, "/") == depth {
			n++
		}
		if err := run(dirs[:n]); err != nil {
			return err
		}
		dirs = dirs[n:]
	}
	if err := run(w.items); err != nil {
		return err
	}
	if err := run(w.deletes); err != nil {
		return err
	}
	// Children first, one at a time: a directory a stray keeps keeps its
	// parents too.
	kept := map[string]bool{}
	for _, op := range w.dirDeletes {
		d := op.kind.name
		if keepsParent(kept, d) {
			kept[d] = true
			continue
		}
		err := p.fencedWrite(ctx, op.op, op.kind, markerVer, mark, pl, baseGen)
		var se *strayError
		if errors.As(err, &se) {
			kids, _, lerr := p.children(ctx, p.paths.Item(d))
			if lerr != nil {
				return lerr
			}
			for _, k := range kids {
				if !pl.baseDirs[d+"/"+k] {
					pl.strays = append(pl.strays, d+"/"+k)
				}
			}
			p.log.Warn("a node zkconf did not write keeps a directory the set no longer has", "directory", se.path)
			kept[d] = true
			continue
		}
		if err != nil {
			return err
		}
		if err := p.cfg.hooks.itemWritten(int(written.Add(1))); err != nil {
			return err
		}
	}
	slices.Sort(pl.strays)
	pl.strays = slices.Compact(pl.strays)
	return nil
}

// keepsParent reports whether a kept directory is below dir.
func keepsParent(kept map[string]bool, dir string) bool {
	for k := range kept {
		if strings.HasPrefix(k, dir+"/") {
			return true
		}
	}
	return false
}

func (p *Publisher) fencedWrite(ctx context.Context, op any, kind opKind, markerVer int32, mark sessionMark, pl *plan, baseGen int64) error {
	fence := &zk.CheckVersionRequest{Path: p.paths.Marker(), Version: markerVer}
	dir := kind.what == "dir"
	for attempt := 0; ; attempt++ {
		if p.expiredSince(mark) {
			return p.expiredMidway(pl)
		}
		ops := []any{fence, op}
		if pl.fence != "" {
			ops = append(ops, &zk.CheckVersionRequest{Path: pl.fence, Version: -1})
		}
		resp, err := p.multi(ctx, ops)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
			return err
		}
		if zkclient.IsUncertain(err) {
			if werr := p.waitSession(ctx); werr != nil {
				return werr
			}
			continue
		}
		if zkclient.IsDenied(err) {
			return err
		}
		i, opErr := failedOp(resp)
		fk := opKind{"item", ""}
		switch i {
		case 0:
			fk = opKind{"marker", ""}
		case 2:
			fk = opKind{"fence", pl.fence}
		}
		if ferr := p.fenceFailure(ctx, pl, fk, opErr); ferr != nil {
			return ferr
		}
		switch {
		case i == 0:
			return p.conflict(ctx, baseGen, "the marker was taken over by another publish (its version changed) or removed; this publish stopped")
		case i == 1:
			switch o := op.(type) {
			case *zk.CreateRequest:
				if errors.Is(opErr, zk.ErrNodeExists) {
					if dir {
						return nil // there already (our own write, lost with the connection)
					}
					op = &zk.SetDataRequest{Path: o.Path, Data: o.Data, Version: -1}
					continue
				}
			case *zk.SetDataRequest:
				if errors.Is(opErr, zk.ErrNoNode) {
					op = &zk.CreateRequest{Path: o.Path, Data: o.Data, Acl: pl.acl.Item}
					continue
				}
			case *zk.DeleteRequest:
				if errors.Is(opErr, zk.ErrNoNode) {
					return nil
				}
				if dir && errors.Is(opErr, zk.ErrNotEmpty) {
					return &strayError{path: o.Path, dir: kind.name}
				}
			}
			return fmt.Errorf("write %s: %w", opPath(op), opErr)
		}
		return fmt.Errorf("write %s: %w", opPath(op), err)
	}
}

func opPath(op any) string {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return o.Path
	case *zk.SetDataRequest:
		return o.Path
	case *zk.DeleteRequest:
		return o.Path
	case *zk.CheckVersionRequest:
		return o.Path
	}
	return "?"
}

// finalOps builds the marker-mode final commit.
func (p *Publisher) finalOps(pl *plan, rootVer, markerVer int32) ([]any, []opKind) {
	ops := []any{
		&zk.SetDataRequest{Path: p.paths.Root, Data: pl.nextBytes, Version: rootVer},
		&zk.DeleteRequest{Path: p.paths.Marker(), Version: markerVer},
	}
	kinds := []opKind{{"root", ""}, {"marker", ""}}
	var checks []any
	var checkKinds []opKind
	for _, sha := range pl.departing {
		checks = append(checks, &zk.CheckVersionRequest{Path: p.paths.Blob(sha), Version: -1})
		checkKinds = append(checkKinds, opKind{"blob", sha})
	}
	tail := []any{&zk.CreateRequest{Path: p.paths.HistoryNode(pl.gen), Data: pl.nextBytes, Acl: pl.acl.Meta}}
	tailKinds := []opKind{{"history", ""}}
	if pl.fence != "" {
		tail = append(tail, &zk.CheckVersionRequest{Path: pl.fence, Version: -1})
		tailKinds = append(tailKinds, opKind{"fence", pl.fence})
	}
	// The departing blobs were checked (or stored) under the marker before
	// any item was written, and no GC can run while we hold it: their
	// Checks are a second guard, left out if they would not fit (the
	// departing set depends on the live generation, not on this request,
	// so Validate cannot bound it).
	if multiSize(ops)+multiSize(checks)+multiSize(tail) <= p.cfg.multiBudget {
		ops, kinds = append(ops, checks...), append(kinds, checkKinds...)
	} else {
		p.log.Info("final commit too large with the departing blobs' checks; sending it without them", "checks", len(checks))
	}
	return append(ops, tail...), append(kinds, tailKinds...)
}

// MarkerReport describes a root's marker, for status displays.
type MarkerReport struct {
	// PublishID and Publisher are what the marker names (empty when its
	// data was not written by confpush).
	PublishID, Publisher string
	// Age is how long ago the marker was last written.
	Age time.Duration
	// Live is true when its publish's liveness node exists.
	Live bool
	// Foreign is true when the marker's data was not written by confpush.
	Foreign bool
}

// String says what the marker means and what to do about it.
func (r *MarkerReport) String() string {
	switch {
	case r.Live:
		return fmt.Sprintf("a marker-mode publish (%s by %s, started %v ago) is in progress", r.PublishID, r.Publisher, r.Age.Round(time.Second))
	case r.Foreign:
		return fmt.Sprintf("an abandoned marker (set %v ago, not written by confpush) blocks agents that do not hold the live generation; the next `confpush publish` takes it over", r.Age.Round(time.Second))
	default:
		return fmt.Sprintf("an abandoned marker (publish %s by %s, set %v ago; its publisher is gone) blocks agents that do not hold the live generation; the next `confpush publish` takes it over",
			r.PublishID, r.Publisher, r.Age.Round(time.Second))
	}
}

// InspectMarker reads the root's marker and whether its publish is alive;
// it returns nil when there is no marker.
func (p *Publisher) InspectMarker(ctx context.Context) (*MarkerReport, error) {
	conn, paths := p.conn(), p.paths
	type node struct {
		data []byte
		stat *zk.Stat
	}
	n, err := read(ctx, func() (node, error) {
		d, s, err := conn.Get(paths.Marker())
		if errors.Is(err, zk.ErrNoNode) {
			return node{}, nil
		}
		return node{d, s}, err
	})
	if err != nil || n.stat == nil {
		return nil, err
	}
	r := &MarkerReport{Age: time.Since(time.UnixMilli(n.stat.Mtime))}
	info, err := manifest.DecodeMarker(n.data)
	if err != nil {
		r.Foreign = true
		return r, nil
	}
	r.PublishID, r.Publisher = info.PublishID, info.Publisher
	r.Live, err = read(ctx, func() (bool, error) {
		ok, _, err := conn.Exists(paths.PublishingNode(info.PublishID))
		return ok, err
	})
	return r, err
}

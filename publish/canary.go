package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// This file is the publishing side of canary rollouts (docs/design.md,
// "Canary rollouts"): starting one (Request.Canary), the transaction;
// widening and ending it (promote, abort) are rolloutsteps.go, the
// rollout record and reading it rolloutrecord.go. Every step is one
// compare-and-swap on the root's data version, so the rollout state is
// covered by the same compare-and-swap as every publish.

// ErrRolloutInProgress means the root carries a canary rollout: a plain
// publish, rollback, edit or a new canary is refused unless
// Request.Supersede. The error is a *RolloutInProgressError.
var ErrRolloutInProgress = errors.New("a canary rollout is in progress")

// ErrNoRollout means a rollout step (widen, promote, abort) found no
// rollout, or another rollout than the one it names, in the root. The
// error is a *RolloutConflictError.
var ErrNoRollout = errors.New("not the rollout in progress")

// RolloutInProgressError describes the rollout that refused a publish. It
// matches ErrRolloutInProgress.
type RolloutInProgressError struct {
	// Root is the config root.
	Root string
	// RolloutID, Candidate and Stable identify the rollout: its id, the
	// candidate generation and the stable generation.
	RolloutID         string
	Candidate, Stable int64
	// Selection is the rollout's current selection.
	Selection manifest.Selection
	// Publisher and StartedAt: who started it and when.
	Publisher string
	StartedAt time.Time
}

// Error names the rollout, its owner and its age.
func (e *RolloutInProgressError) Error() string {
	return fmt.Sprintf("%v on %s: rollout %s (candidate generation %d over stable %d, selection %s) started by %s %v ago; promote or abort it (confpush rollout promote|abort), or supersede it (Supersede, --supersede)",
		ErrRolloutInProgress, e.Root, e.RolloutID, e.Candidate, e.Stable, DescribeSelection(e.Selection), e.Publisher,
		time.Since(e.StartedAt).Round(time.Second))
}

// Is makes errors.Is(err, ErrRolloutInProgress) true.
func (e *RolloutInProgressError) Is(target error) bool { return target == ErrRolloutInProgress }

// RolloutConflictError reports a rollout step naming a rollout the root
// does not carry (ended, superseded, or never started). It matches
// ErrNoRollout and ErrConflict.
type RolloutConflictError struct {
	// Root is the config root.
	Root string
	// Want is the rollout id the step named ("" for any).
	Want string
	// Found is the rollout id the root carries ("" for none).
	Found string
}

// Error says which rollout was expected and which was found.
func (e *RolloutConflictError) Error() string {
	switch {
	case e.Found == "":
		return fmt.Sprintf("%v: root %s has no canary rollout in progress (ended or never started; see confpush history)", ErrNoRollout, e.Root)
	default:
		return fmt.Sprintf("%v: root %s carries rollout %s, not %s (another operator or driver acted first)", ErrNoRollout, e.Root, e.Found, e.Want)
	}
}

// Is makes errors.Is match ErrNoRollout and ErrConflict.
func (e *RolloutConflictError) Is(target error) bool {
	return target == ErrNoRollout || target == ErrConflict
}

// DescribeSelection renders a selection for humans: `selector "zone=a"`,
// `10%`, or both.
func DescribeSelection(s manifest.Selection) string {
	switch {
	case s.Selector != "" && s.Percent > 0:
		return fmt.Sprintf("%q and %v%%", s.Selector, s.Percent)
	case s.Percent > 0:
		return fmt.Sprintf("%v%%", s.Percent)
	}
	return fmt.Sprintf("%q", s.Selector)
}

// canaryStart publishes req.Items as the candidate generation of a new
// rollout (design, protocol step 1), in five steps, one function each:
//
//  1. checkCanaryRequest: the request alone (selection, kind, mode and,
//     when it fails, the items too, so that every problem is reported);
//  2. checkCanaryRoot: the root read as a publish reads it (fence, a
//     stable generation, no marker, the expected generation, no other
//     rollout);
//  3. buildCanary: the candidate manifest, the root's data carrying the
//     canary and the rollout record, refused before anything is written
//     when the set is the stable content, an agent could not read it or
//     the transaction would not fit (a dry run ends here);
//  4. stageCanary: every candidate content as a blob (the history
//     invariant for g-C), and the contents the stable set lacks as
//     candidate/<sha256>, readable by agents (idempotent creates);
//  5. commitCanary: one transaction of the root's data (stable + canary),
//     the candidate manifest, history g-C and the record; then the
//     contents of a superseded candidate the new one does not use go.
func (p *Publisher) canaryStart(ctx context.Context, req Request) (*Result, error) {
	if err := p.checkCanaryRequest(req); err != nil {
		return nil, err
	}
	hashed, st, acl, err := p.checkAndRead(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := p.checkCanaryRoot(ctx, st, req); err != nil {
		return nil, err
	}
	tx, err := p.buildCanary(ctx, st, req, hashed, acl)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		tx.res.DryRun = true
		return tx.res, nil
	}
	if err := p.stageCanary(ctx, st, req, tx); err != nil {
		return nil, err
	}
	if err := p.commitCanary(ctx, st, req, tx); err != nil {
		return nil, err
	}
	p.pruneCandidate(ctx, tx.candContents)
	return tx.res, nil
}

// canaryTxn is the start of a rollout as buildCanary plans it.
type canaryTxn struct {
	gen                  int64
	stable, cand         *manifest.Manifest
	canary               *manifest.Canary
	candBytes, rootBytes []byte
	recBytes             []byte
	hashed               map[string]manifest.Item
	acl                  inherited
	// candContents are the contents the stable set lacks, by hash
	// (stageCanary fills it).
	candContents map[string][]byte
	res          *Result
}

// checkCanaryRequest is canaryStart's step 1.
func (p *Publisher) checkCanaryRequest(req Request) error {
	var errs []error
	if err := req.Canary.Validate(); err != nil {
		errs = append(errs, &InputError{Err: err})
	}
	if req.RollbackOf != 0 || req.promoteOf != 0 || req.abortOf != 0 {
		errs = append(errs, &InputError{Err: errors.New("a canary is not a rollback")})
	}
	if req.Mode == manifest.ModeMarker {
		errs = append(errs, &InputError{Err: errors.New("a canary is committed in one transaction: marker mode does not apply")})
	}
	if len(errs) > 0 {
		// Validate the items too, to report every problem at once.
		if _, err := p.checkRequest(req, nil); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return nil
}

// checkCanaryRoot is canaryStart's step 2.
func (p *Publisher) checkCanaryRoot(ctx context.Context, st *state, req Request) error {
	if req.Fence != "" {
		if err := p.checkFence(ctx, req.Fence); err != nil {
			return err
		}
	}
	if st.live == nil {
		return fmt.Errorf("%w: a canary needs a stable generation to compare with; publish %s without --canary first", ErrNotPublished, p.paths.Root)
	}
	if st.marker != nil {
		return fmt.Errorf("root %s has a marker (a marker-mode publish in progress or abandoned): finish it with a plain publish before starting a canary", p.paths.Root)
	}
	if liveGen := st.liveGen(); req.ExpectGeneration != 0 && req.ExpectGeneration != liveGen {
		return &ConflictError{Expected: req.ExpectGeneration, Actual: liveGen,
			Reason: fmt.Sprintf("root %s is not at the expected generation", p.paths.Root)}
	}
	return p.refuseRollout(st, req)
}

// buildCanary is canaryStart's step 3.
func (p *Publisher) buildCanary(ctx context.Context, st *state, req Request, hashed map[string]manifest.Item, acl inherited) (*canaryTxn, error) {
	stable := *st.live
	stable.Canary = nil
	gen := st.topGen() + 1
	now := time.Now().UTC()
	sel := *req.Canary
	cand := &manifest.Manifest{
		Format: manifest.FormatFor(hashed), Generation: gen, PublishID: newPublishID(),
		PublishedAt: now, Publisher: p.name(), Mode: manifest.ModeMulti,
		Incarnation: stable.Incarnation, Message: req.Message, Items: hashed, Candidate: &sel,
	}
	if stable.SameContent(cand) && !req.Force {
		return nil, &InputError{Err: fmt.Errorf("the set is the content of the stable generation %d: nothing to canary (Force to start anyway)", stable.Generation)}
	}
	// A candidate is promoted whole: every agent of the root must read it.
	if err := p.refuseOldAgents(ctx, cand.Format, req.AllowOldAgents); err != nil {
		return nil, err
	}
	candBytes := cand.Encode()
	canary := &manifest.Canary{
		Generation: gen, ManifestSHA256: manifest.ItemOf(candBytes).SHA256, Selection: sel,
		RolloutID: newPublishID()[:16], StartedAt: now, Publisher: p.name(),
	}
	withCanary := stable
	withCanary.Canary = canary
	rootBytes := withCanary.Encode()
	newRec := &RolloutRecord{
		RolloutID: canary.RolloutID, Candidate: gen, Stable: stable.Generation, Selection: sel,
		StartedAt: now, Publisher: p.name(), Message: req.Message,
		Events: []RolloutEvent{{At: now, Kind: EventStart, Selection: &sel, Generation: gen, By: p.name(), Message: req.Message}},
	}
	if pl := req.RolloutPlan; pl != nil {
		newRec.Steps, newRec.Auto = pl.Steps, pl.Auto
		if pl.Bake > 0 {
			newRec.Bake = pl.Bake.String()
		}
	}
	recBytes, err := json.Marshal(newRec)
	if err != nil {
		return nil, err
	}
	// The start is one transaction carrying the candidate manifest twice
	// (candidate node, history) beside the root's data: refuse, before
	// anything is written, a set whose transaction would not fit.
	if size := multiSize([]any{
		&zk.SetDataRequest{Path: p.paths.Root, Data: rootBytes},
		&zk.SetDataRequest{Path: p.paths.Candidate(), Data: candBytes},
		&zk.CreateRequest{Path: p.paths.HistoryNode(gen), Data: candBytes, Acl: acl.Meta},
		&zk.CreateRequest{Path: p.paths.Rollout(), Data: recBytes, Acl: acl.Meta},
		&zk.CheckVersionRequest{Path: req.Fence},
	}); size > p.cfg.multiBudget {
		return nil, &InputError{Err: fmt.Errorf("a canary of this set needs a %d-byte transaction (the candidate manifest, %d bytes, travels twice beside the root's data), over the %d-byte limit: canary a set with fewer items, or publish it without --canary",
			size, len(candBytes), p.cfg.multiBudget)}
	}
	res := &Result{Generation: gen, Mode: manifest.ModeMulti, Manifest: cand}
	res.Added, res.Changed, res.Removed = diffNames(stable.Items, hashed)
	return &canaryTxn{gen: gen, stable: &stable, cand: cand, canary: canary, candBytes: candBytes, rootBytes: rootBytes,
		recBytes: recBytes, hashed: hashed, acl: acl, res: res}, nil
}

// stageCanary is canaryStart's step 4.
func (p *Publisher) stageCanary(ctx context.Context, st *state, req Request, tx *canaryTxn) error {
	if err := p.ensureMeta(ctx, st, false, tx.acl.Meta); err != nil {
		return err
	}
	stableSHA := map[string]bool{}
	for _, it := range tx.stable.Items {
		stableSHA[it.SHA256] = true
	}
	blobs := map[string][]byte{}
	tx.candContents = map[string][]byte{}
	for n, it := range tx.hashed {
		blobs[it.SHA256] = req.Items[n]
		if !stableSHA[it.SHA256] {
			tx.candContents[it.SHA256] = req.Items[n]
		}
	}
	if err := p.storeBlobData(ctx, blobs, tx.acl.Meta); err != nil {
		return err
	}
	if err := p.ensurePath(ctx, p.paths.Candidate(), tx.acl.Item); err != nil {
		return err
	}
	return p.storeContents(ctx, p.paths.CandidateContent, "candidate content", tx.candContents, tx.acl.Item)
}

// commitCanary is canaryStart's step 5: one transaction.
func (p *Publisher) commitCanary(ctx context.Context, st *state, req Request, tx *canaryTxn) error {
	_, recStat, err := p.readRecord(ctx)
	if err != nil {
		return err
	}
	ops := []any{
		&zk.SetDataRequest{Path: p.paths.Root, Data: tx.rootBytes, Version: st.rootStat.Version},
		&zk.SetDataRequest{Path: p.paths.Candidate(), Data: tx.candBytes, Version: -1},
		&zk.CreateRequest{Path: p.paths.HistoryNode(tx.gen), Data: tx.candBytes, Acl: tx.acl.Meta},
	}
	kinds := []opKind{{"root", ""}, {"candidate", ""}, {"history", ""}}
	if recStat == nil {
		ops = append(ops, &zk.CreateRequest{Path: p.paths.Rollout(), Data: tx.recBytes, Acl: tx.acl.Meta})
	} else {
		ops = append(ops, &zk.SetDataRequest{Path: p.paths.Rollout(), Data: tx.recBytes, Version: recStat.Version})
	}
	kinds = append(kinds, opKind{"rollout", ""})
	if req.Fence != "" {
		ops = append(ops, &zk.CheckVersionRequest{Path: req.Fence, Version: -1})
		kinds = append(kinds, opKind{"fence", req.Fence})
	}
	pl := &plan{gen: tx.gen, next: tx.cand, nextBytes: tx.candBytes, rootVersion: -1, fence: req.Fence, acl: tx.acl}
	sel := tx.canary.Selection
	p.log.Info("starting canary", "candidate", tx.gen, "stable", tx.stable.Generation, "rollout", tx.canary.RolloutID,
		"selector", sel.Selector, "percent", sel.Percent)
	if err := p.commit(ctx, "canary", ops, kinds, st.liveGen(), pl, tx.res); err != nil {
		return err
	}
	tx.res.PublishID = tx.cand.PublishID
	return nil
}

// diffNames reports the names added, changed and removed from a to b.
func diffNames(a, b map[string]manifest.Item) (added, changed, removed []string) {
	for _, n := range slices.Sorted(maps.Keys(b)) {
		old, ok := a[n]
		switch {
		case !ok:
			added = append(added, n)
		case old != b[n]:
			changed = append(changed, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[n]; !ok {
			removed = append(removed, n)
		}
	}
	return added, changed, removed
}

// pruneCandidate deletes the candidate's children not in keep, and with
// keep nil the candidate node too. Best effort: leftovers are removed by
// the next publish, and nothing reads them once the root has no canary.
func (p *Publisher) pruneCandidate(ctx context.Context, keep map[string][]byte) {
	kids, ok, err := p.children(ctx, p.paths.Candidate())
	if err != nil || !ok {
		return
	}
	for _, k := range kids {
		if _, kept := keep[k]; kept {
			continue
		}
		if err := p.conn().Delete(p.paths.CandidateContent(k), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			p.log.Warn("could not delete a candidate content (the next publish retries)", "path", p.paths.CandidateContent(k), "error", err)
			return
		}
	}
	if keep == nil {
		if err := p.conn().Delete(p.paths.Candidate(), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			p.log.Warn("could not delete the candidate node (the next publish retries)", "error", err)
		}
	}
}

// cleanupCandidate runs after a commit that leaves the root without a
// canary: one exists check, and when a candidate node is there (the
// rollout just ended, or a publisher died before removing it) its
// deletion.
func (p *Publisher) cleanupCandidate(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	st, err := p.exists(ctx, p.paths.Candidate())
	if err != nil || st == nil {
		return
	}
	p.pruneCandidate(ctx, nil)
}

// refuseRollout refuses a publish on a root with a rollout, unless it
// supersedes it or ends it (promote, abort of that rollout).
func (p *Publisher) refuseRollout(st *state, req Request) error {
	if st.live == nil {
		if req.rolloutID != "" {
			return &RolloutConflictError{Root: p.paths.Root, Want: req.rolloutID}
		}
		return nil
	}
	c := st.live.Canary
	if req.rolloutID != "" {
		if c == nil || c.RolloutID != req.rolloutID {
			found := ""
			if c != nil {
				found = c.RolloutID
			}
			return &RolloutConflictError{Root: p.paths.Root, Want: req.rolloutID, Found: found}
		}
		return nil
	}
	if c == nil || req.Supersede {
		return nil
	}
	return &RolloutInProgressError{Root: p.paths.Root, RolloutID: c.RolloutID, Candidate: c.Generation,
		Stable: st.live.Generation, Selection: c.Selection, Publisher: c.Publisher, StartedAt: c.StartedAt}
}

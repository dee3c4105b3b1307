package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
)

// maxBlobRaces bounds how often a publish re-plans because the blob store
// changed under it (a concurrent GC); maxCommitSends bounds how often one
// commit is sent after it was lost with the connection and found not
// applied.
const (
	maxBlobRaces   = 4
	maxCommitSends = 5
)

// Publish publishes req.Items as the root's next generation. See the
// package documentation for the protocol: the numbered steps there are
// marked in the code. It validates everything before the first write; it
// never reports success for a publish that did not land and never lands
// one twice.
func (p *Publisher) Publish(ctx context.Context, req Request) (*Result, error) {
	if req.Canary != nil {
		return p.canaryStart(ctx, req)
	}
	// Steps 1 and 2: validate and hash the request while the state is read.
	hashed, st, acl, err := p.checkAndRead(ctx, req)
	if err != nil {
		return nil, err
	}
	for race := 1; ; race++ {
		if st == nil {
			// Step 2 again: the blob store changed under the last attempt.
			if st, err = p.readState(ctx); err != nil {
				return nil, err
			}
		}
		res, err := p.publishOnce(ctx, req, hashed, acl, st)
		st = nil
		var br *blobRaceError
		if errors.As(err, &br) && race < maxBlobRaces {
			p.log.Info("blob store changed under the publish; planning again", "reason", br.Error())
			continue
		}
		return res, err
	}
}

// checkAndRead validates and hashes the request (step 1) and reads the
// root's state and the ACLs to copy (step 2). The reads go out first and
// the request is validated and hashed while they are in flight: reading
// changes nothing, and hashing a large set costs about as much as a round
// trip. A bad request still gets its error at once: the reads are
// cancelled. Beside them go, for a small set, the reads of the live items
// at the request's paths and of whether its contents' blobs exist
// (speculate, stepTwo). Reads Prefetch sent are taken
// instead, when there are some; if they failed, they are sent again.
func (p *Publisher) checkAndRead(ctx context.Context, req Request) (map[string]manifest.Item, *state, inherited, error) {
	var acl inherited
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cached := p.cachedACLs()
	rd := p.takePrefetch()
	prefetched := rd != nil
	var pre *setHash
	if prefetched {
		pre = rd.hash
	} else {
		var sp speculation
		// A larger set is hashed beside the reads, for step 2 to read
		// its unchanged items early (readUnchanged); not one over the
		// set limit, which step 1 refuses before any hashing.
		if sp, pre = speculate(req.Items); pre == nil && setWithin(req.Items, p.cfg.maxSet) {
			pre = hashAhead(req.Items)
		}
		rd = p.startStepTwo(rctx, sp, pre)
	}
	hashed, err := p.checkRequest(req, pre)
	if err != nil {
		cancel()
		<-rd.done
		return nil, nil, acl, err
	}
	<-rd.done
	if prefetched && (rd.stErr != nil || rd.aclErr != nil || (rd.acl == nil && cached == nil)) {
		sp, _ := speculate(req.Items)
		rd = p.startStepTwo(rctx, sp, nil)
		<-rd.done
	}
	if rd.acl != nil {
		if rd.aclErr != nil {
			return nil, nil, acl, rd.aclErr
		}
		acl = *rd.acl
	} else {
		acl = *cached
	}
	if rd.stErr != nil {
		return nil, nil, acl, rd.stErr
	}
	st := rd.st
	st.prefetched, st.blobExists, st.candidate = rd.items, rd.blobs, rd.candidate
	if acl.ItemFrom != aclVersionOf(st.rootStat) || acl.MetaFrom != aclVersionOf(st.histStat) {
		if acl, err = p.readACLs(ctx); err != nil {
			return nil, nil, acl, err
		}
	}
	p.mu.Lock()
	p.acls = &acl
	p.mu.Unlock()
	if aclSize(acl.Meta) > aclSize(p.cfg.acl) {
		// The manifest's size check, again with the real history ACL.
		if err := p.manifestCheck(req, hashed, acl.Meta); err != nil {
			return nil, nil, acl, err
		}
	}
	return hashed, st, acl, nil
}

// checkRequest validates the request without touching ZooKeeper and
// returns the set's manifest entries: the set is hashed here, once per
// publish, unless pre hashed this very set already (speculate, Prefetch).
// Validate's generic manifest check is replaced by the exact one for this
// root (manifestCheck), reported in the same place.
func (p *Publisher) checkRequest(req Request, pre *setHash) (map[string]manifest.Item, error) {
	errs := validateItems(req.Items, ValidateOptions{AllowEmpty: req.AllowEmpty, MaxSetSize: p.cfg.maxSet})
	var hashed map[string]manifest.Item
	if len(errs) == 0 && ValidateMessage(req.Message) == nil {
		if hashed = pre.entriesFor(req.Items); hashed == nil {
			hashed = hashItems(req.Items)
		}
		if err := p.manifestCheck(req, hashed, p.cfg.acl); err != nil {
			errs = append(errs, err)
		}
	}
	if req.Mode != manifest.ModeAuto && req.Mode != manifest.ModeMulti && req.Mode != manifest.ModeMarker {
		errs = append(errs, &InputError{Err: fmt.Errorf("unknown mode %q", string(req.Mode))})
	}
	if err := ValidateMessage(req.Message); err != nil {
		errs = append(errs, err)
	}
	if req.ExpectGeneration < 0 || req.RollbackOf < 0 {
		errs = append(errs, &InputError{Err: errors.New("ExpectGeneration and RollbackOf must not be negative")})
	}
	if len(errs) > 0 {
		return nil, errlist.Join(errs...)
	}
	return hashed, nil
}

// manifestCheck checks that the final commit carrying the manifest fits,
// with the history entry created with acl.
func (p *Publisher) manifestCheck(req Request, hashed map[string]manifest.Item, acl []zk.ACL) error {
	budget := p.cfg.multiBudget
	if req.Fence != "" {
		budget -= opSize(&zk.CheckVersionRequest{Path: req.Fence})
	}
	return manifestProblem(hashed, p.name(), req.RollbackOf, req.Message, p.paths, acl, budget)
}

// publishOnce runs steps 3 to 7 of a publish (doc.go) on the state st
// read in step 2, one function each:
//
//  3. check: the fence, the expected generation, a marker (take it over
//     or refuse), and the live items the plan would leave alone;
//  4. planNext: the next generation and the diff, refusing a removal
//     NoRemove forbids, an exhausted generation counter or a format
//     agents cannot read (an unchanged set ends here);
//  5. chooseMode: multi mode if its transaction fits, else marker mode
//     (a dry run ends here);
//  6. commitNext: in one transaction (multi mode) or under the marker;
//  7. afterCommit: after the acknowledgement, the entering contents'
//     blobs, the GC and the candidate's clean-up.
func (p *Publisher) publishOnce(ctx context.Context, req Request, hashed map[string]manifest.Item, acl inherited, st *state) (*Result, error) {
	if err := p.check(ctx, st, req, hashed); err != nil {
		return nil, err
	}
	pl, res, err := p.planNext(ctx, st, req, hashed, acl)
	if err != nil {
		return nil, err
	}
	if res.Unchanged {
		return res, nil
	}
	cm, err := p.chooseMode(st, req, pl, res)
	if err != nil {
		return nil, err
	}
	if res.DryRun {
		return res, nil
	}
	var early *gcEarly
	if !cm.marker {
		early = p.startGCReads(ctx, st, pl)
	}
	if err := p.commitNext(ctx, st, pl, cm, res); err != nil {
		_, _, _ = early.wait()
		return nil, err
	}
	if p.cfg.hooks.stopAfterAck() {
		_, _, _ = early.wait()
		return res, nil
	}
	p.afterCommit(ctx, st, req, pl, cm.marker, res, early)
	return res, nil
}

// planNext runs step 4: the plan of the next generation and the result
// it would have.
func (p *Publisher) planNext(ctx context.Context, st *state, req Request, hashed map[string]manifest.Item, acl inherited) (*plan, *Result, error) {
	liveGen := st.liveGen()
	pl := p.plan(st, req, hashed)
	pl.acl = acl
	if req.NoRemove && len(pl.removed) > 0 {
		return nil, nil, &RemovalError{Root: p.paths.Root, Generation: liveGen, Items: pl.removed}
	}
	res := &Result{
		Generation: pl.gen, Mode: manifest.ModeMulti, Manifest: pl.next,
		Added: pl.added, Changed: pl.changed, Removed: pl.removed,
	}
	if st.marker != nil {
		res.TookOver = "took over " + st.marker.takeover
	}
	res.Repaired = slices.Sorted(maps.Keys(st.tampered))
	if pl.unchanged && !req.Force && (st.live == nil || st.live.Canary == nil) {
		res.Generation, res.Manifest, res.Unchanged = liveGen, st.live, true
		res.Zxid = st.rootStat.Mzxid
		res.Mode = st.live.Mode
		res.DryRun = req.DryRun
		p.log.Info("unchanged", "generation", liveGen)
		return pl, res, nil
	}
	if top := st.topGen(); top == math.MaxInt64 {
		// The next generation would wrap to -2^63: refuse before
		// anything is written (dry runs included), whatever the mode.
		return nil, nil, fmt.Errorf("%w: root %s is at generation %d (live %d), the largest a generation can be: no further generation can be published to this root; publish to a new root",
			ErrGenerationExhausted, p.paths.Root, top, liveGen)
	}
	if err := p.refuseOldAgents(ctx, pl.next.Format, req.AllowOldAgents); err != nil {
		return nil, nil, err
	}
	return pl, res, nil
}

// commitMode is step 5's choice: the multi-mode transaction and whether
// the commit goes in marker mode instead.
type commitMode struct {
	ops    []any
	kinds  []opKind
	size   int
	marker bool
}

// chooseMode runs step 5. A dry run ends with it (res.DryRun).
func (p *Publisher) chooseMode(st *state, req Request, pl *plan, res *Result) (commitMode, error) {
	ops, kinds := p.multiOps(st, pl)
	cm := commitMode{ops: ops, kinds: kinds, size: multiSize(ops)}
	var err error
	if cm.marker, err = p.useMarker(req.Mode, cm.size); err != nil {
		return cm, err
	}
	if cm.marker {
		res.Mode = manifest.ModeMarker
		pl.next.Mode = manifest.ModeMarker
		pl.nextBytes = pl.next.Encode()
	}
	if !cm.marker && !req.DryRun && p.carry(st, pl, cm.size) {
		cm.ops, cm.kinds = p.multiOps(st, pl)
		if cm.size = multiSize(cm.ops); cm.size > p.cfg.multiBudget {
			pl.carried = nil
			cm.ops, cm.kinds = p.multiOps(st, pl)
			cm.size = multiSize(cm.ops)
		}
	}
	res.Strays = pl.strays
	if req.DryRun {
		res.DryRun = true
		pl.next.PublishID = ""
		if st.marker != nil {
			res.TookOver = "would take over " + st.marker.takeover
		}
	}
	return cm, nil
}

// commitNext runs step 6: the commit, in one transaction (multi mode) or
// under the marker.
func (p *Publisher) commitNext(ctx context.Context, st *state, pl *plan, cm commitMode, res *Result) error {
	if err := p.ensureMeta(ctx, st, cm.marker, pl.acl.Meta); err != nil {
		return err
	}
	p.log.Info("publishing", "generation", pl.gen, "mode", res.Mode, "publish_id", pl.next.PublishID,
		"added", len(pl.added), "changed", len(pl.changed), "removed", len(pl.removed), "multi_bytes", cm.size,
		"dirs_made", len(pl.dirMakes), "dirs_deleted", len(pl.dirDeletes))
	var err error
	if cm.marker {
		err = p.publishMarker(ctx, st, pl, res)
	} else {
		err = p.commitMulti(ctx, st, pl, cm.ops, cm.kinds, res)
	}
	if err != nil {
		return err
	}
	res.PublishID = pl.next.PublishID
	res.Strays = pl.strays
	if len(res.Strays) > 0 {
		p.log.Warn("left directories the set no longer has in place: nodes zkconf did not write are under them", "strays", res.Strays)
	}
	p.log.Info("published", "generation", res.Generation, "zxid", res.Zxid, "mode", res.Mode,
		"recovered", res.Recovered, "commit_attempts", res.CommitAttempts)
	return nil
}

// afterCommit runs step 7, after the acknowledgement: it stores the new
// contents' blobs (multi mode) and runs the GC, side by side: the GC
// never deletes a blob our generation references, so neither waits for
// the other. Beside them too, since the new root has no canary: a
// candidate node (of the rollout this publish ended, or left by a
// publisher that died) goes. Its nodes are neither blobs nor history
// entries (every candidate content is a blob of its own), and its check
// is one round trip the publisher's exit no longer waits for after the
// others.
func (p *Publisher) afterCommit(ctx context.Context, st *state, req Request, pl *plan, marker bool, res *Result, early *gcEarly) {
	var wg sync.WaitGroup
	if !marker {
		wg.Go(func() { p.storeEntering(ctx, pl) })
	}
	// A candidate node read absent beside the state is not looked for
	// again: one that appeared since belongs to a canary committed after
	// ours, or to a canary publisher still before its commit (which ours
	// makes fail); one left by such a publisher that dies goes at the
	// next publish, as one it leaves after this check always did.
	if st.candidate == nil || *st.candidate {
		wg.Go(func() { p.cleanupCandidate(ctx) })
	}
	p.gc(ctx, st, pl, early)
	wg.Wait()
	if st.live != nil && st.live.Canary != nil && req.rolloutID == "" {
		p.appendEvent(ctx, st.live.Canary.RolloutID, RolloutEvent{At: time.Now().UTC(), Kind: EventSuperseded,
			Generation: res.Generation, By: p.name(), Message: req.Message})
	}
}

// check runs step 3: it refuses a publish the fence, the expected
// generation or a live marker forbids, prepares the takeover of a dead
// marker, and finds the live items changed outside confpush.
func (p *Publisher) check(ctx context.Context, st *state, req Request, hashed map[string]manifest.Item) error {
	if st.foreign != nil && !req.Adopt {
		return st.foreign
	}
	if req.Fence != "" {
		if err := p.checkFence(ctx, req.Fence); err != nil {
			return err
		}
	}
	if liveGen := st.liveGen(); req.ExpectGeneration != 0 && req.ExpectGeneration != liveGen {
		return &ConflictError{Expected: req.ExpectGeneration, Actual: liveGen,
			Reason: fmt.Sprintf("root %s is not at the expected generation", p.paths.Root)}
	}
	if err := p.refuseRollout(st, req); err != nil {
		return err
	}
	if req.Adopt {
		return p.checkAdopt(ctx, st, hashed)
	}
	if st.marker != nil {
		if err := p.checkMarker(ctx, st, req); err != nil {
			return err
		}
		if st.marker != nil {
			return nil // taken over: the whole tree was walked
		}
	}
	switch {
	case st.live == nil && len(st.children) > 0:
		return fmt.Errorf("root %s has %d children but no zkconf manifest: refusing to adopt or delete them (remove them or choose another root)",
			p.paths.Root, len(st.children))
	case st.live != nil:
		if err := p.listDirs(ctx, st.tree, treeDirs(st.live.Items, hashed)); err != nil {
			return err
		}
		blobs := p.startBlobReads(ctx, st, hashed)
		err := p.verifyUnchanged(ctx, st, hashed, req.Items)
		blobs.wait(st)
		return err
	}
	return p.listDirs(ctx, st.tree, treeDirs(hashed))
}

// useMarker runs step 5: whether the commit goes in marker mode, given
// the requested mode and the size of the multi-mode transaction.
func (p *Publisher) useMarker(mode manifest.Mode, multiBytes int) (bool, error) {
	switch mode {
	case manifest.ModeMarker:
		return true, nil
	case manifest.ModeMulti:
		if multiBytes > p.cfg.multiBudget {
			return false, &TooLargeError{What: "transaction", Size: int64(multiBytes), Limit: int64(p.cfg.multiBudget),
				Hint: "use marker mode (manifest.ModeMarker, --mode marker) or auto"}
		}
		return false, nil
	}
	return multiBytes > p.cfg.multiBudget, nil
}

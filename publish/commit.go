package publish

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// ensureMeta creates the metadata parents (and the root's parent) when
// they are missing, with acl (the history parent's, see
// inherited.Meta). Every create is idempotent.
func (p *Publisher) ensureMeta(ctx context.Context, st *state, marker bool, acl []zk.ACL) error {
	var paths []string
	if st.rootStat == nil {
		if parent := path.Dir(p.paths.Root); parent != "/" {
			paths = append(paths, parent)
		}
	}
	if !st.haveMeta {
		paths = append(paths, p.paths.History(), p.paths.Blobs())
	}
	if marker && !p.metaReady.Load() {
		paths = append(paths, p.paths.Publishing())
	}
	for _, pp := range paths {
		if err := p.ensurePath(ctx, pp, acl); err != nil {
			return err
		}
	}
	if marker {
		p.metaReady.Store(true)
	}
	return nil
}

// commitMulti runs step 6 in multi mode: it sends the one transaction.
// When it fails only because a departing content's blob is missing (a
// publisher stopped after its acknowledgement, before storing its blobs)
// or because a blob it creates appeared meanwhile, nothing was applied:
// it reads which departing blobs exist, takes the missing contents from
// the live items (verified against the live manifest) and sends the
// commit again, under the same compare-and-swap, creating those blobs
// instead of checking them.
//
// A directory it deletes that a stray appeared under (NotEmpty: nothing
// was applied either) is listed again and kept, and the commit is sent
// again without its delete, at most maxStrayRounds times.
func (p *Publisher) commitMulti(ctx context.Context, st *state, pl *plan, ops []any, kinds []opKind, res *Result) error {
	strayRounds := 0
	for round := 1; ; {
		err := p.commit(ctx, "multi", ops, kinds, st.liveGen(), pl, res)
		var se *strayError
		if errors.As(err, &se) && strayRounds >= maxStrayRounds {
			return fmt.Errorf("commit of generation %d to %s not applied: nodes zkconf did not write kept appearing under directories it deletes (%d rounds): %w",
				pl.gen, p.paths.Root, strayRounds, err)
		}
		if errors.As(err, &se) {
			strayRounds++
			p.log.Warn("a node zkconf did not write appeared under a directory the commit deletes; keeping the directory and sending the commit again",
				"directory", se.path, "round", strayRounds)
			if err := p.relist(ctx, st.tree, se.dir); err != nil {
				return err
			}
			pl.planDirs(st.tree, pl.base, pl.baseDirs, pl.items)
			ops, kinds = p.multiOps(st, pl)
			continue
		}
		var br *blobRaceError
		if errors.As(err, &br) && pl.carried[br.sha] && round < maxBlobRaces {
			// A blob the commit creates for an entering content was
			// stored since it was read missing (or its parent is gone):
			// nothing was applied; send the commit again without any
			// carried blob (whoever stored that one may have stored
			// others: one round for all, not one per blob, now that a
			// commit carries as many as fit), and leave them to the
			// store after the acknowledgement.
			round++
			p.log.Info("entering content stored meanwhile; sending the commit again without the blobs it carried", "reason", br.Error(), "round", round)
			pl.carried = nil
			ops, kinds = p.multiOps(st, pl)
			continue
		}
		if !errors.As(err, &br) || br.sha == "" || round >= maxBlobRaces {
			return err
		}
		round++
		p.log.Info("departing content not stored as expected; sending the commit again with its blobs", "reason", br.Error(), "round", round)
		if ops, kinds, err = p.withMissingBlobs(ctx, st, pl); err != nil {
			return err
		}
	}
}

// commit sends a commit transaction (multi mode, or the marker-mode final
// commit) and establishes its outcome:
//
//   - success: done;
//   - a definite failure: the failing op says why (a lost compare-and-swap
//     is a ConflictError carrying the winning generation);
//   - connection lost (outcome unknown): wait for the session, Sync, and
//     look for this publish id in the root and in history/g-N. Found: it
//     landed. Not found: send the very same transaction again (the same
//     compare-and-swap version makes a double apply impossible), unless
//     the session expired, in which case nothing is re-sent and the publish
//     is reported as not applied.
func (p *Publisher) commit(ctx context.Context, stage string, ops []any, kinds []opKind, baseGen int64, pl *plan, res *Result) error {
	id := pl.next.PublishID
	for send := 1; ; send++ {
		p.cfg.hooks.commitSending(stage)
		mark := p.mark()
		res.CommitAttempts++
		resp, err := p.multi(ctx, ops)
		if err == nil {
			res.Zxid = p.commitZxid(ctx, resp, pl.gen)
			if len(resp) > 0 && resp[0].Stat != nil {
				pl.rootVersion = resp[0].Stat.Version
			} else if _, created := ops[0].(*zk.CreateRequest); created {
				pl.rootVersion = 0
			}
			return nil
		}
		if ctx.Err() != nil {
			return p.unknown(pl, ctx.Err())
		}
		if errors.Is(err, zk.ErrClosing) {
			return p.unknown(pl, err)
		}
		if zkclient.IsUncertain(err) {
			expired := errors.Is(err, zkclient.ErrSessionExpired)
			p.log.Warn("connection lost during commit; checking whether it landed",
				"stage", stage, "generation", pl.gen, "publish_id", id, "error", err)
			out, zxid, rerr := p.resolve(ctx, pl.gen, id)
			if rerr != nil {
				return p.unknown(pl, rerr)
			}
			expired = expired || p.expiredSince(mark)
			res.Recovered = true
			switch out {
			case landed:
				p.log.Info("commit had landed", "generation", pl.gen, "publish_id", id)
				res.Zxid = zxid
				return nil
			case unknownOutcome:
				return p.unknown(pl, errors.New("generation is past and its history entry is gone"))
			}
			if expired {
				return fmt.Errorf("session expired while committing generation %d (publish %s) to %s; it did not land and is not retried: %w",
					pl.gen, id, p.paths.Root, zkclient.ErrSessionExpired)
			}
			if send >= maxCommitSends {
				return fmt.Errorf("commit of generation %d to %s lost with the connection %d times (not applied): %w", pl.gen, p.paths.Root, send, err)
			}
			p.log.Info("commit did not land; sending it again under the same compare-and-swap", "generation", pl.gen, "send", send+1)
			continue
		}
		// A definite failure: nothing of it was applied.
		if zkclient.IsDenied(err) {
			return err
		}
		i, opErr := failedOp(resp)
		if i < 0 {
			return fmt.Errorf("commit generation %d to %s: %w", pl.gen, p.paths.Root, err)
		}
		k := kinds[i]
		if ferr := p.fenceFailure(ctx, pl, k, opErr); ferr != nil {
			return ferr
		}
		if send > 1 && k.what == "root" {
			// An earlier send that we could not see may have landed late.
			out, zxid, rerr := p.resolve(ctx, pl.gen, id)
			if rerr == nil && out == landed {
				res.Zxid = zxid
				return nil
			}
		}
		return p.commitFailure(ctx, k, opErr, baseGen)
	}
}

// commitFailure explains a transaction that failed on op k.
func (p *Publisher) commitFailure(ctx context.Context, k opKind, opErr error, baseGen int64) error {
	switch {
	case k.what == "root" && (errors.Is(opErr, zk.ErrBadVersion) || errors.Is(opErr, zk.ErrNodeExists) || errors.Is(opErr, zk.ErrNoNode)):
		return p.conflict(ctx, baseGen, "another publish committed first (the root changed since it was read)")
	case k.what == "marker":
		return p.conflict(ctx, baseGen, "the marker changed since it was read (another publish took it over or finished)")
	case k.what == "item" && (errors.Is(opErr, zk.ErrNodeExists) || errors.Is(opErr, zk.ErrNoNode)):
		return p.conflict(ctx, baseGen, fmt.Sprintf("item %q was created or deleted by someone else since it was read", k.name))
	case k.what == "dir" && errors.Is(opErr, zk.ErrNotEmpty):
		return &strayError{path: p.paths.Item(k.name), dir: k.name}
	case k.what == "dir" && (errors.Is(opErr, zk.ErrNodeExists) || errors.Is(opErr, zk.ErrNoNode)):
		return p.conflict(ctx, baseGen, fmt.Sprintf("directory %q was created or deleted by someone else since it was read", k.name))
	case k.what == "item" && errors.Is(opErr, zk.ErrNotEmpty):
		return fmt.Errorf("item node %s has children: a zkconf root holds only leaf items: %w", p.paths.Item(k.name), opErr)
	case k.what == "blob" && (errors.Is(opErr, zk.ErrNodeExists) || errors.Is(opErr, zk.ErrNoNode)):
		return &blobRaceError{path: p.paths.Blob(k.name), sha: k.name}
	case k.what == "history" && errors.Is(opErr, zk.ErrNoNode):
		p.metaReady.Store(false)
		return &blobRaceError{path: p.paths.History()}
	case k.what == "history" && errors.Is(opErr, zk.ErrNodeExists):
		return p.conflict(ctx, baseGen, "the history entry of this generation already exists")
	}
	return fmt.Errorf("commit to %s failed on %s %s: %w", p.paths.Root, k.what, k.name, opErr)
}

// checkFence fails with ErrFenced when the fence node does not exist.
func (p *Publisher) checkFence(ctx context.Context, fence string) error {
	st, err := p.exists(ctx, fence)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("%w: fence %s does not exist (leadership lost?); nothing was written to %s", ErrFenced, fence, p.paths.Root)
	}
	return nil
}

// fenceFailure explains a failed transaction by the fence: when the fence
// op itself failed, or when the fence is gone (a transaction stops at its
// first failing op, so a conflict can hide a lost fence, the more
// fundamental reason).
func (p *Publisher) fenceFailure(ctx context.Context, pl *plan, k opKind, opErr error) error {
	if pl.fence == "" {
		return nil
	}
	if k.what == "fence" && errors.Is(opErr, zk.ErrNoNode) {
		return fmt.Errorf("%w: fence %s is gone (leadership lost?); the write to %s was not applied", ErrFenced, pl.fence, p.paths.Root)
	}
	if st, err := p.exists(ctx, pl.fence); err == nil && st == nil {
		return fmt.Errorf("%w: fence %s is gone (leadership lost?); the write to %s was not applied (%v)", ErrFenced, pl.fence, p.paths.Root, opErr)
	}
	return nil
}

// conflict builds a ConflictError with the live generation read now.
func (p *Publisher) conflict(ctx context.Context, expected int64, reason string) error {
	ce := &ConflictError{Expected: expected, Reason: reason}
	data, _, err := p.get(ctx, p.paths.Root)
	if err != nil {
		ce.Actual = -1
		ce.Reason += fmt.Sprintf(" (live generation unknown: %v)", err)
		return ce
	}
	if m, derr := manifest.Decode(data); derr == nil {
		ce.Actual = m.Generation
	}
	return ce
}

func (p *Publisher) unknown(pl *plan, cause error) error {
	return fmt.Errorf("%w: generation %d (publish %s) of %s may or may not have landed: look for that publish id in history entry %s: %w",
		ErrOutcomeUnknown, pl.gen, pl.next.PublishID, p.paths.Root, p.paths.HistoryNode(pl.gen), cause)
}

// commitZxid is the zxid of a commit that succeeded: the new root stat's
// Mzxid when the root was set, else the history entry's Czxid (created by
// the same transaction, so the same zxid).
func (p *Publisher) commitZxid(ctx context.Context, resp []zk.MultiResponse, gen int64) int64 {
	if len(resp) > 0 && resp[0].Stat != nil {
		return resp[0].Stat.Mzxid
	}
	st, err := p.exists(ctx, p.paths.HistoryNode(gen))
	if err != nil || st == nil {
		p.log.Warn("could not read the commit's zxid", "generation", gen, "error", err)
		return 0
	}
	return st.Czxid
}

type outcome int

const (
	notLanded outcome = iota
	landed
	unknownOutcome
)

// resolve establishes whether the commit of generation gen with publish id
// id landed, after its connection was lost: wait for a session, Sync, then
// read. The history entry is created in the same transaction as the commit,
// so it is the witness even when later publishes have moved the root on.
func (p *Publisher) resolve(ctx context.Context, gen int64, id string) (outcome, int64, error) {
	if err := p.waitSession(ctx); err != nil {
		return notLanded, 0, err
	}
	data, st, err := p.get(ctx, p.paths.HistoryNode(gen))
	if err != nil {
		return notLanded, 0, err
	}
	if st != nil {
		m, derr := manifest.Decode(data)
		if derr == nil && m.PublishID == id {
			return landed, st.Czxid, nil
		}
		return notLanded, 0, nil // another publish owns this generation
	}
	rdata, rst, err := p.get(ctx, p.paths.Root)
	if err != nil {
		return notLanded, 0, err
	}
	if rst != nil {
		if m, derr := manifest.Decode(rdata); derr == nil {
			if m.PublishID == id {
				return landed, rst.Mzxid, nil
			}
			if m.Generation >= gen {
				// Generation gen was committed by someone, and its history
				// entry is already gone: we cannot tell whose it was.
				return unknownOutcome, 0, nil
			}
		}
	}
	return notLanded, 0, nil
}

package publish

import (
	"context"
	"maps"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// This file sends the store of the entering contents' blobs that a
// multi-mode commit does not carry (a set too large for step 2 to list the
// blob store, or blobs beyond the budget) right behind the commit, on the
// same connection, before the commit's answer (docs/design.md, "Multi
// mode"; publish/doc.go, step 7). Until issue 27's fourteenth part that
// store was a second server write after the acknowledgement, which the
// publish's exit waited for: at 100 changed items ~20 ms at load 8
// (docs/bench/latency-pushstart-2026-11-27). Pipelined, the server runs
// it right after the commit (one session's requests run in order) and
// can make both durable in one log write.
//
// Nothing about the commit depends on it: the commit's answer is awaited
// and judged exactly as without it, and only then is the store's answer
// read. The store is one Multi of
//
//	Check(root, the version our commit gives the root)
//	Create(blobs/<sha>, content)   -- each blob storeEntering would store
//
// so it lands whole or not at all. It fails (nothing written) when the
// root is not at that version right after our commit (ours did not land,
// and no other commit took the root to that version; or a commit landed
// in between), when a blob exists already, or with the connection: then
// storeEntering stores them after the acknowledgement as before, or the
// next publish does (blobs are best effort, the history invariant).
//
// A version on the root does not say whose commit set it: when ours lost
// its compare-and-swap to exactly one other commit, that one gave the
// root the version ours would have, and the store lands for a set that
// did not. The publisher sees it (the commit failed, the store succeeded)
// and deletes those blobs again, under the same Check (unstore). Any other
// store of a failed commit is one this publisher cannot see (its answer
// lost with the connection): its blobs are unreferenced, as a marker
// publish that dies after storing its blobs leaves them, and the GC
// deletes them with the history entries it drops.

// pipedStore is the blob store pipelined behind one commit request.
type pipedStore struct {
	pending *zk.PendingMulti
	shas    []string
	// version is the root's version the store checks: the one our
	// commit gives the root.
	version int32
}

// pipelineOps builds the store to send behind the multi-mode commit
// commitOps (nil when there is nothing to store, when the store does not
// fit the multi budget, or when the version the commit gives the root is
// not known from its first op).
func (p *Publisher) pipelineOps(pl *plan, commitOps []any) ([]any, pipedStore) {
	var ps pipedStore
	switch op := commitOps[0].(type) {
	case *zk.SetDataRequest:
		if op.Version < 0 {
			return nil, ps
		}
		ps.version = op.Version + 1
	case *zk.CreateRequest:
		ps.version = 0
	default:
		return nil, ps
	}
	blobs := enteringToStore(pl)
	if len(blobs) == 0 {
		return nil, ps
	}
	ps.shas = slices.Sorted(maps.Keys(blobs))
	ops := make([]any, 0, len(blobs)+1)
	ops = append(ops, &zk.CheckVersionRequest{Path: p.paths.Root, Version: ps.version})
	for _, sha := range ps.shas {
		ops = append(ops, &zk.CreateRequest{Path: p.paths.Blob(sha), Data: blobs[sha], Acl: pl.acl.Meta})
	}
	if multiSize(ops) > p.cfg.multiBudget {
		return nil, pipedStore{}
	}
	return ops, ps
}

// multiPipelined sends the transaction ops and, queued right behind it on
// the same connection, follow; it returns ops' answer as multi does (ctx
// ending first: unknown) and follow's pending answer, not awaited.
func (p *Publisher) multiPipelined(ctx context.Context, ops, follow []any) ([]zk.MultiResponse, *zk.PendingMulti, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c := p.conn()
	first := c.MultiQueue(ops...)
	then := c.MultiQueue(follow...)
	select {
	case <-first.Done():
		resp, err := first.Result()
		if zkclient.IsDenied(err) {
			err = zkclient.ExplainMulti(err, ops, resp)
		}
		return resp, then, err
	case <-ctx.Done():
		return nil, then, ctx.Err()
	}
}

// settlePipeline reads the pipelined store's answer once the commit's
// outcome is established (landed or not): stored for a commit that
// landed, its blobs are left out of storeEntering; stored for one that
// did not, they are deleted again (unstore). A failed or lost store
// stored nothing this publisher can count on.
func (p *Publisher) settlePipeline(ctx context.Context, pl *plan, ps pipedStore, landed bool) {
	if ps.pending == nil {
		return
	}
	var err error
	select {
	case <-ps.pending.Done():
		_, err = ps.pending.Result()
	case <-ctx.Done():
		return
	}
	switch {
	case err != nil:
		p.log.Debug("blob store pipelined behind the commit not applied", "generation", pl.gen, "error", err)
	case landed:
		pl.piped = make(map[string]bool, len(ps.shas))
		for _, sha := range ps.shas {
			pl.piped[sha] = true
		}
	default:
		p.unstore(ctx, pl, ps)
	}
}

// unstore deletes the blobs a pipelined store created for a commit that
// did not land (another commit gave the root the version it checked),
// under the same Check on the root. Safe: each of them did not exist
// before the store (a Create of an existing node fails the whole store),
// so by the history invariant any content of them a retained generation
// references was then a live item's; no commit has moved the root since
// (the Check), so no history entry was created and no commit's departing
// Check counted on them, and those contents are live items still. A
// publisher that tried to store one meanwhile and met NodeExists stored
// a live content, which the next commit's departing Checks cover, as for
// a publisher that dies after its acknowledgement. Best effort: a failure
// leaves unreferenced blobs, which the GC deletes.
func (p *Publisher) unstore(ctx context.Context, pl *plan, ps pipedStore) {
	ops := make([]any, 0, len(ps.shas)+1)
	ops = append(ops, &zk.CheckVersionRequest{Path: p.paths.Root, Version: ps.version})
	for _, sha := range ps.shas {
		ops = append(ops, &zk.DeleteRequest{Path: p.paths.Blob(sha), Version: 0})
	}
	if _, err := p.multi(ctx, ops); err != nil {
		p.log.Info("could not delete the blobs stored behind a commit that did not land (the GC deletes them)", "generation", pl.gen, "blobs", len(ps.shas), "error", err)
		return
	}
	p.log.Info("deleted the blobs stored behind a commit that did not land", "generation", pl.gen, "blobs", len(ps.shas))
}

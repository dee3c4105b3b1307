package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
)

// state is what a publish read before planning.
type state struct {
	rootStat *zk.Stat // nil: the root does not exist
	rootData []byte
	live     *manifest.Manifest // nil: never published
	children []string           // the root's children, marker excluded
	// tree is the listing of the nodes below the root: the root's
	// children from step 2, the directories of the live and the new set
	// (or the whole tree, for a takeover) from step 3.
	tree     *tree
	marker   *markerState // nil: no marker
	history  []int64      // generations in the history, ascending
	haveMeta bool         // the history parent exists (created with the blobs parent)
	histStat *zk.Stat     // the history parent's stat (nil: it does not exist)
	// incarnation is the root's incarnation to carry ("": start a new one).
	incarnation string
	// foreign is the refusal of a root whose data is not a manifest,
	// kept for check: only an adopting publish (Request.Adopt) goes on.
	foreign error
	// adopted is the tree under a root an adopting publish takes over, as
	// walked (nil otherwise).
	adopted *actualTree
	// tampered are live items whose content does not match the live
	// manifest (changed outside confpush): the plan rewrites them.
	tampered map[string]bool
	// prefetched are live items read beside the state (stepTwo), for
	// verifyUnchanged; blobExists says for contents of the new set read
	// then whether their blob exists (plan.carried); candidate whether a
	// candidate node exists (nil: not read), for afterCommit.
	prefetched map[string]liveItem
	blobExists map[string]bool
	candidate  *bool
}

func (s *state) liveGen() int64 {
	if s.live == nil {
		return 0
	}
	return s.live.Generation
}

// topGen is the highest generation the root has used: the live one or the
// newest history entry, whichever is higher (a root deleted and recreated
// never reuses a generation).
func (s *state) topGen() int64 {
	g := s.liveGen()
	if len(s.history) > 0 {
		g = max(g, s.history[len(s.history)-1])
	}
	return g
}

// markerState describes a marker found under the root.
type markerState struct {
	// info is what the marker names; nil when its data was not written by
	// confpush (manifest.ErrForeign): no publish, so nothing to wait for.
	info *manifest.Marker
	stat *zk.Stat
	live bool // its publish's liveness node exists
	// actual is the tree under the root as a takeover walked it.
	actual *actualTree
	// takeover describes the marker this publish takes over, for the log
	// and Result.TookOver ("took over " + takeover).
	takeover string
}

// readState reads the root, its children, a marker if any and the history
// list, in one round trip. The listing must agree with the root we read:
// a marker set after our read of the root (which moves the root's version)
// must not be missed while our compare-and-swap still succeeds, so the
// listing's stat of the root is compared with the read's. It does not list
// the blob store: the commit's Check ops say whether the blobs it needs
// exist (a small set's step 2 lists it beside, for carry: startStepTwo).
func (p *Publisher) readState(ctx context.Context) (*state, error) {
	return p.stateFrom(ctx, nil)
}

// stateReads is one round of readState's reads: the root, its listing and
// the history list; the root's manifest is decoded as soon as it is read,
// while the other reads are still in flight.
type stateReads struct {
	data               []byte
	rootStat, listStat *zk.Stat // the root's, as read and as listed
	kids               []string
	// listed says the listing found the root. listAfter says the listing
	// was read after the root's data in one multiRead (readCombined),
	// which carries no stat with a listing (listStat is nil): the server
	// ran it on a tree no older than the data read's.
	listed, listAfter bool
	gens              []int64
	histStat          *zk.Stat
	live              *manifest.Manifest
	liveErr           error
}

// stateReadCount is the number of reads of a stateReads round.
const stateReadCount = 3

// readStatePart makes read i (0 to stateReadCount-1) of a stateReads
// round: each goes in its own goroutine, and no two write the same field.
func (p *Publisher) readStatePart(ctx context.Context, r *stateReads, i int) error {
	var err error
	switch i {
	case 0:
		if r.data, r.rootStat, err = p.get(ctx, p.paths.Root); err == nil && r.rootStat != nil {
			r.live, r.liveErr = manifest.Decode(r.data)
		}
	case 1:
		r.kids, r.listStat, err = p.childrenStat(ctx, p.paths.Root)
		r.listed = r.listStat != nil
	case 2:
		r.gens, r.histStat, err = p.historyList(ctx)
	}
	return err
}

// stateFrom is readState starting from first, a round of its reads
// already answered (nil: read one).
func (p *Publisher) stateFrom(ctx context.Context, first *stateReads) (*state, error) {
	st := &state{}
	var r *stateReads
	for attempt := 0; ; attempt++ {
		r, first = first, nil
		if r == nil {
			r = &stateReads{}
			err := work.Parallel(ctx, stateReadCount, stateReadCount, func(ctx context.Context, i int) error {
				return p.readStatePart(ctx, r, i)
			})
			if err != nil {
				return nil, err
			}
		}
		// The root and its children are read in the same round trip, in
		// either order. A marker is created in one transaction with a
		// write of the root's data, so if the listing's stat shows the
		// same data version (and the same node) as the read, no marker
		// appeared or went between the two; otherwise read again.
		//
		// A listing read after the root's data in one multiRead
		// (listAfter, readCombined) has no stat, and needs none: it saw a
		// tree no older than the read did, so a marker that existed when
		// the root was read and still exists is in it, and a marker set
		// after the read moved the root's version past the one the
		// commit's compare-and-swap expects, which then fails: what the
		// check above guards against, a marker set after the read that
		// the compare-and-swap lets pass, cannot happen. A root found by
		// one read and not by the other is read again as before.
		if (r.rootStat == nil) == r.listed || r.rootStat != nil && !r.listAfter && (r.rootStat.Czxid != r.listStat.Czxid || r.rootStat.Version != r.listStat.Version) {
			if err := readRetry().Sleep(ctx, attempt+1); err != nil {
				return nil, err
			}
			continue
		}
		st.rootStat, st.rootData = r.rootStat, r.data
		st.children = slices.DeleteFunc(r.kids, func(n string) bool { return n == manifest.MarkerName })
		if len(st.children) != len(r.kids) {
			st.marker = &markerState{}
		}
		st.tree = newTree(st.children)
		st.history = r.gens
		st.haveMeta, st.histStat = r.histStat != nil, r.histStat
		break
	}
	if st.rootStat != nil {
		p.resetCacheFor(st.rootStat.Czxid)
		m, err := r.live, r.liveErr
		switch {
		case err == nil:
			st.live = m
		case errors.Is(err, manifest.ErrEmpty):
		case errors.Is(err, manifest.ErrForeign):
			st.foreign = fmt.Errorf("root %s holds %d bytes that are not a zkconf manifest: refusing to publish over it (%w)",
				p.paths.Root, len(st.rootData), err)
		default:
			return nil, fmt.Errorf("root %s: %w", p.paths.Root, err)
		}
	}
	if st.marker != nil {
		if err := p.readMarker(ctx, st.marker); err != nil {
			return nil, err
		}
	}
	p.readIncarnation(ctx, st)
	return st, nil
}

// readIncarnation sets the incarnation the next generation carries: the
// live manifest's; with no live manifest but a history (the root deleted
// and re-created, its metadata kept: generations continue from the
// history), the newest history entry's. Otherwise (first publish, a
// ZooKeeper wiped or rebuilt, or a legacy manifest without one) it stays
// empty and plan starts a new incarnation.
func (p *Publisher) readIncarnation(ctx context.Context, st *state) {
	switch {
	case st.live != nil:
		st.incarnation = st.live.Incarnation
	case len(st.history) > 0:
		if hm, err := p.historyManifest(ctx, st.history[len(st.history)-1]); err == nil {
			st.incarnation = hm.Incarnation
		}
	}
}

// readMarker reads a marker and whether its publish is alive.
func (p *Publisher) readMarker(ctx context.Context, ms *markerState) error {
	data, stat, err := p.get(ctx, p.paths.Marker())
	if err != nil {
		return err
	}
	if stat == nil {
		// Removed since the listing: the publish that held it committed,
		// so our compare-and-swap will fail; plan as if absent.
		ms.stat = nil
		return nil
	}
	ms.stat = stat
	info, err := manifest.DecodeMarker(data)
	if err != nil {
		return nil // foreign: ms.info stays nil
	}
	ms.info = info
	liveness, err := p.exists(ctx, p.paths.PublishingNode(info.PublishID))
	if err != nil {
		return err
	}
	ms.live = liveness != nil
	return nil
}

// checkMarker refuses a live marker (unless overridden) and, to take a
// marker over, reads the root's actual children: a dead publish may have
// written some of them.
func (p *Publisher) checkMarker(ctx context.Context, st *state, req Request) error {
	ms := st.marker
	if ms.stat == nil {
		st.marker = nil
		return nil
	}
	age := time.Since(time.UnixMilli(ms.stat.Mtime)).Round(time.Second)
	var owner, publishID string // empty for a marker confpush did not write
	if ms.info != nil {
		owner, publishID = ms.info.Publisher, ms.info.PublishID
	}
	if ms.live && !req.OverrideMarker {
		return &MarkerBusyError{Root: p.paths.Root, Owner: owner, PublishID: publishID, Age: age}
	}
	// A marker whose data confpush did not write (made by hand, or by a
	// tool that crashed) names no publish, so no liveness node can exist
	// for it: it is as dead as one whose publisher is gone, and leaving it
	// would block every agent that does not hold the live generation.
	switch {
	case ms.info == nil:
		ms.takeover = fmt.Sprintf("an abandoned marker %s (set %v ago; its data was not written by confpush, so no publish can be alive for it)",
			p.paths.Marker(), age)
	case ms.live:
		ms.takeover = fmt.Sprintf("the marker %s of the live publish %s by %s (set %v ago): override requested",
			p.paths.Marker(), publishID, owner, age)
	default:
		ms.takeover = fmt.Sprintf("an abandoned marker %s of publish %s by %s (set %v ago; its publisher is gone: no liveness node)",
			p.paths.Marker(), publishID, owner, age)
	}
	p.log.Warn("taking over "+ms.takeover, "marker_owner", owner, "marker_publish_id", publishID)
	// The dead publish may have written items and directories of a set
	// nobody knows, at any depth: the whole tree is read.
	actual, err := p.walkActual(ctx, st.tree)
	if err != nil {
		return err
	}
	ms.actual = actual
	return nil
}

// verifyUnchanged reads the live items the plan would leave alone (same
// name and content in the live manifest and the new set) and records in
// st.tampered those whose content does not match the manifest: an item
// changed behind confpush's back with a plain ZooKeeper write. Comparing
// manifests alone would skip it as unchanged and the damage would outlive
// any number of publishes; the plan rewrites it in the same commit.
//
// An item is left alone only when the new set's content (items) has the
// manifest's entry for it (hashed is items hashed, step 1), so what is
// read matches the manifest exactly when it equals the new set's bytes
// (sameContent): one comparison at memory speed in place of a SHA-256 of
// every byte read, which at 20 items of 64 KiB was half a millisecond
// after the last read answered (docs/bench/latency-push64-2026-11-27c).
func (p *Publisher) verifyUnchanged(ctx context.Context, st *state, hashed map[string]manifest.Item, items map[string][]byte) error {
	var names []string
	for n, it := range hashed {
		if old, ok := st.live.Items[n]; ok && old == it && st.tree.exists(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	bad := make([]bool, len(names))
	// Those read beside the state (a small set, stepTwo) are not read
	// again. Read in the root's round trip rather than after it, an item
	// can be a commit older or newer than the manifest read, as a read
	// after the root's can be newer: either way it fails to match and
	// is rewritten with the content the plan keeps (the commit's
	// compare-and-swap is on the manifest read), as before.
	var left []int // indexes in names of the items still to read
	var sizes []int64
	for i, n := range names {
		if it, ok := st.prefetched[n]; ok {
			bad[i] = !it.exists || !sameContent(items[n], it.data)
			continue
		}
		left = append(left, i)
		sizes = append(sizes, st.live.Items[n].Size)
	}
	// The rest (a set larger than step 2 speculates on) in multiReads of
	// at most 64 items and 256 KiB, all in flight at once: a 100-item
	// publish of one change reads its 99 unchanged items in two requests
	// where it sent 99 Gets (one request costs about as much again as the
	// next on one connection, readItems). A batch the server refuses (3.5)
	// or fails as a whole is read one Get per item, up to 64 in flight,
	// as before; so is an item whose own answer is an error other than
	// "no node" (read retries or reports it as it did).
	batches := readBatches(sizes, !p.noMultiRead.Load())
	// One bound on the Gets in flight across every batch: batches whose
	// multiReads fail together (a 3.5 refusal closes the connection under
	// all of them) must not fall back to 64 Gets each, which for a set of
	// thousands would put thousands of reads on the ensemble at once.
	gets := make(chan struct{}, 64)
	err := work.Parallel(ctx, len(batches), 64, func(ctx context.Context, b int) error {
		idx := make([]int, len(batches[b]))
		for k, j := range batches[b] {
			idx[k] = left[j]
		}
		if len(idx) > 1 && !p.noMultiRead.Load() && ctx.Err() == nil {
			paths := make([]string, len(idx))
			for k, i := range idx {
				paths[k] = p.paths.Item(names[i])
			}
			if res, err := p.multiRead(paths); err == nil {
				var again []int
				for k, i := range idx {
					switch {
					case res[k].Error == nil:
						bad[i] = !sameContent(items[names[i]], res[k].Data)
					case errors.Is(res[k].Error, zk.ErrNoNode):
						bad[i] = true // deleted since the listing: rewritten too
					default:
						again = append(again, i)
					}
				}
				idx = again
			}
		}
		return work.Parallel(ctx, len(idx), 64, func(ctx context.Context, k int) error {
			i := idx[k]
			select {
			case gets <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			d, s, err := p.get(ctx, p.paths.Item(names[i]))
			<-gets
			if err != nil {
				return err
			}
			// A missing item (deleted since the listing) is rewritten too.
			bad[i] = s == nil || !sameContent(items[names[i]], d)
			return nil
		})
	})
	if err != nil {
		return err
	}
	for i, n := range names {
		if bad[i] {
			if st.tampered == nil {
				st.tampered = map[string]bool{}
			}
			st.tampered[n] = true
			p.log.Warn("live item does not match the manifest (changed outside confpush); this publish rewrites it",
				"item", n, "generation", st.live.Generation)
		}
	}
	return nil
}

// sameContent reports whether live, an item's data as read, is kept, the
// new set's content for it: for an item verifyUnchanged checks, the content
// the live manifest records (same SHA-256 and size), so equal bytes are
// exactly a match of the manifest's entry, and any difference a mismatch
// (up to a SHA-256 collision, which the digest compare would have let pass).
func sameContent(kept, live []byte) bool { return bytes.Equal(kept, live) }

// readACLs reads the ACLs the nodes a publish creates get: the root's for
// items and the marker, the history parent's for metadata
// (inheritedACLs; the configured ACL where those nodes do not exist
// yet).
func (p *Publisher) readACLs(ctx context.Context) (inherited, error) {
	return read(ctx, func() (inherited, error) {
		return inheritedACLs(ctx, p.conn(), p.paths, p.cfg.acl)
	})
}

// cachedACLs returns the ACLs the last publish used, or nil.
func (p *Publisher) cachedACLs() *inherited {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acls
}

package publish

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// plan is what a publish will write.
type plan struct {
	gen       int64
	next      *manifest.Manifest
	nextBytes []byte
	items     map[string][]byte
	// Reported changes, relative to the live manifest.
	added, changed, removed []string
	// Operations, relative to the root's actual nodes (tree.go): items
	// created, set and deleted; directories made (parent first) before
	// the items and deleted (children first) after them; strays are the
	// nodes zkconf did not write under a directory the set no longer has,
	// which keep it.
	creates, sets, deletes []string
	dirMakes               []dirOp
	dirDeletes             []string
	strays                 []string
	// base and baseDirs are the items and directories the operations
	// start from (the live manifest's, or a takeover's actual tree), kept
	// to plan the directories again when a stray appears.
	base     map[string]manifest.Item
	baseDirs map[string]bool
	// entering are the sha256 of contents the new set has and the live one
	// does not: their blobs are stored after the acknowledgement (multi
	// mode) or before the marker (marker mode). departing are the sha256
	// of live contents no item of the new set has: the commit checks that
	// their blobs exist (the history invariant, see the package doc).
	entering, departing []string
	// blobData is the content of every sha256 of the new set.
	blobData map[string][]byte
	// backfill holds departing contents whose blob is missing, read from
	// the live items and verified: the commit creates those blobs instead
	// of checking them.
	backfill map[string][]byte
	// carried are entering contents whose blobs the multi-mode commit
	// creates (their blobs were read missing, and they are small: carry);
	// stored those whose blobs were read present. storeEntering skips
	// both after the acknowledgement.
	carried, stored map[string]bool
	unchanged       bool
	// rootVersion is the root's data version right after our commit, -1
	// when unknown (the commit's outcome was found by reading).
	rootVersion int32
	// fence is Request.Fence ("" for none).
	fence string
	// acl are the ACLs of the nodes this publish creates, read from the
	// live tree once per publish (see inheritedACLs).
	acl inherited
}

// plan computes the next manifest and the operations to reach it.
func (p *Publisher) plan(st *state, req Request, hashed map[string]manifest.Item) *plan {
	gen := st.topGen() + 1 // wraps at math.MaxInt64: publishOnce refuses that before using it
	pl := &plan{gen: gen, items: req.Items, rootVersion: -1, fence: req.Fence}
	inc := st.incarnation
	if inc == "" {
		inc = manifest.NewIncarnation()
	}
	next := &manifest.Manifest{
		Format: manifest.FormatFor(hashed), Generation: gen, PublishID: newPublishID(),
		PublishedAt: time.Now().UTC(), Publisher: p.name(), Mode: manifest.ModeMulti,
		RollbackOf: req.RollbackOf, Incarnation: inc, Message: req.Message, Items: hashed,
		PromoteOf: req.promoteOf, AbortOf: req.abortOf,
	}
	pl.next = next
	pl.nextBytes = next.Encode()

	liveItems := map[string]manifest.Item{}
	if st.live != nil {
		liveItems = st.live.Items
	}
	// Sorted once each: this runs between the reads and the commit.
	names, liveNames := sortedNames(req.Items), slices.Sorted(maps.Keys(liveItems))
	for _, n := range names {
		old, ok := liveItems[n]
		switch {
		case !ok:
			pl.added = append(pl.added, n)
		case old != next.Items[n]:
			pl.changed = append(pl.changed, n)
		}
	}
	for _, n := range liveNames {
		if _, ok := req.Items[n]; !ok {
			pl.removed = append(pl.removed, n)
		}
	}
	pl.unchanged = st.live != nil && st.marker == nil && st.live.SameContent(next) && len(st.tampered) == 0

	// Operations against what is actually under the root: with a marker
	// taken over, the tree as walked (every leaf an item with its real
	// content); otherwise the live manifest's record (nodes the manifest
	// does not know are left alone unless the new set has an item of that
	// path).
	base, baseDirs, baseNames := liveItems, liveDirs(liveItems), liveNames
	if st.marker != nil {
		base, baseDirs, baseNames = st.marker.actual.items, st.marker.actual.dirs, nil
	}
	if st.adopted != nil {
		// Only the set's own paths are the base: the nodes the set
		// leaves out stay (unmanaged), so nothing is deleted.
		base, baseDirs, baseNames = adoptBase(st.adopted, hashed), st.adopted.dirs, nil
	}
	if baseNames == nil {
		baseNames = slices.Sorted(maps.Keys(base))
	}
	newDirs := map[string]bool{}
	for _, d := range treeDirs(next.Items) {
		newDirs[d] = true
	}
	for _, n := range names {
		cur, known := base[n]
		switch {
		case !st.tree.exists(n):
			pl.creates = append(pl.creates, n)
		case !known || cur != next.Items[n] || st.tampered[n]:
			pl.sets = append(pl.sets, n)
		}
	}
	for _, n := range baseNames {
		// An item whose path is a directory of the new set is emptied
		// (planDirs), not deleted.
		if _, keep := req.Items[n]; !keep && !newDirs[n] && st.tree.exists(n) {
			pl.deletes = append(pl.deletes, n)
		}
	}
	pl.base, pl.baseDirs = base, baseDirs
	pl.planDirs(st.tree, base, baseDirs, req.Items)
	// Contents entering and leaving the live set: the history invariant's
	// part of the plan.
	pl.blobData, pl.entering, pl.departing = contentFlow(liveItems, next.Items, req.Items, st.tampered)
	return pl
}

func newPublishID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// opKind says what an op of a commit is about, to explain its failure.
type opKind struct {
	what string // "root", "marker", "item", "dir", "blob", "history"
	name string
}

// multiOps builds the multi-mode commit.
func (p *Publisher) multiOps(st *state, pl *plan) ([]any, []opKind) {
	n := 4 + len(pl.dirMakes) + len(pl.creates) + len(pl.sets) + len(pl.deletes) + len(pl.dirDeletes) +
		len(pl.departing) + len(pl.carried)
	ops, kinds := make([]any, 0, n), make([]opKind, 0, n)
	add := func(k opKind, op any) { ops = append(ops, op); kinds = append(kinds, k) }
	if st.rootStat == nil {
		add(opKind{"root", ""}, &zk.CreateRequest{Path: p.paths.Root, Data: pl.nextBytes, Acl: pl.acl.Item})
	} else {
		add(opKind{"root", ""}, &zk.SetDataRequest{Path: p.paths.Root, Data: pl.nextBytes, Version: st.rootStat.Version})
	}
	if st.marker != nil {
		add(opKind{"marker", ""}, &zk.DeleteRequest{Path: p.paths.Marker(), Version: st.marker.stat.Version})
	}
	p.itemOps(pl, add)
	for _, sha := range pl.departing {
		if d, ok := pl.backfill[sha]; ok {
			add(opKind{"blob", sha}, &zk.CreateRequest{Path: p.paths.Blob(sha), Data: d, Acl: pl.acl.Meta})
		} else {
			add(opKind{"blob", sha}, &zk.CheckVersionRequest{Path: p.paths.Blob(sha), Version: -1})
		}
	}
	for _, sha := range slices.Sorted(maps.Keys(pl.carried)) {
		add(opKind{"blob", sha}, &zk.CreateRequest{Path: p.paths.Blob(sha), Data: pl.blobData[sha], Acl: pl.acl.Meta})
	}
	add(opKind{"history", ""}, &zk.CreateRequest{Path: p.paths.HistoryNode(pl.gen), Data: pl.nextBytes, Acl: pl.acl.Meta})
	if pl.fence != "" {
		add(opKind{"fence", pl.fence}, &zk.CheckVersionRequest{Path: pl.fence, Version: -1})
	}
	return ops, kinds
}

// itemOps emits the item writes of a plan, in the order a transaction
// needs them: the directories made (parent first), the items created and
// set, the items deleted, then the directories deleted (children first).
func (p *Publisher) itemOps(pl *plan, add func(opKind, any)) {
	w := p.writes(pl)
	for _, ops := range [][]kindOp{w.dirMakes, w.items, w.deletes, w.dirDeletes} {
		for _, op := range ops {
			add(op.kind, op.op)
		}
	}
}

// planWrites are a plan's writes below the root, by phase.
type planWrites struct {
	dirMakes, items, deletes, dirDeletes []kindOp
}

// writes returns the writes of pl: the directory ops that precede the
// items (a Create of each missing directory, empty with the root's ACL,
// or a SetData to empty of a node that held an item and is a directory
// now), the item creates and sets, the item deletes, and the deletes of
// the directories left without items.
func (p *Publisher) writes(pl *plan) planWrites {
	w := planWrites{dirMakes: make([]kindOp, 0, len(pl.dirMakes)), items: make([]kindOp, 0, len(pl.creates)+len(pl.sets)),
		deletes: make([]kindOp, 0, len(pl.deletes)), dirDeletes: make([]kindOp, 0, len(pl.dirDeletes))}
	for _, d := range pl.dirMakes {
		k := opKind{"dir", d.path}
		if d.empty {
			w.dirMakes = append(w.dirMakes, kindOp{k, &zk.SetDataRequest{Path: p.paths.Item(d.path), Data: []byte{}, Version: -1}})
		} else {
			w.dirMakes = append(w.dirMakes, kindOp{k, &zk.CreateRequest{Path: p.paths.Item(d.path), Data: []byte{}, Acl: pl.acl.Item}})
		}
	}
	for _, n := range pl.creates {
		w.items = append(w.items, kindOp{opKind{"item", n}, &zk.CreateRequest{Path: p.paths.Item(n), Data: pl.items[n], Acl: pl.acl.Item}})
	}
	for _, n := range pl.sets {
		w.items = append(w.items, kindOp{opKind{"item", n}, &zk.SetDataRequest{Path: p.paths.Item(n), Data: pl.items[n], Version: -1}})
	}
	for _, n := range pl.deletes {
		w.deletes = append(w.deletes, kindOp{opKind{"item", n}, &zk.DeleteRequest{Path: p.paths.Item(n), Version: -1}})
	}
	for _, d := range pl.dirDeletes {
		w.dirDeletes = append(w.dirDeletes, kindOp{opKind{"dir", d}, &zk.DeleteRequest{Path: p.paths.Item(d), Version: -1}})
	}
	return w
}

// kindOp is one op of a transaction with what it is about.
type kindOp struct {
	kind opKind
	op   any
}

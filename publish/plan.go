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
	// Operations, relative to the root's actual children.
	creates, sets, deletes []string
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
	backfill  map[string][]byte
	unchanged bool
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
		Format: manifest.FormatVersion, Generation: gen, PublishID: newPublishID(),
		PublishedAt: time.Now().UTC(), Publisher: p.cfg.name, Mode: manifest.ModeMulti,
		RollbackOf: req.RollbackOf, Incarnation: inc, Message: req.Message, Items: hashed,
		PromoteOf: req.promoteOf, AbortOf: req.abortOf,
	}
	pl.next = next
	pl.nextBytes = next.Encode()

	liveItems := map[string]manifest.Item{}
	if st.live != nil {
		liveItems = st.live.Items
	}
	for _, n := range sortedNames(req.Items) {
		old, ok := liveItems[n]
		switch {
		case !ok:
			pl.added = append(pl.added, n)
		case old != next.Items[n]:
			pl.changed = append(pl.changed, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(liveItems)) {
		if _, ok := req.Items[n]; !ok {
			pl.removed = append(pl.removed, n)
		}
	}
	pl.unchanged = st.live != nil && st.marker == nil && st.live.SameContent(next) && len(st.tampered) == 0

	// Operations against what is actually under the root: with a marker
	// taken over, the children's real content; otherwise the live
	// manifest's record (children the manifest does not know are left
	// alone unless the new set has an item of that name).
	base := liveItems
	if st.marker != nil {
		base = st.marker.actual
	}
	present := map[string]bool{}
	for _, c := range st.children {
		present[c] = true
	}
	for _, n := range sortedNames(req.Items) {
		cur, known := base[n]
		switch {
		case !present[n]:
			pl.creates = append(pl.creates, n)
		case !known || cur != next.Items[n] || st.tampered[n]:
			pl.sets = append(pl.sets, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(base)) {
		if _, keep := req.Items[n]; !keep && present[n] {
			pl.deletes = append(pl.deletes, n)
		}
	}
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
	what string // "root", "marker", "item", "blob", "history"
	name string
}

// multiOps builds the multi-mode commit.
func (p *Publisher) multiOps(st *state, pl *plan) ([]any, []opKind) {
	var ops []any
	var kinds []opKind
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
	add(opKind{"history", ""}, &zk.CreateRequest{Path: p.paths.HistoryNode(pl.gen), Data: pl.nextBytes, Acl: pl.acl.Meta})
	if pl.fence != "" {
		add(opKind{"fence", pl.fence}, &zk.CheckVersionRequest{Path: pl.fence, Version: -1})
	}
	return ops, kinds
}

// itemOps emits the item writes of a plan.
func (p *Publisher) itemOps(pl *plan, add func(opKind, any)) {
	for _, n := range pl.creates {
		add(opKind{"item", n}, &zk.CreateRequest{Path: p.paths.Item(n), Data: pl.items[n], Acl: pl.acl.Item})
	}
	for _, n := range pl.sets {
		add(opKind{"item", n}, &zk.SetDataRequest{Path: p.paths.Item(n), Data: pl.items[n], Version: -1})
	}
	for _, n := range pl.deletes {
		add(opKind{"item", n}, &zk.DeleteRequest{Path: p.paths.Item(n), Version: -1})
	}
}

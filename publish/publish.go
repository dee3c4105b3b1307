package publish

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/work"
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

// state is what a publish read before planning.
type state struct {
	rootStat *zk.Stat // nil: the root does not exist
	rootData []byte
	live     *manifest.Manifest // nil: never published
	children []string           // the root's children, marker excluded
	marker   *markerState       // nil: no marker
	history  []int64            // generations in the history, ascending
	haveMeta bool               // the history parent exists (created with the blobs parent)
	histStat *zk.Stat           // the history parent's stat (nil: it does not exist)
	// incarnation is the root's incarnation to carry ("": start a new one).
	incarnation string
	// tampered are live items whose content does not match the live
	// manifest (changed outside confpush): the plan rewrites them.
	tampered map[string]bool
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
	info   markerInfo
	bad    error // the marker's data could not be decoded
	stat   *zk.Stat
	live   bool // its publish's liveness node exists
	actual map[string]manifest.Item
	// takeover describes the marker this publish takes over, for the log
	// and Result.TookOver ("took over " + takeover).
	takeover string
}

// markerInfo is the JSON held by the marker (and by the publish's liveness
// node).
type markerInfo struct {
	PublishID      string    `json:"publish_id"`
	Publisher      string    `json:"publisher"`
	StartedAt      time.Time `json:"started_at"`
	BaseGeneration int64     `json:"base_generation"`
	Generation     int64     `json:"generation"`
}

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
	// live tree once per publish (see access.InheritedACLs).
	acl access.Inherited
}

// Publish publishes req.Items as the root's next generation. See the
// package documentation for the protocol. It validates everything before
// the first write; it never reports success for a publish that did not
// land and never lands one twice.
func (p *Publisher) Publish(ctx context.Context, req Request) (*Result, error) {
	// The reads go out first and the request is validated and hashed
	// while they are in flight: reading changes nothing, and hashing a
	// large set costs about as much as a round trip. A bad request still
	// gets its error at once: the reads are cancelled.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type stateRead struct {
		st  *state
		err error
	}
	type aclRead struct {
		in  access.Inherited
		err error
	}
	stc := make(chan stateRead, 1)
	go func() {
		st, err := p.readState(rctx)
		stc <- stateRead{st, err}
	}()
	// The inherited ACLs are read once and reused while the root and the
	// history parent show the same ACL versions (readState reads their
	// stats anyway); the first publish reads them beside the state.
	var aclc chan aclRead
	cached := p.cachedACLs()
	if cached == nil {
		aclc = make(chan aclRead, 1)
		go func() {
			in, err := p.readACLs(rctx)
			aclc <- aclRead{in, err}
		}()
	}
	hashed, err := p.checkRequest(req)
	if err != nil {
		cancel()
		<-stc
		if aclc != nil {
			<-aclc
		}
		return nil, err
	}
	sr := <-stc
	var acl access.Inherited
	if aclc != nil {
		ar := <-aclc
		if ar.err != nil {
			return nil, ar.err
		}
		acl = ar.in
	} else {
		acl = *cached
	}
	if sr.err != nil {
		return nil, sr.err
	}
	st := sr.st
	if acl.ItemFrom != access.ACLVersionOf(st.rootStat) || acl.MetaFrom != access.ACLVersionOf(st.histStat) {
		if acl, err = p.readACLs(ctx); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	p.acls = &acl
	p.mu.Unlock()
	if aclSize(acl.Meta) > aclSize(p.cfg.acl) {
		// The manifest's size check, again with the real history ACL.
		if err := p.manifestCheck(req, hashed, acl.Meta); err != nil {
			return nil, err
		}
	}
	for race := 1; ; race++ {
		if st == nil {
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

// checkRequest validates the request without touching ZooKeeper and
// returns the set's manifest entries: the set is hashed here, once per
// publish. Validate's generic manifest check is replaced by the exact one
// for this root (manifestCheck), reported in the same place.
func (p *Publisher) checkRequest(req Request) (map[string]manifest.Item, error) {
	errs := validateItems(req.Items, ValidateOptions{AllowEmpty: req.AllowEmpty, MaxSetSize: p.cfg.maxSet})
	var hashed map[string]manifest.Item
	if len(errs) == 0 {
		hashed = hashItems(req.Items)
		if err := p.manifestCheck(req, hashed, p.cfg.acl); err != nil {
			errs = append(errs, err)
		}
	}
	if req.Mode < ModeAuto || req.Mode > ModeMarker {
		errs = append(errs, &InputError{Err: fmt.Errorf("unknown mode %d", req.Mode)})
	}
	if req.ExpectGeneration < 0 || req.RollbackOf < 0 {
		errs = append(errs, &InputError{Err: errors.New("ExpectGeneration and RollbackOf must not be negative")})
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
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
	return manifestProblem(hashed, p.cfg.name, req.RollbackOf, p.paths, acl, budget)
}

// readACLs reads the ACLs the nodes a publish creates get: the root's for
// items and the marker, the history parent's for metadata
// (access.InheritedACLs; the configured ACL where those nodes do not exist
// yet).
func (p *Publisher) readACLs(ctx context.Context) (access.Inherited, error) {
	return read(ctx, func() (access.Inherited, error) {
		return access.InheritedACLs(ctx, p.conn, p.paths, p.cfg.acl)
	})
}

// cachedACLs returns the ACLs the last publish used, or nil.
func (p *Publisher) cachedACLs() *access.Inherited {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acls
}

func flatten(errs []error) []error {
	var out []error
	for _, e := range errs {
		var me interface{ WrappedErrors() []error }
		if errors.As(e, &me) {
			out = append(out, me.WrappedErrors()...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

func newPublishID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func (p *Publisher) publishOnce(ctx context.Context, req Request, hashed map[string]manifest.Item, acl access.Inherited, st *state) (*Result, error) {
	if req.Fence != "" {
		if err := p.checkFence(ctx, req.Fence); err != nil {
			return nil, err
		}
	}
	liveGen := st.liveGen()
	if req.ExpectGeneration != 0 && req.ExpectGeneration != liveGen {
		return nil, &ConflictError{Expected: req.ExpectGeneration, Actual: liveGen,
			Reason: fmt.Sprintf("root %s is not at the expected generation", p.paths.Root)}
	}
	if st.marker != nil {
		if err := p.checkMarker(ctx, st, req); err != nil {
			return nil, err
		}
	} else if st.live == nil && len(st.children) > 0 {
		return nil, fmt.Errorf("root %s has %d children but no zkconf manifest: refusing to adopt or delete them (remove them or choose another root)",
			p.paths.Root, len(st.children))
	} else if st.live != nil {
		if err := p.verifyUnchanged(ctx, st, hashed); err != nil {
			return nil, err
		}
	}
	pl := p.plan(st, req, hashed)
	pl.acl = acl
	res := &Result{
		Generation: pl.gen, Mode: manifest.ModeMulti, Manifest: pl.next,
		Added: pl.added, Changed: pl.changed, Removed: pl.removed,
	}
	if st.marker != nil {
		res.TookOver = "took over " + st.marker.takeover
	}
	res.Repaired = slices.Sorted(maps.Keys(st.tampered))
	if pl.unchanged && !req.Force {
		res.Generation, res.Manifest, res.Unchanged = liveGen, st.live, true
		res.Zxid = st.rootStat.Mzxid
		res.Mode = st.live.Mode
		res.DryRun = req.DryRun
		p.log.Info("unchanged", "generation", liveGen)
		return res, nil
	}
	if top := st.topGen(); top == math.MaxInt64 {
		// The next generation would wrap to -2^63: refuse before
		// anything is written (dry runs included), whatever the mode.
		return nil, fmt.Errorf("%w: root %s is at generation %d (live %d), the largest a generation can be: no further generation can be published to this root; publish to a new root",
			ErrGenerationExhausted, p.paths.Root, top, liveGen)
	}

	ops, kinds := p.multiOps(st, pl)
	size := multiSize(ops)
	useMarker := false
	switch req.Mode {
	case ModeMarker:
		useMarker = true
	case ModeMulti:
		if size > p.cfg.multiBudget {
			return nil, &TooLargeError{What: "transaction", Size: int64(size), Limit: int64(p.cfg.multiBudget),
				Hint: "use marker mode (ModeMarker, --mode marker) or auto"}
		}
	default:
		useMarker = size > p.cfg.multiBudget
	}
	if useMarker {
		res.Mode = manifest.ModeMarker
		pl.next.Mode = manifest.ModeMarker
		pl.nextBytes = pl.next.Encode()
	}
	if req.DryRun {
		res.DryRun = true
		pl.next.PublishID = ""
		if st.marker != nil {
			res.TookOver = "would take over " + st.marker.takeover
		}
		return res, nil
	}
	if err := p.ensureMeta(ctx, st, useMarker, pl.acl.Meta); err != nil {
		return nil, err
	}
	p.log.Info("publishing", "generation", pl.gen, "mode", res.Mode, "publish_id", pl.next.PublishID,
		"added", len(pl.added), "changed", len(pl.changed), "removed", len(pl.removed), "multi_bytes", size)
	var err error
	if useMarker {
		err = p.publishMarker(ctx, st, pl, res)
	} else {
		err = p.commitMulti(ctx, st, pl, ops, kinds, res)
	}
	if err != nil {
		return nil, err
	}
	res.PublishID = pl.next.PublishID
	p.log.Info("published", "generation", res.Generation, "zxid", res.Zxid, "mode", res.Mode,
		"recovered", res.Recovered, "commit_attempts", res.CommitAttempts)
	if p.cfg.afterCommit != nil && p.cfg.afterCommit() {
		return res, nil // test seam: the publisher "dies" right after its acknowledgement
	}
	// Storing the new contents' blobs and the GC run side by side: the GC
	// never deletes a blob our generation references, so neither waits
	// for the other.
	var wg sync.WaitGroup
	if !useMarker {
		wg.Go(func() { p.storeEntering(ctx, pl) })
	}
	p.gc(ctx, st, pl)
	wg.Wait()
	return res, nil
}

// commitMulti sends the multi-mode commit. When it fails only because a
// departing content's blob is missing (a publisher stopped after its
// acknowledgement, before storing its blobs) or because a blob it creates
// appeared meanwhile, nothing was applied: it reads which departing blobs
// exist, takes the missing contents from the live items (verified against
// the live manifest) and sends the commit again, under the same
// compare-and-swap, creating those blobs instead of checking them.
func (p *Publisher) commitMulti(ctx context.Context, st *state, pl *plan, ops []any, kinds []opKind, res *Result) error {
	for round := 1; ; round++ {
		err := p.commit(ctx, "multi", ops, kinds, st.liveGen(), pl, res)
		var br *blobRaceError
		if !errors.As(err, &br) || br.sha == "" || round >= maxBlobRaces {
			return err
		}
		p.log.Info("departing content not stored as expected; sending the commit again with its blobs", "reason", br.Error(), "round", round)
		rootVersion := int32(-1)
		if st.rootStat != nil {
			rootVersion = st.rootStat.Version
		}
		missing, err := p.missingDeparting(ctx, st, pl.departing, rootVersion, pl.acl.Meta)
		if err != nil {
			return err
		}
		pl.backfill = missing
		ops, kinds = p.multiOps(st, pl)
		if len(missing) > 0 && multiSize(ops) > p.cfg.multiBudget {
			// Too large with the blobs inside: store them first (content-
			// addressed, verified: harmless if the commit never lands) and
			// keep the checks.
			if err := p.storeBlobData(ctx, missing, pl.acl.Meta); err != nil {
				return err
			}
			pl.backfill = nil
			ops, kinds = p.multiOps(st, pl)
		}
	}
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

// storeEntering stores, after the acknowledgement, the blobs of the
// contents that entered the live set (those not created by the commit
// itself), best effort: until then those contents are live items, and the
// next publish that overwrites them stores any blob still missing.
func (p *Publisher) storeEntering(ctx context.Context, pl *plan) {
	if len(pl.entering) == 0 || ctx.Err() != nil {
		return
	}
	start := time.Now()
	blobs := make(map[string][]byte, len(pl.entering))
	for _, sha := range pl.entering {
		if _, done := pl.backfill[sha]; !done {
			blobs[sha] = pl.blobData[sha]
		}
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

// readState reads the root, its children, a marker if any and the history
// list, in one round trip. The listing must agree with the root we read:
// a marker set after our read of the root (which moves the root's version)
// must not be missed while our compare-and-swap still succeeds, so the
// listing's stat of the root is compared with the read's. The blob store is
// not listed: the commit's Check ops say whether the blobs it needs exist.
func (p *Publisher) readState(ctx context.Context) (*state, error) {
	st := &state{}
	for attempt := 0; ; attempt++ {
		var (
			data   []byte
			rs, ks *zk.Stat
			kids   []string
			gens   []int64
			hs     *zk.Stat
		)
		err := work.Parallel(ctx, 3, 3, func(ctx context.Context, i int) error {
			var err error
			switch i {
			case 0:
				data, rs, err = p.get(ctx, p.paths.Root)
			case 1:
				kids, ks, err = p.childrenStat(ctx, p.paths.Root)
			case 2:
				gens, hs, err = p.historyList(ctx)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		// The root and its children are read in the same round trip, in
		// either order. A marker is created in one transaction with a
		// write of the root's data, so if the listing's stat shows the
		// same data version (and the same node) as the read, no marker
		// appeared or went between the two; otherwise read again.
		if (rs == nil) != (ks == nil) || rs != nil && (rs.Czxid != ks.Czxid || rs.Version != ks.Version) {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
			continue
		}
		st.rootStat, st.rootData = rs, data
		st.children = slices.DeleteFunc(kids, func(n string) bool { return n == manifest.MarkerName })
		if len(st.children) != len(kids) {
			st.marker = &markerState{}
		}
		st.history = gens
		st.haveMeta, st.histStat = hs != nil, hs
		break
	}
	if st.rootStat != nil {
		p.resetCacheFor(st.rootStat.Czxid)
		m, err := manifest.Decode(st.rootData)
		switch {
		case err == nil:
			st.live = m
		case errors.Is(err, manifest.ErrEmpty):
		case errors.Is(err, manifest.ErrForeign):
			return nil, fmt.Errorf("root %s holds %d bytes that are not a zkconf manifest: refusing to publish over it (%w)",
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
	if err := json.Unmarshal(data, &ms.info); err != nil || ms.info.PublishID == "" || path.Base(ms.info.PublishID) != ms.info.PublishID {
		ms.bad = fmt.Errorf("marker data is not a zkconf marker")
		return nil
	}
	ls, err := p.exists(ctx, p.paths.PublishingNode(ms.info.PublishID))
	if err != nil {
		return err
	}
	ms.live = ls != nil
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
	if ms.live && !req.OverrideMarker {
		return &MarkerBusyError{Root: p.paths.Root, Owner: ms.info.Publisher, PublishID: ms.info.PublishID, Age: age}
	}
	// A marker whose data confpush did not write (made by hand, or by a
	// tool that crashed) names no publish, so no liveness node can exist
	// for it: it is as dead as one whose publisher is gone, and leaving it
	// would block every agent that does not hold the live generation.
	switch {
	case ms.bad != nil:
		ms.takeover = fmt.Sprintf("an abandoned marker %s (set %v ago; its data was not written by confpush, so no publish can be alive for it)",
			p.paths.Marker(), age)
	case ms.live:
		ms.takeover = fmt.Sprintf("the marker %s of the live publish %s by %s (set %v ago): override requested",
			p.paths.Marker(), ms.info.PublishID, ms.info.Publisher, age)
	default:
		ms.takeover = fmt.Sprintf("an abandoned marker %s of publish %s by %s (set %v ago; its publisher is gone: no liveness node)",
			p.paths.Marker(), ms.info.PublishID, ms.info.Publisher, age)
	}
	p.log.Warn("taking over "+ms.takeover, "marker_owner", ms.info.Publisher, "marker_publish_id", ms.info.PublishID)
	actual := make([]manifest.Item, len(st.children))
	present := make([]bool, len(st.children))
	err := work.Parallel(ctx, len(st.children), 8, func(ctx context.Context, i int) error {
		d, s, err := p.get(ctx, p.paths.Item(st.children[i]))
		if err != nil {
			return err
		}
		if s != nil {
			actual[i], present[i] = manifest.ItemOf(d), true
		}
		return nil
	})
	if err != nil {
		return err
	}
	ms.actual = map[string]manifest.Item{}
	for i, n := range st.children {
		if present[i] {
			ms.actual[n] = actual[i]
		}
	}
	st.children = slices.Collect(maps.Keys(ms.actual))
	return nil
}

// verifyUnchanged reads the live items the plan would leave alone (same
// name and content in the live manifest and the new set) and records in
// st.tampered those whose content does not match the manifest: an item
// changed behind confpush's back with a plain ZooKeeper write. Comparing
// manifests alone would skip it as unchanged and the damage would outlive
// any number of publishes; the plan rewrites it in the same commit.
func (p *Publisher) verifyUnchanged(ctx context.Context, st *state, hashed map[string]manifest.Item) error {
	present := make(map[string]bool, len(st.children))
	for _, c := range st.children {
		present[c] = true
	}
	var names []string
	for n, it := range hashed {
		if old, ok := st.live.Items[n]; ok && old == it && present[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	bad := make([]bool, len(names))
	err := work.Parallel(ctx, len(names), 8, func(ctx context.Context, i int) error {
		d, s, err := p.get(ctx, p.paths.Item(names[i]))
		if err != nil {
			return err
		}
		// A missing item (deleted since the listing) is rewritten too.
		bad[i] = s == nil || !st.live.Matches(names[i], d)
		return nil
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

// plan computes the next manifest and the operations to reach it.
func (p *Publisher) plan(st *state, req Request, hashed map[string]manifest.Item) *plan {
	gen := st.topGen() + 1 // wraps at math.MaxInt64: publishOnce refuses that before using it
	pl := &plan{gen: gen, items: req.Items, blobData: map[string][]byte{}, rootVersion: -1, fence: req.Fence}
	inc := st.incarnation
	if inc == "" {
		inc = manifest.NewIncarnation()
	}
	next := &manifest.Manifest{
		Format: manifest.FormatVersion, Generation: gen, PublishID: newPublishID(),
		PublishedAt: time.Now().UTC(), Publisher: p.cfg.name, Mode: manifest.ModeMulti,
		RollbackOf: req.RollbackOf, Incarnation: inc, Items: hashed,
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
	// Contents entering and leaving the live set (by hash, whatever the
	// item names): see the history invariant in the package doc.
	liveSHA := make(map[string]bool, len(liveItems))
	for _, it := range liveItems {
		liveSHA[it.SHA256] = true
	}
	for n, it := range next.Items {
		if _, dup := pl.blobData[it.SHA256]; dup {
			continue
		}
		pl.blobData[it.SHA256] = req.Items[n]
		// A repaired item's content is stored as a blob too: its live
		// copy cannot serve as one (it was changed).
		if !liveSHA[it.SHA256] || st.tampered[n] {
			pl.entering = append(pl.entering, it.SHA256)
		}
	}
	for sha := range liveSHA {
		if _, kept := pl.blobData[sha]; !kept {
			pl.departing = append(pl.departing, sha)
		}
	}
	slices.Sort(pl.entering)
	slices.Sort(pl.departing)
	return pl
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

// ensureMeta creates the metadata parents (and the root's parent) when
// they are missing, with acl (the history parent's, see
// access.Inherited.Meta). Every create is idempotent.
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
		if p.cfg.beforeCommit != nil {
			p.cfg.beforeCommit(stage)
		}
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
		if uncertain(err) {
			expired := errors.Is(err, zk.ErrSessionExpired)
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
					pl.gen, id, p.paths.Root, zk.ErrSessionExpired)
			}
			if send >= maxCommitSends {
				return fmt.Errorf("commit of generation %d to %s lost with the connection %d times (not applied): %w", pl.gen, p.paths.Root, send, err)
			}
			p.log.Info("commit did not land; sending it again under the same compare-and-swap", "generation", pl.gen, "send", send+1)
			continue
		}
		// A definite failure: nothing of it was applied.
		if denied(err) {
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

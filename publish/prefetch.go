package publish

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Bounds of the speculative reads a publish sends beside its state,
// before it knows which items it leaves alone and which contents enter
// the live set: a set of at most speculateItems items of at most
// speculateBytes in all (the new set's sizes standing for the live
// ones'). A larger set reads after the state, as it did.
const (
	speculateItems = 64
	speculateBytes = 256 << 10
)

// stepTwo is step 2's reads in flight: the state, the ACLs to copy (when
// none are cached) and, for a small set (speculate), the live nodes at
// the request's item paths, which step 3's check of the items a publish
// leaves alone uses instead of reading them again (verifyUnchanged),
// whether the blob of each of the set's contents exists (one listing of
// the blob store; plan: the commit creates the missing blobs of the
// contents entering the live set), and whether a candidate node exists (afterCommit removes it).
// All go out at once: the client pipelines them on its one connection,
// so they cost one round trip where the state and then the unchanged
// items cost two, and the blobs and the candidate one more after the
// acknowledgement.
type stepTwo struct {
	done   chan struct{}
	st     *state
	stErr  error
	acl    *inherited // nil: not read (cachedACLs held them)
	aclErr error
	// items, blobs and candidate are what was read; a failed read leaves
	// its entry out (candidate nil), and the publish does without it what
	// it did before.
	items     map[string]liveItem
	blobs     map[string]bool // sha256 → its blob exists
	candidate *bool
	// hash is the hashes of the set the reads were sent for (nil: not
	// computed), set before the publish takes the reads.
	hash *setHash
}

// liveItem is a live node's data as read beside the state; exists is
// false when there was no node.
type liveItem struct {
	data   []byte
	exists bool
}

// speculation is what a publish reads beside step 2's reads: the item
// paths and the distinct contents' sha256 of a small set.
type speculation struct {
	names, shas []string
}

// speculate returns what a publish of items reads beside its state: for
// a set of at most speculateItems items and speculateBytes, its paths and
// its contents' sha256; nothing for a larger one. The set's hashes are
// returned too when they were computed (a small set), for the publish to
// take instead of hashing the set again (setHash).
func speculate(items map[string][]byte) (speculation, *setHash) {
	if len(items) > speculateItems {
		return speculation{}, nil
	}
	total := 0
	for _, b := range items {
		if total += len(b); total > speculateBytes {
			return speculation{}, nil
		}
	}
	var sp speculation
	seen := map[string]bool{}
	h := hashedSet(items, hashItems(items))
	for n, it := range h.entries {
		sp.names = append(sp.names, n)
		if !seen[it.SHA256] {
			seen[it.SHA256] = true
			sp.shas = append(sp.shas, it.SHA256)
		}
	}
	return sp, h
}

// setHash is a set's manifest entries (hashItems) computed before the
// publish that needs them: by speculate for a small set, or by Prefetch
// in the background for a larger one, while the session is being
// established and the state read, where a confpush publish otherwise
// waits with a processor idle; the publish then takes them (entriesFor)
// instead of hashing the set once more on its way to the commit (~1 ms
// of a one-item publish of 20 items of 64 KiB,
// docs/bench/latency-push64-2026-11-27c). Each byte of a set is hashed
// once per publish either way.
type setHash struct {
	items   map[string][]byte
	done    chan struct{}
	entries map[string]manifest.Item
}

// hashedSet is a setHash of items already hashed (entries). It keeps its
// own map of items' slices: the caller may change the map afterwards
// (entriesFor then sees another set).
func hashedSet(items map[string][]byte, entries map[string]manifest.Item) *setHash {
	h := &setHash{items: maps.Clone(items), done: make(chan struct{}), entries: entries}
	close(h.done)
	return h
}

// hashAhead hashes items in the background, from its own map of items'
// slices (taken here: the caller may change its map meanwhile).
func hashAhead(items map[string][]byte) *setHash {
	h := &setHash{items: maps.Clone(items), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.entries = hashItems(h.items)
	}()
	return h
}

// entriesFor returns the entries of items, waiting for them, when h hashed
// this very set: the same names, each the same bytes in memory (the same
// slice of the same length), as Prefetch's caller passes the set it
// publishes next; nil otherwise (h nil, or another set), and the caller
// hashes items itself. A set whose bytes were modified in place since
// breaks the contract Prefetch and Publish state (the items must not be
// modified meanwhile: Publish reads them again when it commits).
func (h *setHash) entriesFor(items map[string][]byte) map[string]manifest.Item {
	if h == nil || len(h.items) != len(items) {
		return nil
	}
	for n, b := range items {
		a, ok := h.items[n]
		if !ok || len(a) != len(b) || len(a) > 0 && &a[0] != &b[0] {
			return nil
		}
	}
	<-h.done
	return h.entries
}

// startStepTwo sends step 2's reads, and those of sp, and returns at
// once; done is closed when all have answered, or when ctx ends first.
//
// Each read is one goroutine, started here, that makes the blocking call
// itself (inlineReads): no worker, no goroutine of zkclient.Call's, and
// no batch within the batch (the state's three reads are started here
// too, not by readState), so that every read is one goroutine start away
// from the wire; and the caller yields once they are started, so that
// they are sent before it goes on to hash the set (on a busy machine the
// other processor may not run them for a while). The reads fill a copy
// of the result that r takes once all have answered: the last read to
// answer assembles the state and closes done itself, so the caller is
// one wake-up from the last answer. If ctx ends first, r reports ctx's
// error (context.AfterFunc) and the reads still in flight finish into
// the abandoned copy when the client answers or gives up, as a call
// zkclient.Call abandons does.
//
// With h (the set's hashes, perhaps still being computed) for a set sp
// does not speculate on, the live items the publish will verify
// (verifyUnchanged: those whose entry in the live manifest is the set's)
// are read too, as soon as the root's read answered (readUnchanged).
func (p *Publisher) startStepTwo(ctx context.Context, sp speculation, h *setHash) *stepTwo {
	r := &stepTwo{done: make(chan struct{}), items: map[string]liveItem{}, blobs: map[string]bool{}}
	w := &stepTwo{items: make(map[string]liveItem, len(sp.names)), blobs: make(map[string]bool, len(sp.shas))}
	readACL := p.cachedACLs() == nil
	const fixed = stateReadCount + 2 // the state's reads, the ACLs, the candidate
	n := fixed + len(sp.names)
	// Decided once: n must count the reads started below, whatever
	// another publish of p learns meanwhile.
	combined := !p.noMultiRead.Load()
	multiRead := len(sp.names) > 1 && combined
	switch {
	case combined:
		n = 2 // the ACLs, and every other read in one multiRead (readCombined)
	case multiRead:
		n = fixed + 1 // the items in one multiRead (readItems)
	}
	if len(sp.shas) > 0 && !combined {
		n++ // the blob store's listing
	}
	// finish closes done once: with the reads' results (take) or with
	// ctx's error, whichever comes first.
	var once sync.Once
	finish := func(take bool) {
		once.Do(func() {
			if take {
				// Field by field: done is read by the waiters meanwhile.
				r.st, r.stErr, r.acl, r.aclErr = w.st, w.stErr, w.acl, w.aclErr
				r.items, r.blobs, r.candidate = w.items, w.blobs, w.candidate
			} else {
				r.stErr = ctx.Err()
				if readACL {
					r.acl, r.aclErr = &inherited{}, ctx.Err()
				}
			}
			close(r.done)
		})
	}
	run := &stepTwoRun{p: p, ctx: inlineReads(ctx), sp: sp, w: w, readACL: readACL}
	if h != nil && len(sp.names) == 0 && !p.noMultiRead.Load() {
		run.hash = h
	}
	run.left.Store(int64(n))
	stop := context.AfterFunc(ctx, func() { finish(false) })
	run.last = func() {
		// The last answer: assemble the state here. A read that failed,
		// or that the context's end kept from starting (callInline),
		// fails it with its error.
		if err := firstError(run.stErrs[:]); err != nil {
			w.stErr = err
		} else {
			w.st, w.stErr = p.stateFrom(run.ctx, &run.sr)
		}
		stop()
		finish(true)
	}
	if combined {
		go run.one(stateReadCount) // the ACLs
		go run.readCombined()
		runtime.Gosched()
		return r
	}
	for i := range fixed {
		go run.one(i)
	}
	if multiRead {
		go run.readItems()
	} else {
		for _, name := range sp.names {
			go run.readItem(name, p.paths.Item(name))
		}
	}
	if len(sp.shas) > 0 {
		go run.readBlobs()
	}
	runtime.Gosched()
	return r
}

// The reads of readCombined's multiRead, in the order they are sent.
const (
	combRoot     = iota // the root's data and stat
	combRootList        // the root's children, read after its data
	combHistList        // the history parent's children
	combHist            // the history parent's stat (its data: empty)
	combCand            // the candidate's children: whether it exists
	combFixed           // then the blob store's listing (a small set), then the items
)

// readCombined makes step 2's reads but the ACLs' in one multiRead
// (ZooKeeper 3.6+), then runs last if it was the last to answer: the
// root's data, its listing, the history parent's listing and stat, the
// candidate's listing (its existence) and, for a small set (speculate),
// the blob store's listing and the live items at the set's paths. One
// request where they were eight (the root, three listings, the
// candidate's Exists and a multiRead of the items; the two ACL reads
// cannot ride a multiRead): on one connection each request costs about
// as much again as the next on the server and in the client
// (docs/bench/latency-pushsmall-2026-11-28b: 2.73 ms for step 2's eight
// against 1.08 for the multiRead of the 20 items alone).
//
// A multiRead's listing has no stat: the root's listing is read right
// after its data, on a tree no older than the data read's (listAfter;
// stateFrom says why that guards what the stats' comparison did), the
// history parent's stat comes from a read of its data (empty: ensurePath
// creates it so), and the candidate's existence from its listing
// (NoNode: none; its data is a manifest, its children at most the
// contents a rollout adds).
//
// Each answer maps to what the read it replaces made of it: a node that
// does not exist as such, an item's answer as readItems' (item). Any
// other error of a read of the state (a refusal, say) has the state read
// again the way it was, each read a request of its own, whose outcome
// (an explained refusal, a wrapped error, a retry) is then exactly the
// old one; so has the candidate's (an Exists needs no permission) and
// the blob store's. A multiRead that fails as a whole (refused by a
// server older than 3.6, lost with its connection: multiRead) is
// replaced by every read of its own, as without multiRead.
func (r *stepTwoRun) readCombined() {
	defer r.answered()
	if err := r.ctx.Err(); err != nil {
		r.stErrs[0] = err
		return
	}
	p := r.p
	blobsAt, itemsAt := -1, combFixed
	ops := make([]zk.ReadOp, combFixed, combFixed+1+len(r.sp.names))
	ops[combRoot] = zk.ReadOp{Path: p.paths.Root}
	ops[combRootList] = zk.ReadOp{Path: p.paths.Root, Children: true}
	ops[combHistList] = zk.ReadOp{Path: p.paths.History(), Children: true}
	ops[combHist] = zk.ReadOp{Path: p.paths.History()}
	ops[combCand] = zk.ReadOp{Path: p.paths.Candidate(), Children: true}
	if len(r.sp.shas) > 0 {
		blobsAt, itemsAt = len(ops), len(ops)+1
		ops = append(ops, zk.ReadOp{Path: p.paths.Blobs(), Children: true})
	}
	for _, name := range r.sp.names {
		ops = append(ops, zk.ReadOp{Path: p.paths.Item(name)})
	}
	res, err := p.multiReadOps(ops)
	if err != nil {
		r.separately(blobsAt >= 0)
		return
	}
	r.combinedState(res)
	if cand := res[combCand]; cand.Error == nil || errors.Is(cand.Error, zk.ErrNoNode) {
		found := cand.Error == nil
		r.mu.Lock()
		r.w.candidate = &found
		r.mu.Unlock()
	} else {
		r.left.Add(1)
		go func() {
			defer r.answered()
			r.readCandidate()
		}()
	}
	if blobsAt >= 0 {
		if b := res[blobsAt]; b.Error == nil || errors.Is(b.Error, zk.ErrNoNode) {
			r.storedBlobs(b.Children)
		} else {
			r.left.Add(1)
			go r.readBlobs()
		}
	}
	for k, name := range r.sp.names {
		r.item(name, res[itemsAt+k].Data, res[itemsAt+k].Error)
	}
}

// combinedState records the state's reads of readCombined's answers, or,
// when one of them failed other than by NoNode, reads the state again
// one request per read (readStatePart), whose errors are then the ones
// step 2 reports, as they were.
func (r *stepTwoRun) combinedState(res []zk.MultiReadResult) {
	for _, i := range [...]int{combRoot, combRootList, combHistList, combHist} {
		if err := res[i].Error; err != nil && !errors.Is(err, zk.ErrNoNode) {
			r.left.Add(stateReadCount)
			for i := range stateReadCount {
				go r.one(i)
			}
			return
		}
	}
	sr := &r.sr
	if root := res[combRoot]; root.Error == nil {
		sr.data, sr.rootStat = root.Data, root.Stat
		sr.live, sr.liveErr = manifest.Decode(sr.data)
	}
	if l := res[combRootList]; l.Error == nil {
		sr.kids, sr.listed = l.Children, true
	}
	sr.listAfter = true
	if l := res[combHistList]; l.Error == nil {
		sr.gens = parseHistory(l.Children)
	}
	if h := res[combHist]; h.Error == nil {
		sr.histStat = h.Stat
	}
	if r.hash != nil && sr.live != nil {
		r.readUnchanged(sr.live)
	}
}

// separately makes every read of readCombined's, each a request of its
// own (items one Get each), when its multiRead failed as a whole: left
// grows before readCombined answers, so last cannot run in between.
func (r *stepTwoRun) separately(blobs bool) {
	n := stateReadCount + 1 + len(r.sp.names)
	if blobs {
		n++
	}
	r.left.Add(int64(n))
	for i := range stateReadCount {
		go r.one(i)
	}
	go r.one(stateReadCount + 1) // the candidate
	if blobs {
		go r.readBlobs()
	}
	for _, name := range r.sp.names {
		go r.readItem(name, r.p.paths.Item(name))
	}
}

// stepTwoRun is what startStepTwo's reads share: each read is a goroutine
// of its own (one, readItem, readBlobs). The goroutine of an item's read
// (all but six of a small set's) mostly stays within its
// first stack (2 KiB, of which the runtime leaves about 1.1 for frames):
// its read is one go-zookeeper call made from a small frame, not through
// read and readNode, whose generic frames and a closure holding every
// kind's locals (544 bytes) made each of these goroutines copy its stack
// once, 40 copies for a one-item publish of 20 items, a sixth of that
// publish's CPU samples with the goroutines' starts
// (docs/bench/latency-pushpath-2026-11-27b/notes.md). The outcomes are
// read's: an uncertain error is retried through it, after its first pause.
type stepTwoRun struct {
	p       *Publisher
	ctx     context.Context // marked for inline reads
	sp      speculation
	w       *stepTwo // the private copy the reads fill
	readACL bool
	hash    *setHash   // non-nil: read the unchanged items once the root is in (readUnchanged)
	mu      sync.Mutex // w's maps and candidate
	sr      stateReads
	stErrs  [stateReadCount]error
	left    atomic.Int64 // reads yet to answer
	last    func()       // run by the last read to answer
}

// one makes read i of the state's, the ACLs' and the candidate's, then
// runs last if it was the last to answer.
func (r *stepTwoRun) one(i int) {
	defer r.answered()
	switch i {
	case stateReadCount:
		if r.readACL {
			r.readACLs()
		}
	case stateReadCount + 1:
		r.readCandidate()
	default:
		r.readState(i)
	}
}

func (r *stepTwoRun) answered() {
	if r.left.Add(-1) == 0 {
		r.last()
	}
}

//go:noinline
func (r *stepTwoRun) readState(i int) {
	r.stErrs[i] = r.p.readStatePart(r.ctx, &r.sr, i)
	if i == 0 && r.hash != nil && r.stErrs[i] == nil && r.sr.live != nil {
		r.readUnchanged(r.sr.live)
	}
}

// readUnchanged reads, for a set step 2 does not speculate on, the live
// items whose entry in live (the root's manifest, just read) is the set's:
// those the publish leaves alone and verifies (verifyUnchanged), which
// takes these reads instead of sending them after step 2 (at 20 items of
// 64 KiB the verification's 1.2 MB was a round trip of its own after the
// state's, docs/bench/latency-push64-2026-11-27c). Only those: a set
// whose items all change reads nothing more. In multiReads of at most
// speculateItems items and speculateBytes (readBatches), every batch in
// flight at once; the reads count as step 2's (left grows before the
// root's read answers). A batch that fails as a whole is left out, and
// verifyUnchanged reads its items as it did; an item's own answer is
// recorded as readItem's would be (item). The reads are sent after the
// root's answer, as verifyUnchanged's were after the state's: an item
// read newer than the manifest fails to match and is rewritten under the
// commit's compare-and-swap, as before.
func (r *stepTwoRun) readUnchanged(live *manifest.Manifest) {
	<-r.hash.done
	if r.ctx.Err() != nil {
		return
	}
	// Beside them, whether the blobs of the contents entering the live
	// set exist (startBlobReads' reads, sent here rather than a round
	// trip later).
	shas := r.p.enteringToRead(r.hash.entries, live, nil)
	r.left.Add(int64(len(shas)))
	for _, sha := range shas {
		go r.readBlob(sha)
	}
	var names []string
	for n, it := range r.hash.entries {
		if old, ok := live.Items[n]; ok && old == it {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	sizes := make([]int64, len(names))
	for i, n := range names {
		sizes[i] = live.Items[n].Size
	}
	batches := readBatches(sizes, true)
	r.left.Add(int64(len(batches)))
	for _, b := range batches {
		batch := make([]string, len(b))
		for k, i := range b {
			batch[k] = names[i]
		}
		go r.readBatch(batch)
	}
}

// readBlob records whether the blob of content sha exists (readUnchanged),
// then runs last if it was the last to answer; a failed read leaves it
// out, as readBlobs does.
func (r *stepTwoRun) readBlob(sha string) {
	defer r.answered()
	if s, err := r.p.exists(r.ctx, r.p.paths.Blob(sha)); err == nil {
		r.mu.Lock()
		r.w.blobs[sha] = s != nil
		r.mu.Unlock()
	}
}

// readBatch reads the live items names with one multiRead (readUnchanged),
// then runs last if it was the last to answer.
func (r *stepTwoRun) readBatch(names []string) {
	defer r.answered()
	// A multiRead refused meanwhile (readCombined's, by a server older
	// than 3.6, which then closes the connection): another would be
	// refused too and cost another connection; the batch is left out.
	if r.ctx.Err() != nil || r.p.noMultiRead.Load() {
		return
	}
	paths := make([]string, len(names))
	for k, n := range names {
		paths[k] = r.p.paths.Item(n)
	}
	res, err := r.p.multiRead(paths)
	if err != nil {
		return
	}
	for k, n := range names {
		r.item(n, res[k].Data, res[k].Error)
	}
}

//go:noinline
func (r *stepTwoRun) readACLs() {
	in, err := r.p.readACLs(r.ctx)
	r.w.acl, r.w.aclErr = &in, err
}

//go:noinline
func (r *stepTwoRun) readCandidate() {
	if s, err := r.p.exists(r.ctx, r.p.paths.Candidate()); err == nil {
		found := s != nil
		r.mu.Lock()
		r.w.candidate = &found
		r.mu.Unlock()
	}
}

// readItem reads the live item name at path as Publisher.get does (item),
// then runs last if it was the last to answer.
func (r *stepTwoRun) readItem(name, path string) {
	if r.ctx.Err() == nil {
		d, _, err := r.p.conn().Get(path)
		r.item(name, d, err)
	}
	r.answered()
}

// readItems reads the live items at the set's paths with one multiRead
// (ZooKeeper 3.6+), then runs last if it was the last to answer. One
// request and one answer where one Get per item were as many of each: on
// one connection each request costs about as much again as the next (its
// goroutine, its write, the server's work, its answer's wake-up; 44
// pipelined reads took 6.8 ms p50 where one request of 40 paths took 1.8
// on the project's 2-core machine, docs/bench/latency-pushlean-2026-11-27).
// Each path's answer is what its Get's would have been (a multiRead is
// not a transaction: each read succeeds or fails alone, none atomic with
// the others, as the Gets were not), and item records it alike.
//
// A server older than 3.6 refuses the request (ErrUnimplemented) and then
// closes the connection: the Publisher remembers that (no multiRead from
// it again), warns once, and the items are read one Get each, as before,
// their first attempts failing on the closed connection and retried on the
// session the client reconnects (read's first pause). A connection lost
// under the multiRead falls back the same way and also ends this
// Publisher's multiReads (the refusal's answer can be lost with the
// connection); any other failure of the whole request falls back for
// this read only: a read is always safe to send again.
func (r *stepTwoRun) readItems() {
	if r.ctx.Err() == nil {
		paths := make([]string, len(r.sp.names))
		for k, name := range r.sp.names {
			paths[k] = r.p.paths.Item(name)
		}
		res, err := r.p.multiRead(paths)
		if err != nil {
			// One read per item instead of this one: left grows before
			// this read answers, so last cannot run in between.
			r.left.Add(int64(len(r.sp.names)))
			for k, name := range r.sp.names {
				go r.readItem(name, paths[k])
			}
		} else {
			for k, name := range r.sp.names {
				r.item(name, res[k].Data, res[k].Error)
			}
		}
	}
	r.answered()
}

// multiRead reads paths with one multiRead request (ZooKeeper 3.6+) and
// returns each path's answer, or the whole request's error, after which
// the caller reads the paths one Get each (readItems, verifyUnchanged).
// A refusal (a server older than 3.6, which then closes the connection)
// or a connection lost under the request ends this Publisher's
// multiReads, as readItems says; any other failure ends this request
// only.
func (p *Publisher) multiRead(paths []string) ([]zk.MultiReadResult, error) {
	res, err := p.conn().MultiRead(paths...)
	if err == nil {
		return res, nil
	}
	return nil, p.multiReadFailed(err)
}

// multiReadOps is multiRead of reads of data and listings mixed
// (readCombined).
func (p *Publisher) multiReadOps(ops []zk.ReadOp) ([]zk.MultiReadResult, error) {
	res, err := p.conn().MultiReadOps(ops...)
	if err == nil {
		return res, nil
	}
	return nil, p.multiReadFailed(err)
}

// multiReadFailed records what the failure err of a whole multiRead says
// of the server (multiRead) and returns err.
func (p *Publisher) multiReadFailed(err error) error {
	switch {
	case errors.Is(err, zk.ErrUnimplemented) && p.noMultiRead.CompareAndSwap(false, true):
		// A warning: each new Publisher (each confpush run) pays
		// a reconnect for it, on a server out of support since 2022.
		p.log.Warn("ZooKeeper refused multiRead (a server older than 3.6, which closes the connection after refusing one): " +
			"this publisher reads items one request each from now on; every new publisher pays one reconnect for it until the servers run 3.6 or newer")
	case (zkclient.IsRecoverable(err) || zkclient.IsLostWrite(err)) && p.noMultiRead.CompareAndSwap(false, true):
		// The refusal's answer can be lost with the connection the
		// server closes right after it (a client still writing
		// gets a reset, which discards what it had not read), so
		// a multiRead lost with its connection may have been
		// refused: sending another could cost another dropped
		// connection. Gets from now on, as before multiRead.
		p.log.Info("the connection was lost under a multiRead (a ZooKeeper older than 3.6 closes it after refusing one): "+
			"this publisher reads items one request each from now on", "error", err)
	}
	return err
}

// readBatches splits the items at names (their sizes in sizes) into
// batches of at most speculateItems items and speculateBytes that one
// multiRead each reads (verifyUnchanged): the bounds of step 2's
// speculative read of a small set, so that no answer is larger than
// step 2's can be. An item larger than speculateBytes is a batch of its
// own. One item per batch when multiRead is not used.
func readBatches(sizes []int64, multi bool) [][]int {
	var out [][]int
	var cur []int
	var total int64
	for i, sz := range sizes {
		if len(cur) > 0 && (!multi || len(cur) == speculateItems || total+sz > speculateBytes) {
			out = append(out, cur)
			cur, total = nil, 0
		}
		cur = append(cur, i)
		total += sz
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// readBlobs lists the blob store and records, for each of the set's
// contents, whether its blob is there, then runs last if it was the last
// to answer. One listing instead of one Exists per content: on one
// connection each request costs about as much again as the next (its
// goroutine, its write, the server's work, its answer's wake-up: 44
// pipelined reads took 6.8 ms p50 where one request of 40 took 1.8 on
// the project's 2-core machine, docs/bench/latency-pushlean-2026-11-27),
// and the Exists were 20 of a one-item publish's 48 reads of a 20-item
// set. The store holds the blobs of the retained generations (the GC lists
// it too); a listing is as current as the Exists were: a blob stored or
// deleted after it is handled at the commit as before (carry, blobRaceError).
// A store that does not exist has no blob; a failed listing leaves every
// content out (the publish does without, as for a failed Exists), and an
// uncertain error is retried as every read is.
func (r *stepTwoRun) readBlobs() {
	defer r.answered()
	kids, _, err := r.p.childrenStat(r.ctx, r.p.paths.Blobs())
	if err != nil {
		return
	}
	r.storedBlobs(kids)
}

// storedBlobs records, for each of the set's contents, whether its blob
// is among kids, the blob store's listing.
func (r *stepTwoRun) storedBlobs(kids []string) {
	stored := make(map[string]bool, len(kids))
	for _, k := range kids {
		stored[k] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sha := range r.sp.shas {
		r.w.blobs[sha] = stored[sha]
	}
}

// item records the answer to readItem's read: a node that does not exist
// as such, another error by leaving the item out, an uncertain one by
// retrying (retryItem).
//
//go:noinline
func (r *stepTwoRun) item(name string, d []byte, err error) {
	switch {
	case err == nil:
		r.setItem(name, liveItem{data: d, exists: true})
	case errors.Is(err, zk.ErrNoNode):
		r.setItem(name, liveItem{})
	case zkclient.IsUncertain(err) || zkclient.IsLostWrite(err):
		r.retryItem(name)
	}
}

// retryItem goes on, after read's first pause, with a read whose first
// attempt failed with an uncertain error, unless ctx ended: as read would
// have.
//
//go:noinline
func (r *stepTwoRun) retryItem(name string) {
	if readRetry().Sleep(r.ctx, 1) != nil {
		return
	}
	if d, s, err := r.p.get(r.ctx, r.p.paths.Item(name)); err == nil {
		r.setItem(name, liveItem{data: d, exists: s != nil})
	}
}

func (r *stepTwoRun) setItem(name string, it liveItem) {
	r.mu.Lock()
	r.w.items[name] = it
	r.mu.Unlock()
}

// firstError returns the first non-nil error of errs.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Prefetch sends the reads the next Publish (or Rollback, Edit, rollout
// step) of p starts with — the root, its children, the history list, the
// ACLs to copy and, for a small set of items (the set about to be
// published), the live items at its paths and whether its contents'
// blobs exist — and returns at once, so that they are in flight while
// the caller does other work on the same connection (confpush checks the
// session's credentials meanwhile). The next publish of p takes them as
// its own first reads: as though it had started when Prefetch was
// called, so call it right before; its compare-and-swap refuses a plan
// that a commit landing since made stale, as for any read. A Prefetch
// replaces an earlier one not yet taken. Its errors are not reported:
// the publish reads again what failed.
//
// Prefetch also hashes items (in the background for a set larger than it
// reads the items of), and a publish of the very same set (the same
// names, each the same slice) takes those hashes instead of hashing the
// set again: as for Request.Items, the items' bytes must not be modified
// from Prefetch until the publish that takes it returned.
func (p *Publisher) Prefetch(ctx context.Context, items map[string][]byte) {
	sp, h := speculate(items)
	if h == nil && setWithin(items, p.cfg.maxSet) {
		h = hashAhead(items)
	}
	r := p.startStepTwo(ctx, sp, h)
	r.hash = h
	p.mu.Lock()
	p.prefetched = r
	p.mu.Unlock()
}

// takePrefetch returns the reads Prefetch sent, once, or nil.
func (p *Publisher) takePrefetch() *stepTwo {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.prefetched
	p.prefetched = nil
	return r
}

// PrefetchedACLs is what PrefetchACLs returns: the root's and the
// history parent's ACLs as the pending Prefetch read them to copy them.
type PrefetchedACLs struct {
	// Root is the root's ACL; RootExists is false when the root did not
	// exist (Root is then nil).
	Root       []zk.ACL
	RootExists bool
	// Err is the reads' error: the root's first, a node that does not
	// exist is none; zkclient.ReadACL's errors (a *zkclient.PermissionError
	// when the session lacks ADMIN and the digests come back hidden),
	// connection losses retried as every read is, or ctx's error.
	Err error
}

// PrefetchACLs waits for the ACL reads of the pending Prefetch (not yet
// taken by a publish) and returns them, so that a caller that checks the
// session's rights on the root and the history parent (confpush's access
// probe: the same two zkclient.ReadACL reads, a missing node allowed) and
// looks at the root's ACL need not send the same requests again. ok is
// false when there is no pending Prefetch or it read no ACLs (the
// Publisher holds them from an earlier publish): the caller reads them.
func (p *Publisher) PrefetchACLs(ctx context.Context) (acls PrefetchedACLs, ok bool) {
	p.mu.Lock()
	r := p.prefetched
	p.mu.Unlock()
	if r == nil {
		return PrefetchedACLs{}, false
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return PrefetchedACLs{Err: ctx.Err()}, true
	}
	if r.acl == nil {
		return PrefetchedACLs{}, false
	}
	if r.aclErr != nil {
		return PrefetchedACLs{Err: r.aclErr}, true
	}
	// The root's ACL version is zero exactly when it did not exist: the
	// fallback was used in its place.
	if r.acl.ItemFrom == (aclVersion{}) {
		return PrefetchedACLs{}, true
	}
	return PrefetchedACLs{Root: r.acl.Item, RootExists: true}, true
}

// blobReads are the reads of whether the blobs of a set's entering
// contents exist, for a set step 2 did not speculate on (startBlobReads).
type blobReads struct {
	done   chan struct{}
	exists map[string]bool // sha256 → its blob exists; a failed read is left out
}

// startBlobReads sends, beside the reads of the items a publish leaves
// alone (verifyUnchanged), one Exists per content of hashed that is not
// in the live manifest and whose blob step 2 did not read (a set larger
// than it speculates on), so that the multi-mode commit can create those
// blobs (carry) instead of a second server write after the
// acknowledgement that the publish waits for (storeEntering: ~1.9 ms of
// a one-item publish of 20 items of 64 KiB,
// docs/bench/latency-push64-2026-11-27c). They ride the verification's
// round trip, so they add no wait. Nothing is read when there are more
// than enteringReads such contents or they could not fit the commit
// (marker mode stores its blobs first, in 6a). An answer is as current
// as step 2's listing is: a blob stored or deleted since is handled at
// the commit as for a small set (carry, blobRaceError). A failed read
// leaves its content out: the publish stores that blob after the
// acknowledgement, as before. nil when there is nothing to read.
func (p *Publisher) startBlobReads(ctx context.Context, st *state, hashed map[string]manifest.Item) *blobReads {
	shas := p.enteringToRead(hashed, st.live, st.blobExists)
	if len(shas) == 0 {
		return nil
	}
	r := &blobReads{done: make(chan struct{}), exists: make(map[string]bool, len(shas))}
	var mu sync.Mutex
	go func() {
		defer close(r.done)
		_ = work.Parallel(ctx, len(shas), len(shas), func(ctx context.Context, i int) error {
			s, err := p.exists(ctx, p.paths.Blob(shas[i]))
			if err == nil {
				mu.Lock()
				r.exists[shas[i]] = s != nil
				mu.Unlock()
			}
			return nil
		})
	}()
	return r
}

// enteringReads bounds the Exists a publish of a set larger than step 2
// speculates on sends for the blobs of its entering contents
// (enteringToRead): each is a request of its own on the connection
// (pushlean measured one to cost about as much again as the next), for
// one server write saved whatever their number, so they pay for a few
// changed contents, the common publish, not for a set whose every item
// changes; those keep the store after the acknowledgement.
const enteringReads = 8

// enteringToRead returns the contents of hashed that are not in live and
// whose blob's existence is not in known, when there are at most
// enteringReads of them and they could all fit a multi-mode commit
// (startBlobReads, readUnchanged); nil otherwise.
func (p *Publisher) enteringToRead(hashed map[string]manifest.Item, live *manifest.Manifest, known map[string]bool) []string {
	if p.cfg.hooks.noCarry {
		return nil
	}
	inLive := make(map[string]bool, len(live.Items))
	for _, it := range live.Items {
		inLive[it.SHA256] = true
	}
	var shas []string
	var total int64
	for _, it := range hashed {
		if _, read := known[it.SHA256]; read || inLive[it.SHA256] || slices.Contains(shas, it.SHA256) {
			continue
		}
		shas = append(shas, it.SHA256)
		if total += it.Size; len(shas) > enteringReads || total > int64(p.cfg.multiBudget) {
			return nil
		}
	}
	return shas
}

// wait waits for r's reads and records their answers in st.blobExists.
func (r *blobReads) wait(st *state) {
	if r == nil {
		return
	}
	<-r.done
	if st.blobExists == nil {
		st.blobExists = make(map[string]bool, len(r.exists))
	}
	maps.Copy(st.blobExists, r.exists)
}

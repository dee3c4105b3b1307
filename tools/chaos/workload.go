package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// Publish kinds.
const (
	kindInitial  = "initial"
	kindNormal   = "normal"
	kindMarker   = "marker"   // forced marker mode
	kindBig      = "big"      // a set too large for one transaction (auto: marker)
	kindPoison   = "poison"   // one item carries PoisonToken: the picky agent's check fails
	kindRollback = "rollback" // publish.Rollback to an acknowledged generation
	kindFinal    = "final"
)

// Publish outcomes as the publisher reported them.
const (
	outAcked   = "acked"
	outFailed  = "failed"  // a definite failure: it must not have landed
	outUnknown = "unknown" // ErrOutcomeUnknown: resolved from the history afterwards
)

// sig identifies an item's content.
type sig struct {
	SHA  string
	Size int64
}

func sigOf(b []byte) sig {
	s := sha256.Sum256(b)
	return sig{SHA: hex.EncodeToString(s[:]), Size: int64(len(b))}
}

// pubRecord is one publish attempt and what the publisher was told.
type pubRecord struct {
	Seq        int
	Kind       string
	Nonce      string // app.json's "request": identifies the attempt's content
	Mode       manifest.Mode
	Items      map[string]sig
	Poison     bool
	RollbackOf int64 // a generation of the same incarnation
	Inc        int   // the incarnation it was sent to (see gkey)
	Start, End time.Time

	Outcome   string
	Gen       int64
	PublishID string
	ResMode   string
	Recovered bool
	Err       string

	// Rollouts: the canary's selection, the rollout a plain publish saw
	// in the root (it must be refused), the candidate a promote or abort
	// ended.
	Selection     *manifest.Selection `json:",omitempty"`
	DuringRollout string              `json:",omitempty"`
	EndOf         int64               `json:",omitempty"`
	err           error
}

// workload is the publisher: it commits continuously, through its own
// proxies, random sets (sizes, adds and removes, marker mode, poisoned
// items, rollbacks), and records every attempt.
type workload struct {
	rng     *rand.Rand
	pub     *publish.Publisher
	log     *eventLog
	seed    uint64
	timeout time.Duration

	// The gate pauses the publisher between two publishes (see hold).
	gateMu sync.Mutex
	gate   *sync.Cond
	holds  int
	busy   bool
	// commonBusy: the common root's publisher (roots.go) is publishing;
	// a hold waits for it too.
	commonBusy bool
	started    time.Time     // when run started
	heldSince  time.Time     // when the current pause began
	heldTotal  time.Duration // pauses so far

	mu      sync.Mutex
	inc     int
	records []*pubRecord
	acked   map[int64]map[string][]byte // acknowledged generation (gkey) -> contents
	ackedAt map[int64]time.Time         // by gkey
	order   []int64                     // acknowledged generations of the current incarnation (gkeys), in order
	digests map[string][]int64          // gkeys
	poison  map[sig]bool

	base      map[string][]byte
	seq       int
	names     int
	busyCount int
	rstats    rolloutStats
	// tree is whether the current stretch of publishes draws item paths
	// with sub-directories (manifest format 2); it flips now and then,
	// and a flip to flat removes every nested item (format 1 again).
	tree  bool
	trees treeStats
}

// treeStats count the tree mutations the workload made (the publishes
// that sent a tree are counted from the records).
type treeStats struct {
	Moves       int // items moved to another directory or level
	DirsRemoved int // directories emptied by one publish
	Flattened   int // flips from tree to flat: every directory removed at once
}

func newWorkload(seed uint64, pub *publish.Publisher, log *eventLog) *workload {
	w := &workload{
		rng: rand.New(rand.NewPCG(seed, 2)), pub: pub, log: log, seed: seed, timeout: 25 * time.Second,
		acked: map[int64]map[string][]byte{}, digests: map[string][]int64{}, ackedAt: map[int64]time.Time{}, poison: map[sig]bool{},
		base: map[string][]byte{},
		// The first stretch is a tree, so that even a 90-second run
		// publishes trees and goes back to flat.
		tree: true,
	}
	w.gate = sync.NewCond(&w.gateMu)
	return w
}

// run publishes until stop is closed, pausing between publishes.
func (w *workload) run(stop <-chan struct{}) {
	w.gateMu.Lock()
	w.started = time.Now()
	w.gateMu.Unlock()
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(100+w.rng.IntN(900)) * time.Millisecond):
		}
		w.gated(&w.busy, w.step)
	}
}

// gated runs fn once no fault holds the publishers, with *busy (a field
// guarded by gateMu) set meanwhile so that a hold waits for it to end.
func (w *workload) gated(busy *bool, fn func()) {
	w.gateMu.Lock()
	for w.holds > 0 {
		w.gate.Wait()
	}
	*busy = true
	w.gateMu.Unlock()
	fn()
	w.gateMu.Lock()
	*busy = false
	w.gate.Broadcast()
	w.gateMu.Unlock()
}

// hold stops the publisher after the publish in progress, until the
// returned function is called; holds by several faults overlap.
func (w *workload) hold() (release func()) {
	w.gateMu.Lock()
	defer w.gateMu.Unlock()
	return w.holdLocked()
}

// tryHold holds the publisher unless another fault holds it already or
// pauses took a fifth of the time it has been running: agents that do not
// retry on their own would otherwise keep it paused for the bound after
// every fault, and little would be published.
func (w *workload) tryHold() (release func(), ok bool) {
	w.gateMu.Lock()
	defer w.gateMu.Unlock()
	if w.holds > 0 || w.started.IsZero() || w.heldTotal > time.Since(w.started)/5 {
		return func() {}, false
	}
	return w.holdLocked(), true
}

func (w *workload) holdLocked() (release func()) {
	w.holds++
	if w.holds == 1 {
		w.heldSince = time.Now()
	}
	for w.busy || w.commonBusy {
		w.gate.Wait()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			w.gateMu.Lock()
			w.holds--
			if w.holds == 0 {
				w.heldTotal += time.Since(w.heldSince)
			}
			w.gate.Broadcast()
			w.gateMu.Unlock()
		})
	}
}

// newIncarnation points the publisher at the tree recreated after an
// ensemble wipe: generations restart, and rollbacks only go back to
// generations of the new incarnation.
func (w *workload) newIncarnation(pub *publish.Publisher) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pub = pub
	w.inc++
	w.order = nil
	w.busyCount = 0
}

// incarnation is the publisher's current incarnation count.
func (w *workload) incarnation() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inc
}

// latest is the newest acknowledged generation (gkey) and its time.
func (w *workload) latest() (int64, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return 0, time.Time{}
	}
	k := w.order[len(w.order)-1]
	return k, w.ackedAt[k]
}

// step makes one publish of a random kind.
func (w *workload) step() {
	r := w.rng.IntN(100)
	w.mu.Lock()
	nAcked := len(w.order)
	w.mu.Unlock()
	if w.rolloutStep() {
		return
	}
	switch {
	case r < 6 && nAcked >= 3:
		w.rollback()
	case r < 16:
		w.publishKind(kindPoison)
	case r < 26:
		w.publishKind(kindMarker)
	case r < 29:
		w.publishKind(kindBig)
	default:
		w.publishKind(kindNormal)
	}
}

// publishKind builds the next set from the base and publishes it.
func (w *workload) publishKind(kind string) *pubRecord {
	return w.publishWith(kind, func(*publish.Request) {})
}

// publishWith is publishKind with the request adjusted by opt.
func (w *workload) publishWith(kind string, opt func(*publish.Request)) *pubRecord {
	w.seq++
	seq := w.seq
	nonce := fmt.Sprintf("r-%d-%d", w.seed, seq)
	items := maps.Clone(w.base)
	// A poisoned item never stays in the base: drop any that came back
	// with a rollback.
	for name, data := range items {
		if bytes.Contains(data, []byte(PoisonToken)) {
			items[name] = w.content(name, seq)
		}
	}
	if kind != kindInitial && kind != kindFinal {
		w.treeFlip(items)
		w.mutate(items, seq)
	} else if len(items) == 0 {
		for range 8 {
			w.addItem(items, seq)
		}
	}
	if kind == kindBig {
		// Three items of 330-450 KB changed at once cannot fit the 960 KiB
		// multi budget: ModeAuto commits in marker mode.
		for range 3 {
			w.names++
			items[fmt.Sprintf("big-%04d.txt", w.names)] = w.text(seq, 330<<10+w.rng.IntN(120<<10))
		}
	}
	items["app.json"] = w.appJSON(nonce, seq)
	w.base = maps.Clone(items)
	poisoned := ""
	if kind == kindPoison {
		var texts []string
		for name := range items {
			if strings.HasSuffix(name, ".conf") || strings.HasSuffix(name, ".yaml") {
				texts = append(texts, name)
			}
		}
		slices.Sort(texts)
		if len(texts) == 0 {
			w.names++
			texts = []string{fmt.Sprintf("svc-%04d.conf", w.names)}
			items[texts[0]] = w.text(seq, 64)
		}
		poisoned = texts[w.rng.IntN(len(texts))]
		data := append([]byte{}, items[poisoned]...)
		if strings.HasSuffix(poisoned, ".yaml") {
			data = append(data, []byte("# "+PoisonToken+"\n")...)
		} else {
			at := w.rng.IntN(len(data) + 1)
			data = slices.Concat(data[:at], []byte(PoisonToken), data[at:])
		}
		items[poisoned] = data
	}
	mode := manifest.ModeAuto
	if kind == kindMarker {
		mode = manifest.ModeMarker
	} else if kind == kindNormal && w.rng.IntN(4) == 0 {
		mode = manifest.ModeMulti
	}
	rec := &pubRecord{Seq: seq, Kind: kind, Nonce: nonce, Mode: mode, Items: sigs(items), Poison: poisoned != ""}
	if poisoned != "" {
		w.mu.Lock()
		w.poison[sigOf(items[poisoned])] = true
		w.mu.Unlock()
	}
	req := publish.Request{Items: items, Mode: mode}
	// The first, superseding and last publishes end any rollout left
	// open (by a fault's unknown outcome, or the schedule).
	req.Supersede = kind == kindInitial || kind == kindFinal || kind == kindSupersede
	opt(&req)
	if w.busyCount >= 2 {
		req.OverrideMarker = true
	}
	w.do(rec, items, func(ctx context.Context) (*publish.Result, error) { return w.pub.Publish(ctx, req) })
	return rec
}

// rollback rolls back to one of the last acknowledged generations.
func (w *workload) rollback() {
	w.mu.Lock()
	recent := w.order[max(0, len(w.order)-15):]
	toKey := recent[w.rng.IntN(len(recent))]
	items := w.acked[toKey]
	w.mu.Unlock()
	_, to := splitKey(toKey)
	w.seq++
	rec := &pubRecord{Seq: w.seq, Kind: kindRollback, Mode: manifest.ModeAuto, Items: sigs(items), RollbackOf: to}
	rec.Nonce = nonceOf(items)
	w.mu.Lock()
	for _, d := range items {
		if w.poison[sigOf(d)] {
			rec.Poison = true
		}
	}
	w.mu.Unlock()
	opts := publish.Request{Force: true}
	if w.busyCount >= 2 {
		opts.OverrideMarker = true
	}
	w.do(rec, items, func(ctx context.Context) (*publish.Result, error) { return w.pub.Rollback(ctx, to, opts) })
	w.base = maps.Clone(items)
}

// do runs one publish and records its outcome.
func (w *workload) do(rec *pubRecord, items map[string][]byte, fn func(context.Context) (*publish.Result, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	rec.Start = time.Now()
	res, err := fn(ctx)
	rec.End = time.Now()
	cancel()
	rec.err = err
	if rec.Outcome, rec.Err = outcomeOf(res, err); rec.Outcome == outAcked {
		rec.Gen, rec.PublishID, rec.ResMode, rec.Recovered = res.Generation, res.PublishID, string(res.Mode), res.Recovered
	}
	if err != nil && errors.Is(err, publish.ErrMarkerBusy) {
		w.busyCount++
	} else {
		w.busyCount = 0
	}
	w.mu.Lock()
	rec.Inc = w.inc
	w.records = append(w.records, rec)
	// A candidate is no generation every agent must reach: only promotes
	// and aborts are.
	if rec.Outcome == outAcked && rec.Kind != kindCanary {
		k := gkey(rec.Inc, rec.Gen)
		w.acked[k] = items
		w.ackedAt[k] = rec.End
		w.order = append(w.order, k)
		d := digest(rec.Items)
		w.digests[d] = append(w.digests[d], k)
	}
	w.mu.Unlock()
	what := rec.Kind
	if rec.Kind == kindRollback {
		what = fmt.Sprintf("rollback to %d", rec.RollbackOf)
	}
	switch rec.Outcome {
	case outAcked:
		w.log.addAt(rec.End, "publish", "#%d %s (%s, %d items, %d bytes%s) -> generation %s acked in %v (mode %s, recovered %v)",
			rec.Seq, what, rec.Mode, len(rec.Items), totalSize(rec.Items), poisonNote(rec.Poison), genName(gkey(rec.Inc, rec.Gen)),
			rec.End.Sub(rec.Start).Round(time.Millisecond), rec.ResMode, rec.Recovered)
	default:
		w.log.addAt(rec.End, "publish", "#%d %s (%s, %d items%s) -> %s after %v: %s", rec.Seq, what, rec.Mode,
			len(rec.Items), poisonNote(rec.Poison), rec.Outcome, rec.End.Sub(rec.Start).Round(time.Millisecond), oneLine(rec.Err))
	}
}

// outcomeOf is what the publisher was told of an attempt, and the error
// recorded with it.
func outcomeOf(res *publish.Result, err error) (outcome, errText string) {
	switch {
	case err == nil && res != nil && !res.Unchanged:
		return outAcked, ""
	case err == nil:
		return outFailed, "unchanged (nothing published)"
	case errors.Is(err, publish.ErrOutcomeUnknown):
		return outUnknown, err.Error()
	default:
		return outFailed, err.Error()
	}
}

func poisonNote(p bool) string {
	if p {
		return ", poisoned"
	}
	return ""
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " | ")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// final publishes the last generation, retrying until it is acknowledged.
func (w *workload) final(ctx context.Context, kind string) (*pubRecord, error) {
	for attempt := 1; ; attempt++ {
		rec := w.publishKind(kind)
		if rec.Outcome == outAcked {
			return rec, nil
		}
		if ctx.Err() != nil {
			return rec, fmt.Errorf("final publish never acknowledged (last: %s)", rec.Err)
		}
		if attempt >= 2 {
			w.busyCount = 2 // take over whatever marker is left
		}
		time.Sleep(time.Second)
	}
}

func (w *workload) snapshot() ([]*pubRecord, map[int64]time.Time, map[sig]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.records), maps.Clone(w.ackedAt), maps.Clone(w.poison)
}

// mutate changes, adds and removes random items (never app.json).
func (w *workload) mutate(items map[string][]byte, seq int) {
	names := slices.Sorted(maps.Keys(items))
	names = slices.DeleteFunc(names, func(n string) bool { return n == "app.json" })
	if w.rng.IntN(2) == 0 && len(names) > 0 {
		for range 1 + w.rng.IntN(3) {
			n := names[w.rng.IntN(len(names))]
			items[n] = w.content(n, seq)
		}
	}
	if w.rng.IntN(4) == 0 && len(items) < 40 {
		for range 1 + w.rng.IntN(3) {
			w.addItem(items, seq)
		}
	}
	if w.rng.IntN(4) == 0 && len(names) > 3 {
		for range 1 + w.rng.IntN(3) {
			delete(items, names[w.rng.IntN(len(names))])
		}
	}
	if w.tree {
		w.mutateTree(items, seq)
	}
	// Big items do not linger: they make every render slow.
	for _, n := range names {
		if strings.HasPrefix(n, "big-") && w.rng.IntN(2) == 0 {
			delete(items, n)
		}
	}
}

func (w *workload) addItem(items map[string][]byte, seq int) {
	w.names++
	var name string
	switch r := w.rng.IntN(20); {
	case r < 9:
		name = fmt.Sprintf("svc-%04d.conf", w.names)
	case r < 14:
		name = fmt.Sprintf("data-%04d.yaml", w.names)
	case r < 17:
		name = fmt.Sprintf("blob-%04d.bin", w.names)
	case r < 18:
		name = fmt.Sprintf("ünï cödé-%04d.conf", w.names)
	case r < 19:
		name = fmt.Sprintf(".hidden-%04d.conf", w.names)
	default:
		name = fmt.Sprintf("with space %04d.conf", w.names)
	}
	if w.tree && w.rng.IntN(2) == 0 {
		name = w.treeDir() + "/" + name
	}
	items[name] = w.content(name, seq)
}

// treeDir draws a directory path of 1 to 3 components from a small pool,
// so that items share directories, move between them, and directories
// appear and disappear with their last item. No component is ever an
// item's name (those all carry a number), so no set holds a file and a
// directory of the same name. "invalid" is reserved at the top level
// only: below it, it is a directory like any other.
func (w *workload) treeDir() string {
	top := [...]string{"conf.d", "sites", ".hidden.d", "ünï dir", "with space.d"}
	sub := [...]string{"a", "b.d", "invalid", "ünï", "x y"}
	parts := []string{top[w.rng.IntN(len(top))]}
	for d := w.rng.IntN(3); d > 0; d-- {
		parts = append(parts, sub[w.rng.IntN(len(sub))])
	}
	return strings.Join(parts, "/")
}

// treeFlip starts or ends a stretch of tree publishes (about one publish
// in six flips); ending one removes every nested item, so the set is
// flat (format 1) again and every directory disappears at once.
func (w *workload) treeFlip(items map[string][]byte) {
	if w.rng.IntN(6) != 0 {
		return
	}
	w.tree = !w.tree
	if w.tree {
		return
	}
	w.trees.Flattened++
	for n := range items {
		if strings.Contains(n, "/") {
			delete(items, n)
		}
	}
}

// mutateTree moves items between directories (and to and from the top
// level), and sometimes empties a whole directory.
func (w *workload) mutateTree(items map[string][]byte, seq int) {
	names := slices.Sorted(maps.Keys(items))
	names = slices.DeleteFunc(names, func(n string) bool { return n == "app.json" || strings.HasPrefix(n, "big-") })
	if w.rng.IntN(2) == 0 && len(names) > 0 {
		for range 1 + w.rng.IntN(3) {
			from := names[w.rng.IntN(len(names))]
			data, ok := items[from]
			if !ok {
				continue
			}
			base := path.Base(from)
			to := base
			if w.rng.IntN(4) != 0 {
				to = w.treeDir() + "/" + base
			}
			if to == from {
				continue
			}
			delete(items, from)
			if w.rng.IntN(3) == 0 {
				data = w.content(base, seq)
			}
			items[to] = data
			w.trees.Moves++
		}
	}
	if w.rng.IntN(4) == 0 {
		var dirs []string
		for _, n := range names {
			if d := path.Dir(n); d != "." && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			d := dirs[w.rng.IntN(len(dirs))]
			for n := range items {
				if strings.HasPrefix(n, d+"/") {
					delete(items, n)
				}
			}
			w.trees.DirsRemoved++
		}
	}
}

// content makes new content for an item, by its extension.
func (w *workload) content(name string, seq int) []byte {
	switch {
	case strings.HasSuffix(name, ".bin"):
		b := make([]byte, 16+w.rng.IntN(4096))
		for i := range b {
			b[i] = byte(w.rng.IntN(256))
		}
		return b
	case strings.HasSuffix(name, ".yaml"):
		var b bytes.Buffer
		fmt.Fprintf(&b, "name: %q\nseq: %d\nvalues:\n", name, seq)
		for n := w.size() / 12; n > 0; n-- {
			fmt.Fprintf(&b, "  - v%x\n", w.rng.Uint32())
		}
		return b.Bytes()
	case strings.HasPrefix(name, "big-"):
		return w.text(seq, 330<<10+w.rng.IntN(120<<10))
	}
	if w.rng.IntN(40) == 0 {
		return []byte{} // empty items exist too
	}
	return w.text(seq, w.size())
}

// size draws an item size: mostly small, sometimes tens of kilobytes.
func (w *workload) size() int {
	switch r := w.rng.IntN(100); {
	case r < 70:
		return 16 + w.rng.IntN(1000)
	case r < 92:
		return 1<<10 + w.rng.IntN(15<<10)
	default:
		return 16<<10 + w.rng.IntN(112<<10)
	}
}

const textAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:=_-/<>&\"'{}[]\\\t"

// text is printable content of about n bytes ending in a newline.
func (w *workload) text(seq, n int) []byte {
	b := make([]byte, 0, n+40)
	b = fmt.Appendf(b, "# seq %d %08x\n", seq, w.rng.Uint32())
	for len(b) < n {
		if w.rng.IntN(60) == 0 {
			b = append(b, '\n')
			continue
		}
		b = append(b, textAlphabet[w.rng.IntN(len(textAlphabet))])
	}
	return append(b, '\n')
}

func (w *workload) appJSON(nonce string, seq int) []byte {
	b, _ := json.Marshal(map[string]any{"request": nonce, "seq": seq, "pad": fmt.Sprintf("%x", w.rng.Uint64())})
	return b
}

// nonceOf reads the request nonce of a set.
func nonceOf(items map[string][]byte) string {
	var v struct {
		Request string `json:"request"`
	}
	_ = json.Unmarshal(items["app.json"], &v)
	return v.Request
}

func sigs(items map[string][]byte) map[string]sig {
	out := make(map[string]sig, len(items))
	for n, d := range items {
		out[n] = sigOf(d)
	}
	return out
}

func totalSize(items map[string]sig) int64 {
	var n int64
	for _, s := range items {
		n += s.Size
	}
	return n
}

// itemsOf returns the item signatures of an acknowledged generation (gkey).
func (w *workload) itemsOf(g int64) map[string]sig {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sigs(w.acked[g])
}

// describe names the acknowledged generations whose set equals items, for
// the history (the checker itself matches against ZooKeeper's history).
func (w *workload) describe(items map[string]sig) string {
	d := digest(items)
	w.mu.Lock()
	defer w.mu.Unlock()
	gens := w.digests[d]
	if len(gens) == 0 {
		return "no acknowledged generation (yet)"
	}
	return fmt.Sprintf("generation(s) %s", genNames(gens))
}

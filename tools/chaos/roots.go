package chaos

// Several roots per host (issue 25): most agents follow a shared root,
// commonRoot, beside chaosRoot, in one process (roots: main and common).
// Besides the targets of chaosRoot they have a dir target of common and a
// template target of common that reads main too (cutTemplate), which may
// render only a consistent cut: generations of both roots that were live
// at one moment. A second publisher commits small config trees to common
// continuously, beside the main publisher, through the publisher's
// proxies (so publisher faults reach it), held with it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// commonRoot is the shared root the two-root agents follow.
const commonRoot = "/common"

// commonNonceItem is the item of every common set that names its publish
// attempt (JSON: {"nonce": ...}): no two attempts send the same set.
const commonNonceItem = "common.json"

// twoRootsAgent says which agents follow two roots: all but agent-1,
// which keeps the single-root configuration (the byte-for-byte old path).
func twoRootsAgent(idx int) bool { return idx != 1 }

// cutTemplate is the two-root agents' template over both roots. Its own
// root is common; it reads main's generation and request nonce. The
// checker parses it itself (parseCutOutput); the trailer makes a
// truncated output unparseable.
const cutTemplate = `zkconf-chaos cut
main {{ generation "main" }} {{ toJSON (json "main" "app.json").request }}
common {{ generation }} {{ toJSON (json "common.json").nonce }}
{{ range names }}item {{ toJSON . }} {{ toJSON (item .) }}
{{ end }}end {{ len names }}
`

// tCut is the observation target of the template over both roots; the
// common dir target is observed as tDir in an agentObs of its own.
const tCut = "cut"

// commonPaths is the pool of item paths of the common root: directories
// up to two levels (with a space and non-ASCII), no path a directory of
// another.
var commonPaths = []string{
	"limits.conf", "db/primary.conf", "db/replicas/r1.conf", "db/replicas/r2.conf",
	"flags/on.txt", "flags/.hidden", "sp ace/ü.conf", "sp ace/deep/x.yaml",
}

// commonRecord is one publish attempt to common and its outcome.
type commonRecord struct {
	Seq        int
	Nonce      string
	Inc        int
	Mode       manifest.Mode
	Items      map[string]sig
	Start, End time.Time
	Outcome    string
	Gen        int64
	Err        string
}

// commonWork is common's publisher.
type commonWork struct {
	w    *workload // its gate (hold) and incarnation
	rng  *rand.Rand
	log  *eventLog
	seed uint64

	mu      sync.Mutex
	pub     *publish.Publisher
	inc     int
	seq     int
	base    map[string][]byte
	busy    bool // the last attempt met another publisher's marker
	records []*commonRecord
}

func newCommonWork(seed uint64, w *workload, pub *publish.Publisher, log *eventLog) *commonWork {
	return &commonWork{w: w, rng: rand.New(rand.NewPCG(seed, 25)), log: log, seed: seed, pub: pub, base: map[string][]byte{}}
}

// newIncarnation points the publisher at the tree recreated after a wipe.
func (cw *commonWork) newIncarnation(pub *publish.Publisher, inc int) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.pub, cw.inc = pub, inc
}

// run publishes until stop, paused while the main workload is held.
func (cw *commonWork) run(stop <-chan struct{}) {
	w := cw.w
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(20+cw.rng.IntN(400)) * time.Millisecond):
		}
		w.gated(&w.commonBusy, func() { cw.publish() })
	}
}

// final publishes common's last generation, retrying until acknowledged.
func (cw *commonWork) final(ctx context.Context) (*commonRecord, error) {
	for {
		rec := cw.publish()
		if rec.Outcome == outAcked {
			return rec, nil
		}
		if ctx.Err() != nil {
			return rec, fmt.Errorf("final publish to %s never acknowledged (last: %s)", commonRoot, rec.Err)
		}
		cw.busy = true
		time.Sleep(time.Second)
	}
}

// publish sends the next set: one to three items of the pool added,
// changed or removed (so items move between directories and directories
// empty), a new nonce, now and then in marker mode.
func (cw *commonWork) publish() *commonRecord {
	cw.mu.Lock()
	pub, inc := cw.pub, cw.inc
	cw.mu.Unlock()
	cw.seq++
	seq := cw.seq
	items := maps.Clone(cw.base)
	for range 1 + cw.rng.IntN(3) {
		p := commonPaths[cw.rng.IntN(len(commonPaths))]
		if _, ok := items[p]; ok && cw.rng.IntN(3) == 0 {
			delete(items, p)
			continue
		}
		items[p] = fmt.Appendf(nil, "%s of publish %d: %s\n", p, seq, strings.Repeat("x", cw.rng.IntN(300)))
	}
	nonce := fmt.Sprintf("c-%d-%d", cw.seed, seq)
	items[commonNonceItem] = fmt.Appendf(nil, `{"nonce": %q, "seq": %d}`, nonce, seq)
	cw.base = items
	mode := manifest.ModeAuto
	if cw.rng.IntN(8) == 0 {
		mode = manifest.ModeMarker
	}
	rec := &commonRecord{Seq: seq, Nonce: nonce, Inc: inc, Mode: mode, Items: sigs(items)}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	rec.Start = time.Now()
	res, err := pub.Publish(ctx, publish.Request{Items: items, Mode: mode, OverrideMarker: cw.busy})
	rec.End = time.Now()
	cancel()
	if rec.Outcome, rec.Err = outcomeOf(res, err); rec.Outcome == outAcked {
		rec.Gen = res.Generation
	}
	cw.busy = err != nil && errors.Is(err, publish.ErrMarkerBusy)
	cw.mu.Lock()
	cw.records = append(cw.records, rec)
	cw.mu.Unlock()
	if rec.Outcome == outAcked {
		cw.log.addAt(rec.End, "publish", "common #%d (%s, %d items) -> generation %s acked in %v", seq, mode, len(items),
			genName(gkey(inc, rec.Gen)), rec.End.Sub(rec.Start).Round(time.Millisecond))
	} else {
		cw.log.addAt(rec.End, "publish", "common #%d (%s, %d items) -> %s: %s", seq, mode, len(items), rec.Outcome, oneLine(rec.Err))
	}
	return rec
}

func (cw *commonWork) snapshot() []*commonRecord {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return slices.Clone(cw.records)
}

// readCommon reads common's history as readZK does; a root never
// published in this incarnation (no history yet) is an empty view.
func (r *runner) readCommon() (*zkView, error) {
	var v *zkView
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if v, err = readZK(r.zk(), commonRoot, layout.DefaultMeta); err == nil {
			return v, nil
		}
		names, _, lerr := r.zk().Children(layout.New(commonRoot, layout.DefaultMeta).History())
		if (lerr == nil && len(names) == 0) || errors.Is(lerr, zk.ErrNoNode) {
			return &zkView{history: map[int64]*histEntry{}, liveItems: map[string]sig{}, blobs: map[string]bool{}}, nil
		}
		time.Sleep(time.Second)
	}
	return nil, err
}

// pollCut reads the template over both roots once.
func (o *agentObs) pollCut(path string, now time.Time) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		o.afterAbsent(tCut, now)
		return
	}
	if err != nil {
		o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now, Msg: fmt.Sprintf("template over both roots: %v", err)})
		return
	}
	s := &obsState{First: now}
	c, err := parseCutOutput(data)
	if err != nil {
		s.Bad = fmt.Sprintf("%v (%d bytes, starting %q)", err, len(data), truncate(data, 80))
	} else {
		s.Gen, s.Nonce, s.Items, s.MainGen, s.MainNonce = c.gen, c.nonce, c.items, c.mainGen, c.mainNonce
	}
	s.key = stateKey(s) + fmt.Sprintf(" main %d %q", s.MainGen, s.MainNonce)
	if last := o.latest(tCut); last != nil && last.key == s.key {
		o.repeat(tCut, now)
		return
	}
	o.record(tCut, s)
}

// cutOutput is a parsed cutTemplate output.
type cutOutput struct {
	mainGen   int64
	mainNonce string
	gen       int64 // common's
	nonce     string
	items     map[string]itemObs
}

// parseCutOutput parses cutTemplate's output; anything but a whole,
// well-formed output is an error.
func parseCutOutput(data []byte) (cutOutput, error) {
	var c cutOutput
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return c, errors.New("empty or unterminated output")
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	if len(lines) < 4 || lines[0] != "zkconf-chaos cut" {
		return c, errors.New("no header")
	}
	head := func(line, name string) (int64, string, error) {
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			return 0, "", fmt.Errorf("no %s line", name)
		}
		g, n, _ := strings.Cut(rest, " ")
		gen, err := strconv.ParseInt(g, 10, 64)
		if err != nil || gen < 1 {
			return 0, "", fmt.Errorf("bad %s generation %q", name, g)
		}
		var nonce string
		if err := json.Unmarshal([]byte(n), &nonce); err != nil {
			return 0, "", fmt.Errorf("bad %s nonce %q", name, n)
		}
		return gen, nonce, nil
	}
	var err error
	if c.mainGen, c.mainNonce, err = head(lines[1], "main"); err != nil {
		return c, err
	}
	if c.gen, c.nonce, err = head(lines[2], "common"); err != nil {
		return c, err
	}
	// The item lines are those of summaryTemplate (text items only).
	body := append([]string{"zkconf-chaos summary", "generation 1", "nonce x"}, lines[3:]...)
	_, _, items, err := parseTemplateOutput([]byte(strings.Join(body, "\n") + "\n"))
	if err != nil {
		return c, err
	}
	c.items = items
	return c, nil
}

// rootsSummary is what the summary says of the two roots.
type rootsSummary struct {
	Agents                            int // agents following both roots
	Attempted, Acked, Failed, Unknown int // publishes to common
	Landed, NotLanded                 int // outcome-unknown ones, from history
	FinalGeneration                   int64
	HistoryVerified, HistoryTrees     int
	DirStates, TreeStates, LinkPairs  int
	CutStates                         int
	Reads                             int64
	WorstConvergence                  time.Duration
	WorstAgent                        int
}

// startCommon dials common's publisher and publishes its first
// generation (retried until acknowledged), before any agent starts.
func (r *runner) startCommon(ctx context.Context) error {
	conn, pub, err := r.newPublisherAt(commonRoot, "chaos@common")
	if err != nil {
		return fmt.Errorf("%s publisher: %w", commonRoot, err)
	}
	r.zkMu.Lock()
	r.commonConn = conn
	r.zkMu.Unlock()
	r.common = newCommonWork(r.cfg.Seed, r.work, pub, r.log)
	ictx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := r.common.final(ictx); err != nil {
		return fmt.Errorf("initial publish to %s: %w", commonRoot, err)
	}
	return nil
}

// logCommonState puts every new state of a two-root agent's common
// outputs in the history.
func (r *runner) logCommonState(a *agentProc) func(string, *obsState) {
	return func(target string, s *obsState) {
		switch {
		case s.Absent:
			r.log.addAt(s.First, "observe", "%s common %s: absent", a.id, target)
		case s.Bad != "":
			r.log.addAt(s.First, "observe", "%s common %s: BAD %s", a.id, target, s.Bad)
		case target == tCut:
			r.log.addAt(s.First, "observe", "%s cut: main %d (%s), common %d (%s)", a.id, s.MainGen, s.MainNonce, s.Gen, s.Nonce)
		default:
			r.log.addAt(s.First, "observe", "%s common %s: %d items", a.id, target, len(s.Items))
		}
	}
}

// finalCommon publishes common's final generation after main's (whose
// convergence has been awaited) and waits until every two-root agent
// shows it in its common dir target and, with main's final generation,
// in its template over both roots: the last cut, live since then, must be
// rendered (never lost) within the bound.
func (r *runner) finalCommon(ctx context.Context, final *pubRecord) error {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	fin, err := r.common.final(fctx)
	cancel()
	if err != nil {
		return err
	}
	r.commonFinal = fin
	r.commonConv = map[int]time.Duration{}
	r.log.addAt(fin.End, "run", "final generation %d of %s acknowledged; waiting for the two-root agents", fin.Gen, commonRoot)
	want := digest(fin.Items)
	limit := r.cfg.Bound() + 60*time.Second
	deadline := fin.End.Add(limit)
	for {
		pending := 0
		for i, co := range r.cobs {
			if co == nil {
				continue
			}
			if _, ok := r.commonConv[i]; ok {
				continue
			}
			d, c := co.latest(tDir), co.latest(tCut)
			if d == nil || c == nil || d.Absent || digest(obsSigs(d.Items)) != want || c.Gen != fin.Gen || c.Nonce != fin.Nonce ||
				c.MainGen != final.Gen || c.MainNonce != final.Nonce {
				pending++
				continue
			}
			at := d.First
			if c.First.After(at) {
				at = c.First
			}
			r.commonConv[i] = at.Sub(fin.End)
			r.log.addAt(at, "run", "%s shows the final generations of both roots", r.agents[i].id)
		}
		if pending == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, co := range r.cobs {
		if co == nil {
			continue
		}
		d, ok := r.commonConv[i]
		switch {
		case !ok:
			r.violate(Violation{Property: "R3-lost", Agent: i, At: time.Now(),
				Msg: fmt.Sprintf("%s never showed %s's final generation %d with %s's final generation %d (waited %v); last log lines:\n%s",
					r.agents[i].id, commonRoot, fin.Gen, chaosRoot, final.Gen, limit, r.agents[i].tail())})
		case d > r.cfg.Bound():
			r.violate(Violation{Property: "R3-lost", Agent: i, At: fin.End.Add(d),
				Msg: fmt.Sprintf("%s showed the final generations of both roots after %v, beyond the bound %v", r.agents[i].id, d.Round(time.Millisecond), r.cfg.Bound())})
		}
	}
	return nil
}

// checkRoots runs the offline checks of the two roots (roots_check.go).
func (r *runner) checkRoots(c *checker) rootsSummary {
	records := r.common.snapshot()
	r.zkMu.Lock()
	r.commonView.inc = len(r.commonPre)
	views := append(slices.Clone(r.commonPre), r.commonView)
	r.zkMu.Unlock()
	hist := map[int64]*histEntry{}
	rs := rootsSummary{WorstAgent: -1, FinalGeneration: r.commonFinal.Gen}
	for _, v := range views {
		for g, e := range v.history {
			e.Inc = v.inc
			hist[gkey(v.inc, g)] = e
			rs.HistoryVerified++
			if e.Format == 2 {
				rs.HistoryTrees++
			}
		}
	}
	rc := newRootsChecker(c, hist, records)
	rc.checkHistory(views, records, r.commonFinal)
	for _, o := range r.cobs {
		if o == nil {
			continue
		}
		rs.Agents++
		rc.checkAgent(o)
		o.mu.Lock()
		for _, n := range o.reads {
			rs.Reads += n
		}
		o.mu.Unlock()
	}
	c.violations = append(c.violations, rc.violations...)
	for _, rec := range records {
		rs.Attempted++
		switch rec.Outcome {
		case outAcked:
			rs.Acked++
		case outFailed:
			rs.Failed++
		default:
			rs.Unknown++
		}
	}
	rs.Landed, rs.NotLanded = rc.landed, rc.lost
	rs.DirStates, rs.TreeStates, rs.LinkPairs, rs.CutStates = rc.dirStates, rc.treeStates, rc.linkPairs, rc.cutStates
	for i, d := range r.commonConv {
		if rs.WorstAgent < 0 || d > rs.WorstConvergence {
			rs.WorstConvergence, rs.WorstAgent = d, i
		}
	}
	return rs
}

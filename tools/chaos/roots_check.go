package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// rootsChecker verifies the common root on its own (never torn, never
// backwards, never lost, as the main checker does for chaosRoot) and the
// template over both roots: every combination it rendered was live at one
// moment.
//
// "Live at one moment" is decided in ZooKeeper's own order of commits, not
// by clocks: a generation is live from the zxid of the transaction that
// created its history entry (the same Multi that set the root) until the
// zxid of the entry that ended it, and a combination is a cut when the
// two intervals meet. An attempt whose outcome the publisher did not learn
// needs no special care here: only what landed is in the history, with
// its commit zxid. Ended means: for a candidate, by the next generation of
// any kind (a promote, an abort, another canary, a plain publish); for
// any other generation, by the next generation that is no candidate (a
// canary leaves the stable generation live for the hosts it does not
// select).
type rootsChecker struct {
	c          *checker             // chaosRoot's, for main's generations
	hist       map[int64]*histEntry // common's, by gkey
	byDigest   map[string]int64
	known      map[string]map[sig]bool
	recByNonce map[string]*commonRecord
	mainEnd    map[int64]int64 // gkey -> the zxid that ended it; absent: live at the end
	commonEnd  map[int64]int64

	violations   []Violation
	dirStates    int // distinct common dir target states verified
	treeStates   int // of which held a sub-directory
	cutStates    int // distinct combinations rendered by the template over both roots
	linkPairs    int
	landed, lost int // outcome-unknown publishes that landed / did not
}

func newRootsChecker(c *checker, hist map[int64]*histEntry, records []*commonRecord) *rootsChecker {
	rc := &rootsChecker{c: c, hist: hist, byDigest: map[string]int64{}, known: map[string]map[sig]bool{},
		recByNonce: map[string]*commonRecord{}, mainEnd: liveEnds(c.hist), commonEnd: liveEnds(hist)}
	for k, e := range hist {
		rc.byDigest[digest(e.Items)] = k
		for n, s := range e.Items {
			if rc.known[n] == nil {
				rc.known[n] = map[sig]bool{}
			}
			rc.known[n][s] = true
		}
	}
	for _, r := range records {
		rc.recByNonce[r.Nonce] = r
	}
	return rc
}

// liveEnds maps every generation (gkey) to the commit zxid of the
// generation that ended it (see rootsChecker); the live one has none.
func liveEnds(hist map[int64]*histEntry) map[int64]int64 {
	byInc := map[int][]int64{}
	for k := range hist {
		inc, _ := splitKey(k)
		byInc[inc] = append(byInc[inc], k)
	}
	ends := map[int64]int64{}
	for _, ks := range byInc {
		slices.Sort(ks)
		for i, k := range ks {
			for _, next := range ks[i+1:] {
				if hist[k].Candidate || !hist[next].Candidate {
					ends[k] = hist[next].Czxid
					break
				}
			}
		}
	}
	return ends
}

// overlap reports whether [s1, e1) and [s2, e2) meet; an end of 0 is open.
func overlap(s1, e1, s2, e2 int64) bool {
	end := func(e int64) int64 {
		if e == 0 {
			return 1<<63 - 1
		}
		return e
	}
	return max(s1, s2) < min(end(e1), end(e2))
}

func (rc *rootsChecker) violate(prop string, agent int, at time.Time, format string, args ...any) {
	rc.violations = append(rc.violations, Violation{Property: prop, Agent: agent, At: at, Msg: fmt.Sprintf(format, args...)})
}

// checkHistory verifies common's publish log against its history, per
// incarnation: every acknowledged publish landed at its generation with
// exactly its items, none reported failed landed, every generation
// belongs to an attempt, the manifest format fits its paths, and the live
// root of the last incarnation is the final publish.
func (rc *rootsChecker) checkHistory(views []*zkView, records []*commonRecord, final *commonRecord) {
	for _, v := range views {
		owner := map[string]*commonRecord{}
		for _, r := range records {
			if r.Inc == v.inc {
				owner[digest(r.Items)] = r
			}
		}
		landed := map[*commonRecord]bool{}
		for g, e := range v.history {
			r := owner[digest(e.Items)]
			switch {
			case r == nil:
				rc.violate("R5-common-publish", -1, e.PublishedAt, "incarnation %d: %s generation %d belongs to no publish attempt", v.inc, commonRoot, g)
			case r.Outcome == outFailed:
				rc.violate("R5-common-publish", -1, r.End, "incarnation %d: %s publish #%d was reported failed (%s) but landed as generation %d", v.inc, commonRoot, r.Seq, oneLine(r.Err), g)
			case r.Outcome == outAcked && r.Gen != g:
				rc.violate("R5-common-publish", -1, r.End, "incarnation %d: %s publish #%d was acknowledged as generation %d but landed as %d", v.inc, commonRoot, r.Seq, r.Gen, g)
			}
			if r != nil {
				landed[r] = true
			}
			if e.Format != formatFor(e.Items) {
				rc.violate("R5-common-publish", -1, e.PublishedAt, "incarnation %d: %s generation %d has manifest format %d, its paths need %d", v.inc, commonRoot, g, e.Format, formatFor(e.Items))
			}
		}
		for _, r := range records {
			if r.Inc != v.inc {
				continue
			}
			switch {
			case r.Outcome == outAcked && !landed[r]:
				rc.violate("R5-common-publish", -1, r.End, "incarnation %d: %s publish #%d was acknowledged as generation %d, which the history does not hold with its items", v.inc, commonRoot, r.Seq, r.Gen)
			case r.Outcome == outUnknown && landed[r]:
				rc.landed++
			case r.Outcome == outUnknown:
				rc.lost++
			}
		}
	}
	last := views[len(views)-1]
	if last.live == nil || last.live.Gen != final.Gen || digest(last.live.Items) != digest(final.Items) {
		rc.violate("R5-common-publish", -1, final.End, "%s's live root is not the final publish (generation %d)", commonRoot, final.Gen)
	}
	if last.marker {
		rc.violate("R5-common-publish", -1, final.End, "%s: a marker is left", commonRoot)
	}
}

// key finds the common generation a rendered set is: its digest (every
// set carries its attempt's nonce, so at most one generation has it).
func (rc *rootsChecker) key(items map[string]sig) (int64, bool) {
	k, ok := rc.byDigest[digest(items)]
	return k, ok
}

// checkAgent verifies one two-root agent's common dir target and its
// template over both roots (o: the agentObs of those two outputs).
func (rc *rootsChecker) checkAgent(o *agentObs) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := o.idx
	for _, v := range o.anomalies {
		v.Msg = commonRoot + ": " + v.Msg
		rc.violations = append(rc.violations, v)
	}
	var floor int64
	for _, s := range o.states[tDir] {
		rc.dirStates++
		if s.Absent {
			continue
		}
		if s.Bad != "" {
			rc.violate("R1-torn", id, s.First, "%s dir target could not be read as a whole set: %s", commonRoot, s.Bad)
			continue
		}
		k, ok := rc.key(obsSigs(s.Items))
		if !ok {
			rc.violate("R1-torn", id, s.First, "%s dir target holds a set that is no generation of it: %s", commonRoot, describeSet(obsSigs(s.Items)))
			continue
		}
		if k < floor {
			rc.violate("R2-backwards", id, s.First, "%s dir target went back from generation %s to %s", commonRoot, genName(floor), genName(k))
		}
		floor = max(floor, k)
		s.Assigned = k
		if formatFor(s.Items) == 2 {
			rc.treeStates++
		}
	}
	for name, m := range o.links {
		for it, at := range m {
			rc.linkPairs++
			if !rc.known[name][sig{SHA: it.SHA, Size: it.Size}] {
				rc.violate("R1-torn", id, at, "%s dir target link %q shows content (%d bytes) that no generation of it had under that name", commonRoot, name, it.Size)
			}
		}
	}
	var lastMain, lastCommon int64
	for _, s := range o.states[tCut] {
		if s.Absent {
			continue
		}
		rc.cutStates++
		if s.Bad != "" {
			rc.violate("R1-torn", id, s.First, "the template over both roots is partial or garbled: %s", s.Bad)
			continue
		}
		mk, ck, ok := rc.checkCut(id, s, lastMain)
		if !ok {
			continue
		}
		if mk < lastMain || ck < lastCommon {
			rc.violate("R2-backwards", id, s.First, "the template over both roots went back: from main %s, common %s to main %s, common %s",
				genName(lastMain), genName(lastCommon), genName(mk), genName(ck))
		}
		lastMain, lastCommon = max(lastMain, mk), max(lastCommon, ck)
	}
}

// checkCut verifies one rendered combination: each root's part is its
// generation's (never torn), and the two generations were live at one
// moment. It returns the two generations (gkeys).
func (rc *rootsChecker) checkCut(id int, s *obsState, lastMain int64) (mk, ck int64, ok bool) {
	mk = rc.c.templateKey(s.MainGen, s.MainNonce, lastMain)
	me := rc.c.hist[mk]
	if me == nil || rc.c.nonceOf[me.Items["app.json"].SHA] != s.MainNonce {
		rc.violate("R1-torn", id, s.First, "the template over both roots names main generation %d with request %q, which no generation of %s has", s.MainGen, s.MainNonce, chaosRoot)
		return 0, 0, false
	}
	rec := rc.recByNonce[s.Nonce]
	if rec == nil {
		rc.violate("R1-torn", id, s.First, "the template over both roots names common nonce %q, which no publish to %s sent", s.Nonce, commonRoot)
		return 0, 0, false
	}
	ck = gkey(rec.Inc, s.Gen)
	ce := rc.hist[ck]
	if ce == nil || digest(ce.Items) != digest(rec.Items) {
		rc.violate("R1-torn", id, s.First, "the template over both roots names common generation %d with nonce %q: %s's history has no such generation", s.Gen, s.Nonce, commonRoot)
		return 0, 0, false
	}
	if d := compareTemplate(ce.Items, s.Items); d != "" {
		rc.violate("R1-torn", id, s.First, "the template over both roots shows common generation %d with other items: %s", s.Gen, d)
		return 0, 0, false
	}
	mi, _ := splitKey(mk)
	if mi != rec.Inc {
		rc.violate("R4-cut", id, s.First, "the template over both roots combined main %s and common %s: generations of two incarnations of the tree", genName(mk), genName(ck))
		return mk, ck, true
	}
	if !overlap(me.Czxid, rc.mainEnd[mk], ce.Czxid, rc.commonEnd[ck]) {
		rc.violate("R4-cut", id, s.First, "the template over both roots rendered main %s (live from zxid %#x to %s) with common %s (live from zxid %#x to %s): never live at one moment",
			genName(mk), me.Czxid, zxidEnd(rc.mainEnd[mk]), genName(ck), ce.Czxid, zxidEnd(rc.commonEnd[ck]))
	}
	return mk, ck, true
}

func zxidEnd(z int64) string {
	if z == 0 {
		return "the end"
	}
	return fmt.Sprintf("%#x", z)
}

// describeSet names a set's paths, for messages.
func describeSet(items map[string]sig) string {
	names := slices.Sorted(maps.Keys(items))
	return fmt.Sprintf("%d items: %s", len(names), strings.Join(head(names, 8), ", "))
}

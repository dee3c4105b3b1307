package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// The checker's view of canary rollouts (docs/design.md, "Canary
// rollouts"), written from the design, not from the manifest package: a
// candidate generation is a history entry like any other (so never torn
// and never backwards cover hosts on a candidate), a promote carries the
// candidate's content and an abort the stable content, each candidate
// ends at most once, a plain publish during a rollout is refused, and at
// the end every host is on what its labels select.

// checkLiveCanary checks a root that announces a canary: the newest
// history entry is the candidate it names, above the stable generation
// the root holds.
func (c *checker) checkLiveCanary(v *zkView, newest *histEntry, now time.Time) {
	cn := v.live.Canary
	switch {
	case newest.Gen != cn.Generation || !newest.Candidate:
		c.violate("P4-publish", -1, now, "live root announces candidate generation %d, the newest history entry is %d (candidate %v)",
			cn.Generation, newest.Gen, newest.Candidate)
	case v.live.Gen >= cn.Generation:
		c.violate("P4-publish", -1, now, "live root holds stable generation %d, not below its candidate %d", v.live.Gen, cn.Generation)
	}
	if st := v.history[v.live.Gen]; st == nil || st.PublishID != v.live.PublishID || st.Candidate {
		c.violate("P4-publish", -1, now, "live root's stable generation %d (%s) is not that generation of the history", v.live.Gen, v.live.PublishID)
	}
}

// stableOf is the stable generation under candidate cand: the newest
// generation below it that is no candidate (a canary that superseded
// another keeps the stable generation).
func stableOf(v *zkView, cand int64) *histEntry {
	for g := cand - 1; g > 0; g-- {
		if e := v.history[g]; e != nil && !e.Candidate {
			return e
		}
	}
	return nil
}

// checkRolloutEnd checks history entry g, a promote or an abort: it ends
// a candidate, once, with the candidate's content (promote) or the stable
// content (abort), and an attempt that was not reported as failed asked
// for it.
func (c *checker) checkRolloutEnd(v *zkView, g int64, records []*pubRecord, now time.Time) {
	e := v.history[g]
	kind, cand := kindPromote, e.PromoteOf
	if e.AbortOf > 0 {
		kind, cand = kindAbort, e.AbortOf
	}
	ce := v.history[cand]
	switch {
	case e.PromoteOf > 0 && e.AbortOf > 0:
		c.violate("P4-publish", -1, now, "generation %d is both a promote of %d and an abort of %d", g, e.PromoteOf, e.AbortOf)
		return
	case e.Candidate:
		c.violate("P4-publish", -1, now, "generation %d ends candidate %d but is itself a candidate", g, cand)
		return
	case ce == nil || !ce.Candidate || cand >= g:
		c.violate("P4-publish", -1, now, "generation %d is a %s of generation %d, which is no earlier candidate", g, kind, cand)
		return
	}
	want := ce.Items
	if kind == kindAbort {
		st := stableOf(v, cand)
		if st == nil {
			c.violate("P4-publish", -1, now, "generation %d aborts candidate %d, which has no stable generation below it", g, cand)
			return
		}
		want = st.Items
	}
	if !maps.Equal(want, e.Items) {
		c.violate("P4-publish", -1, now, "generation %d is a %s of candidate %d but does not carry the %s content: %s",
			g, kind, cand, map[string]string{kindPromote: "candidate's", kindAbort: "stable"}[kind], diffSets(want, e.Items, c))
	}
	var ends []int64
	for _, g2 := range slices.Sorted(maps.Keys(v.history)) {
		if x := v.history[g2]; x.PromoteOf == cand || x.AbortOf == cand {
			ends = append(ends, g2)
		}
	}
	if len(ends) > 1 && ends[0] != g {
		c.violate("P4-publish", -1, now, "candidate %d was ended %d times: generations %v", cand, len(ends), ends)
	}
	asked := 0
	for _, r := range records {
		if r.Kind == kind && r.EndOf == cand && r.Outcome != outFailed {
			asked++
		}
	}
	if asked == 0 {
		c.violate("P4-publish", -1, now, "generation %d is a %s of candidate %d that no attempt not reported as failed asked for", g, kind, cand)
	}
}

// checkRefusals reports every plain publish attempted while the root
// carried a rollout that was acknowledged or landed: it must be refused.
func (c *checker) checkRefusals(records []*pubRecord, landed map[*pubRecord][]int64) {
	for _, r := range records {
		if r.DuringRollout == "" {
			continue
		}
		if r.Outcome == outAcked || len(landed[r]) > 0 {
			c.violate("P7-rollout-refusal", -1, r.End, "plain publish #%d during rollout %s was not refused: it landed as generation %d%v",
				r.Seq, r.DuringRollout, r.Gen, landed[r])
		}
	}
}

// wantFinal is the generation a host with id and labels must end on,
// given the live root and the generation it last rendered: the live
// generation when no rollout is open; during one, the candidate when the
// canary selects the host or the host is already above the stable
// generation (a host on the candidate never goes back), else the stable
// generation.
func wantFinal(live *histEntry, id string, labels map[string]string, held int64) int64 {
	cn := live.Canary
	if cn == nil {
		return live.Gen
	}
	if held > live.Gen || selects(cn, id, labels) {
		return cn.Generation
	}
	return live.Gen
}

// checkFinalSelection checks that agent's last states (both targets) are
// the generation its labels select in the final root of incarnation inc.
// checkAgent must have assigned the states. It returns the generation
// (gkey) the agent must be on.
func (c *checker) checkFinalSelection(inc int, live *histEntry, o *agentObs, id string, labels map[string]string, at time.Time) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	last := func(target string) *obsState {
		ss := o.states[target]
		for i := len(ss) - 1; i >= 0; i-- {
			if !ss[i].Absent && ss[i].Bad == "" {
				return ss[i]
			}
		}
		return nil
	}
	tmpl, dir := last(tTmpl), last(tDir)
	var held int64
	if tmpl != nil {
		if hi, hg := splitKey(tmpl.Assigned); hi == inc {
			held = hg
		}
	}
	want := gkey(inc, wantFinal(live, id, labels, held))
	what := "the live generation"
	if live.Canary != nil {
		what = "what its labels select during rollout " + live.Canary.RolloutID
	}
	e := c.hist[want]
	switch {
	case e == nil:
		c.violate("P8-selection", o.idx, at, "%s must end on generation %s (%s), which is not in the history", id, genName(want), what)
		return want
	case tmpl == nil || tmpl.Assigned != want:
		got := "nothing"
		if tmpl != nil {
			got = genName(tmpl.Assigned)
		}
		c.violate("P8-selection", o.idx, at, "%s (labels %v) ended with its template output on %s, not on generation %s (%s)", id, labels, got, genName(want), what)
	}
	if dir == nil || digest(obsSigs(dir.Items)) != digest(e.Items) {
		c.violate("P8-selection", o.idx, at, "%s (labels %v) ended with its dir target not holding generation %s's set (%s)", id, labels, genName(want), what)
	}
	return want
}

// selects is the canary selection, from the design: every term of the
// selector holds for the labels plus "agent" = id, and the id's bucket
// (sha256 of "zkconf-canary\x00" and the id, first 8 bytes big-endian,
// mod 10,000) is below percent × 100 when a percent is set.
func selects(cn *wireCanary, id string, labels map[string]string) bool {
	view := maps.Clone(labels)
	if view == nil {
		view = map[string]string{}
	}
	view["agent"] = id
	for _, term := range splitTerms(cn.Selector) {
		if !termHolds(term, view) {
			return false
		}
	}
	if cn.Percent <= 0 {
		return true
	}
	sum := sha256.Sum256([]byte("zkconf-canary\x00" + id))
	bucket := binary.BigEndian.Uint64(sum[:8]) % 10000
	return bucket < uint64(math.Round(cn.Percent*100))
}

// splitTerms splits a selector at the commas outside parentheses.
func splitTerms(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[from:i]))
				from = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[from:]); t != "" {
		out = append(out, t)
	}
	return out
}

// termHolds evaluates one selector term: k=v, k==v, k!=v, k in (..),
// k notin (..), k, !k.
func termHolds(t string, labels map[string]string) bool {
	set := func(list string) map[string]bool {
		list = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(list), "("), ")")
		m := map[string]bool{}
		for _, v := range strings.Split(list, ",") {
			m[strings.TrimSpace(v)] = true
		}
		return m
	}
	if k, list, ok := strings.Cut(t, " notin "); ok {
		v, has := labels[strings.TrimSpace(k)]
		return !has || !set(list)[v]
	}
	if k, list, ok := strings.Cut(t, " in "); ok {
		v, has := labels[strings.TrimSpace(k)]
		return has && set(list)[v]
	}
	if k, v, ok := strings.Cut(t, "!="); ok {
		return labels[strings.TrimSpace(k)] != strings.TrimSpace(v)
	}
	if k, v, ok := strings.Cut(t, "=="); ok {
		got, has := labels[strings.TrimSpace(k)]
		return has && got == strings.TrimSpace(v)
	}
	if k, v, ok := strings.Cut(t, "="); ok {
		got, has := labels[strings.TrimSpace(k)]
		return has && got == strings.TrimSpace(v)
	}
	if k, ok := strings.CutPrefix(t, "!"); ok {
		_, has := labels[strings.TrimSpace(k)]
		return !has
	}
	_, has := labels[t]
	return has
}

// sameSet reports whether generations a and b (gkeys) carry the same set.
func (c *checker) sameSet(a, b int64) bool {
	ea, eb := c.hist[a], c.hist[b]
	return ea != nil && eb != nil && maps.Equal(ea.Items, eb.Items)
}

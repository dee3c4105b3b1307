package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// closingCanary leaves the run on an open rollout, so that the final
// check by labels covers that case too: after the final publish has
// converged, a canary of one zone (drawn from the seed) is started and
// the agents it selects are awaited on the candidate; the others must
// stay on the final generation (checked offline, checkFinalSelection).
// It returns the candidate's record (nil when it was not acknowledged).
func (r *runner) closingCanary(ctx context.Context) *pubRecord {
	w := r.work
	zone := zoneOf(int(r.cfg.Seed % 2))
	sel := manifest.Selection{Selector: zoneLabel + "=" + zone}
	var rec *pubRecord
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		rec = w.publishWith(kindCanary, func(req *publish.Request) { req.Canary = &sel })
		rec.Selection = &sel
		if rec.Outcome == outAcked {
			break
		}
	}
	if rec == nil || rec.Outcome != outAcked {
		r.log.add("run", "closing canary never acknowledged; the run ends without an open rollout")
		return nil
	}
	w.mu.Lock()
	w.rstats.Started++
	w.mu.Unlock()
	r.log.addAt(rec.End, "run", "closing canary %s: candidate generation %d; waiting for the selected agents", sel.Selector, rec.Gen)
	cn := &wireCanary{Generation: rec.Gen, Selector: sel.Selector}
	want := digest(rec.Items)
	deadline := time.Now().Add(r.cfg.Bound() + 60*time.Second)
	pending := map[int]bool{}
	for i, a := range r.agents {
		if selects(cn, a.id, agentLabels(i)) {
			pending[i] = true
		}
	}
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		for i := range pending {
			d, t := r.obs[i].latest(tDir), r.obs[i].latest(tTmpl)
			sg, ok := r.statusGen(r.agents[i])
			if ok && sg == rec.Gen && d != nil && t != nil && !d.Absent && t.Gen == rec.Gen && t.Nonce == rec.Nonce &&
				digest(obsSigs(d.Items)) == want {
				delete(pending, i)
				r.log.add("run", "%s (zone=%s) is on the candidate %d", r.agents[i].id, zoneOf(i), rec.Gen)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range pending {
		r.violate(Violation{Property: "P8-selection", Agent: i, At: time.Now(),
			Msg: fmt.Sprintf("%s (zone=%s) is selected by the closing canary %s but never showed candidate generation %d: %s",
				r.agents[i].id, zoneOf(i), sel.Selector, rec.Gen, r.describeOutputs(i))})
	}
	return rec
}

// finalFor checks agent i's final state against what its labels select
// in the final root (checkFinalSelection) and returns the generation and
// request nonce its last reload must be for: the closing canary's when it
// selects the agent, the final publish's otherwise.
func (r *runner) finalFor(i int, c *checker, view *zkView, final *pubRecord) (int64, string) {
	c.checkFinalSelection(view.inc, view.live, r.obs[i], r.agents[i].id, agentLabels(i), time.Now())
	if r.closing != nil && view.live.Canary != nil && wantFinal(view.live, r.agents[i].id, agentLabels(i), 0) == r.closing.Gen {
		return r.closing.Gen, r.closing.Nonce
	}
	return final.Gen, final.Nonce
}

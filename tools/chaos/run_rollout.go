package chaos

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// closingCanary leaves the run on an open rollout, so that the final
// check by labels covers that case too: after the final publish has
// converged, a canary of one zone (drawn from the seed) is started and
// the agents it selects are awaited on the candidate; the others must
// stay on the final generation (checked offline, checkFinalSelection).
// Then one agent on the candidate and one outside are restarted with the
// other zone: the first must stay on the candidate, the second move to it.
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
	var selected, outside []int
	for i, a := range r.agents {
		if selects(cn, a.id, a.labels()) {
			selected = append(selected, i)
		} else {
			outside = append(outside, i)
		}
	}
	if !r.awaitCandidate(ctx, rec, selected, "selected by the closing canary "+sel.Selector) || len(selected) == 0 || len(outside) == 0 {
		return rec
	}
	// Relabel two agents mid-rollout, each restarted with the other zone:
	// one on the candidate (it must stay there: never backwards) and one
	// outside (now selected, it must move to the candidate).
	for _, i := range []int{selected[0], outside[0]} {
		a := r.agents[i]
		a.stop(syscall.SIGTERM, r.cfg.Slack)
		a.relabelled = true
		if err := a.writeConfig(a.validConfig(), true); err != nil {
			r.violate(Violation{Property: "P8-selection", Agent: i, At: time.Now(), Msg: fmt.Sprintf("relabel %s: %v", a.id, err)})
			return rec
		}
		if err := a.start(); err != nil {
			r.violate(Violation{Property: "P8-selection", Agent: i, At: time.Now(), Msg: fmt.Sprintf("restart %s: %v", a.id, err)})
			return rec
		}
		r.log.add("run", "%s restarted with zone=%s (was %s), mid-rollout", a.id, a.labels()[zoneLabel], zoneOf(i))
	}
	r.relabelled = []int{selected[0], outside[0]}
	r.awaitCandidate(ctx, rec, r.relabelled, "relabelled mid-rollout (one must stay on the candidate, the other move to it)")
	return rec
}

// awaitCandidate waits until the agents show candidate rec in both
// outputs and in their (new) status nodes; a violation for each that does
// not within the bound. It reports whether all did.
func (r *runner) awaitCandidate(ctx context.Context, rec *pubRecord, agents []int, why string) bool {
	want := digest(rec.Items)
	deadline := time.Now().Add(r.cfg.Bound() + 60*time.Second)
	pending := map[int]bool{}
	for _, i := range agents {
		pending[i] = true
	}
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		for i := range pending {
			d, t := r.obs[i].latest(tDir), r.obs[i].latest(tTmpl)
			sg, ok := r.statusGen(r.agents[i])
			if ok && sg == rec.Gen && d != nil && t != nil && !d.Absent && t.Gen == rec.Gen && t.Nonce == rec.Nonce &&
				digest(obsSigs(d.Items)) == want {
				delete(pending, i)
				r.log.add("run", "%s (zone=%s) is on the candidate %d", r.agents[i].id, r.agents[i].labels()[zoneLabel], rec.Gen)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range pending {
		r.violate(Violation{Property: "P8-selection", Agent: i, At: time.Now(),
			Msg: fmt.Sprintf("%s (zone=%s), %s, never showed candidate generation %d: %s",
				r.agents[i].id, r.agents[i].labels()[zoneLabel], why, rec.Gen, r.describeOutputs(i))})
	}
	return len(pending) == 0
}

// finalFor checks agent i's final state against what its labels select
// in the final root (checkFinalSelection) and returns the generation and
// request nonce its last reload must be for: the closing canary's when it
// selects the agent, the final publish's otherwise.
func (r *runner) finalFor(i int, c *checker, view *zkView, final *pubRecord) (int64, string) {
	want := c.checkFinalSelection(view.inc, view.live, r.obs[i], r.agents[i].id, r.agents[i].labels(), time.Now())
	if r.closing != nil && view.live.Canary != nil && want == gkey(view.inc, r.closing.Gen) {
		return r.closing.Gen, r.closing.Nonce
	}
	return final.Gen, final.Nonce
}

// relabelledIDs names the agents closingCanary relabelled.
func (r *runner) relabelledIDs() []string {
	var out []string
	for _, i := range r.relabelled {
		out = append(out, r.agents[i].id)
	}
	return out
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// Rollout publish kinds: a canary start (the candidate generation), the
// ends of a rollout (a new generation carrying the candidate's or the
// stable content), a plain publish attempted during a rollout (it must be
// refused) and one that supersedes it.
const (
	kindCanary    = "canary"
	kindPromote   = "promote"
	kindAbort     = "abort"
	kindRefused   = "plain-during-rollout"
	kindSupersede = "supersede"
)

// Agents carry the label zone=a (even index) or zone=b (odd index).
const zoneLabel = "zone"

func zoneOf(idx int) string {
	if idx%2 == 0 {
		return "a"
	}
	return "b"
}

// agentLabels are the labels agent idx is first configured with
// (besides its id, which every selection also sees as the label "agent").
func agentLabels(idx int) map[string]string {
	return map[string]string{zoneLabel: zoneOf(idx)}
}

// labels are the agent's labels now.
func (a *agentProc) labels() map[string]string {
	if a.relabelled {
		return map[string]string{zoneLabel: zoneOf(a.idx + 1)}
	}
	return agentLabels(a.idx)
}

// rolloutStats counts the rollout steps the workload took.
type rolloutStats struct {
	Started, Widened, Promoted, Aborted, SupersededByPublish, SupersededByCanary int
	// RefusedPublishes are plain publishes attempted during a rollout and
	// refused with ErrRolloutInProgress; OtherFailures failed otherwise
	// (faults); Step errors are widen/promote/abort attempts that failed.
	RefusedPublishes, RefusedOther, StepErrors int
}

// rolloutStep runs one rollout operation when the root carries a rollout,
// or starts one now and then; it reports false when it did nothing (the
// caller then publishes as usual). The rollout state is read from the
// root each time: after a fault the outcome of the previous step may be
// unknown, and an ensemble wipe ends any rollout.
func (w *workload) rolloutStep() bool {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	rs, err := w.pub.Rollout(ctx)
	if err != nil {
		return w.rng.IntN(100) < 50 // a fault: skip a turn half the time
	}
	c := rs.Canary
	if c == nil {
		if w.rng.IntN(100) >= 12 {
			return false
		}
		w.startCanary(false)
		return true
	}
	switch r := w.rng.IntN(100); {
	case r < 25:
		w.plainDuringRollout(c.RolloutID)
	case r < 45 && c.Percent > 0 && c.Percent < 100:
		next := c.Selection
		next.Percent = min(100, c.Percent+float64(10+w.rng.IntN(40)))
		_, err := w.pub.Widen(ctx, c.RolloutID, next, "chaos widen")
		w.note("widen", c.RolloutID, err, "to %s", publish.DescribeSelection(next))
		w.mu.Lock()
		if err == nil {
			w.rstats.Widened++
		} else {
			w.rstats.StepErrors++
		}
		w.mu.Unlock()
	case r < 65:
		w.endRollout(kindPromote, c.RolloutID, c.Generation, rs.Stable.Generation)
	case r < 82:
		w.endRollout(kindAbort, c.RolloutID, c.Generation, rs.Stable.Generation)
	case r < 91:
		rec := w.publishKind(kindSupersede)
		if rec.Outcome == outAcked {
			w.mu.Lock()
			w.rstats.SupersededByPublish++
			w.mu.Unlock()
		}
	default:
		w.startCanary(true)
	}
	return true
}

// startCanary publishes the next set as a canary: by selector (one zone,
// or explicit agent ids), by percent, or both.
func (w *workload) startCanary(supersede bool) {
	var sel manifest.Selection
	switch w.rng.IntN(4) {
	case 0:
		sel.Selector = zoneLabel + "=" + zoneOf(w.rng.IntN(2))
	case 1:
		sel.Percent = float64(10 + w.rng.IntN(50))
	case 2:
		sel.Selector, sel.Percent = zoneLabel+" in (a,b)", float64(20+w.rng.IntN(40))
	default:
		sel.Selector = fmt.Sprintf("agent in (agent-%d,agent-%d)", w.rng.IntN(5), w.rng.IntN(5))
	}
	rec := w.publishWith(kindCanary, func(req *publish.Request) {
		req.Canary = &sel
		req.Supersede = supersede
	})
	rec.Selection = &sel
	if rec.Outcome == outAcked {
		w.mu.Lock()
		if supersede {
			w.rstats.SupersededByCanary++
		}
		w.rstats.Started++
		w.mu.Unlock()
	}
}

// plainDuringRollout attempts a plain publish while the root carries
// rollout id: it must be refused. The record keeps the rollout it saw, and
// the checker reports one that landed.
func (w *workload) plainDuringRollout(id string) {
	rec := w.publishWith(kindRefused, func(*publish.Request) {})
	rec.DuringRollout = id
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case errors.Is(rec.err, publish.ErrRolloutInProgress):
		w.rstats.RefusedPublishes++
	case rec.Outcome != outAcked:
		w.rstats.RefusedOther++
	}
}

// endRollout promotes or aborts rollout id (candidate generation cand,
// stable generation stable). The content the new generation must carry
// (the candidate's or the stable one's) is read first, for the record.
func (w *workload) endRollout(kind, id string, cand, stable int64) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	from := cand
	if kind == kindAbort {
		from = stable
	}
	items := w.contentOf(ctx, from)
	cancel()
	if items == nil {
		return // a fault: try another time
	}
	w.seq++
	rec := &pubRecord{Seq: w.seq, Kind: kind, Mode: manifest.ModeAuto, EndOf: cand, Items: sigs(items), Nonce: nonceOf(items)}
	w.do(rec, items, func(ctx context.Context) (*publish.Result, error) {
		req := publish.Request{Message: "chaos " + kind}
		if w.busyCount >= 2 {
			req.OverrideMarker = true
		}
		if kind == kindPromote {
			return w.pub.Promote(ctx, id, req)
		}
		return w.pub.Abort(ctx, id, req)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case rec.Outcome == outAcked && kind == kindPromote:
		w.rstats.Promoted++
	case rec.Outcome == outAcked:
		w.rstats.Aborted++
	default:
		w.rstats.StepErrors++
	}
	if rec.Outcome == outAcked {
		w.base = maps.Clone(items)
	}
}

// contentOf reads generation g's items back (for the next publish's base
// and rollbacks); nil when the read fails.
func (w *workload) contentOf(ctx context.Context, g int64) map[string][]byte {
	_, items, err := w.pub.Read(ctx, g)
	if err != nil {
		return nil
	}
	return items
}

func (w *workload) note(what, id string, err error, format string, args ...any) {
	if w.log == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		w.log.addAt(time.Now(), "publish", "rollout %s %s %s failed: %s", what, id, msg, oneLine(err.Error()))
		return
	}
	w.log.addAt(time.Now(), "publish", "rollout %s %s %s", what, id, msg)
}

// rollouts returns the rollout counts.
func (w *workload) rollouts() rolloutStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rstats
}

package rollout

import (
	"slices"
	"time"
)

// Verdicts of Evaluate.
const (
	// VerdictWait: keep baking (or waiting for agents to apply).
	VerdictWait = "wait"
	// VerdictPass: every expected selected agent applied the candidate
	// and stayed healthy for the bake time: promote (or widen to the
	// next step).
	VerdictPass = "pass"
	// VerdictFail: a canary agent rejected the candidate or reports a
	// failing check or reload on it: abort.
	VerdictFail = "fail"
)

// Health is the health of a canary rollout at one moment, as
// Evaluate judges it from Classify's result and the bake
// clock. It is what an automatic driver, watch and a dashboard show.
type Health struct {
	// Verdict is VerdictWait, VerdictPass or VerdictFail.
	Verdict string
	// Selected counts the expected agents the selection selects (plus
	// any agent already on the candidate's side).
	Selected int
	// Applied counts those that applied the candidate and are healthy.
	Applied int
	// Failing, Gone and Pending name the agents that fail on the
	// candidate, the expected selected agents without a trusted status
	// node, and those that have not applied it yet (sorted).
	Failing, Gone, Pending []string
	// HealthySince is when every selected agent was last seen healthy
	// without a break (zero when they are not all healthy now).
	HealthySince time.Time
	// BakeLeft is the bake time still to wait (0 unless Verdict is
	// VerdictWait with every agent healthy).
	BakeLeft time.Duration
}

// Evaluate judges a canary rollout: ras is Classify's result
// now, healthySince the HealthySince of the previous evaluation (zero at
// the start of a step), bake the bake time. One failing agent fails the
// rollout at once. It passes when at least one expected agent is selected
// and every expected selected agent (and every agent already on the
// candidate) has applied the candidate, ready and with no failing target,
// continuously since healthySince for at least bake: any agent unhealthy,
// pending or gone restarts the clock (a gone expected agent holds the
// promotion back until it returns or is forgotten).
func Evaluate(ras []Agent, healthySince, now time.Time, bake time.Duration) Health {
	var h Health
	for _, ra := range ras {
		switch {
		case ra.State == StateFailing:
			h.Failing = append(h.Failing, ra.ID)
			h.Selected++
		case ra.State == StateApplied:
			if ra.Selected || ra.Expected {
				h.Applied++
				h.Selected++
			}
		case !ra.Selected:
			// Gone agents are classified without knowing whether they
			// were selected only when no labels are known: a gone
			// agent the selection selects holds the rollout.
			if ra.State == StateCandidate {
				h.Pending = append(h.Pending, ra.ID)
				h.Selected++
			}
		case !ra.Expected && ra.State != StateCandidate:
		case ra.State == StateGone:
			h.Gone = append(h.Gone, ra.ID)
			h.Selected++
		default: // selected, candidate
			h.Pending = append(h.Pending, ra.ID)
			h.Selected++
		}
	}
	slices.Sort(h.Failing)
	slices.Sort(h.Gone)
	slices.Sort(h.Pending)
	switch {
	case len(h.Failing) > 0:
		h.Verdict = VerdictFail
		return h
	case h.Selected == 0 || h.Applied < h.Selected:
		h.Verdict = VerdictWait
		return h
	}
	h.HealthySince = healthySince
	if h.HealthySince.IsZero() || h.HealthySince.After(now) {
		h.HealthySince = now
	}
	if baked := now.Sub(h.HealthySince); baked < bake {
		h.Verdict, h.BakeLeft = VerdictWait, bake-baked
		return h
	}
	h.Verdict = VerdictPass
	return h
}

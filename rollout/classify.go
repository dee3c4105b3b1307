package rollout

import (
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
)

// States of an agent in a canary rollout (Agent.State).
const (
	// StateStable: on the stable generation (or older), not selected.
	StateStable = "stable"
	// StateCandidate: selected (or already above the stable generation)
	// but not yet reporting the candidate applied.
	StateCandidate = "candidate"
	// StateApplied: reports the candidate generation (or newer) applied,
	// ready and with no failing target.
	StateApplied = "applied"
	// StateFailing: reports the candidate rejected, or an error or a
	// failing target while on it. (Applied but not ready yet is
	// StateCandidate: still pending.)
	StateFailing = "failing"
	// StateGone: expected but without a trusted status node.
	StateGone = "gone"
)

// Agent is one agent's place in a canary rollout.
type Agent struct {
	ID string
	// Selected reports whether the canary's selection selects the agent,
	// judged by the labels of its trusted status node, else of its
	// registry node (labels are what the agent claims, never a security
	// boundary).
	Selected bool
	// Generation is the generation the agent reports (0 when unknown).
	Generation int64
	// State is one of StateStable, StateCandidate, StateApplied,
	// StateFailing, StateGone.
	State string
	// Expected is fleet.Agent.Expected: a gone expected agent holds an
	// automatic promotion back.
	Expected bool
	// Labels are the labels the selection was judged with.
	Labels map[string]string
}

// Classify places each agent of agents (as fleet.Fleet.List returns them) in
// the rollout c announces over the stable generation stable: selected or
// not, and its state. Only trusted status nodes count as applied; an
// agent reporting a generation above stable in the root's incarnation
// (inc) is on the candidate's side even when no longer selected, as the
// agents judge it (manifest.Manifest.Follows).
func Classify(agents []fleet.Agent, stable int64, inc string, c *manifest.Canary) []Agent {
	out := make([]Agent, 0, len(agents))
	for _, a := range agents {
		labels := a.Labels()
		ra := Agent{ID: a.ID, Expected: a.Expected, Labels: labels}
		if c != nil {
			ra.Selected = c.Selects(a.ID, labels)
		}
		if a.Trusted() {
			ra.Generation = a.Status.Generation
		}
		onCandidate := c != nil && a.Trusted() && a.Status.Generation > stable &&
			(inc == "" || a.Status.Incarnation == "" || a.Status.Incarnation == inc)
		switch {
		case !a.Trusted():
			if a.Expected {
				ra.State = StateGone
			} else {
				continue
			}
		case c == nil:
			ra.State = StateStable
		case a.Rejected(c.Generation) || onCandidate && a.Status.Failing():
			ra.State = StateFailing
		case onCandidate && a.AppliedIn(c.Generation, inc) && a.Status.Ready:
			ra.State = StateApplied
		case ra.Selected || onCandidate:
			ra.State = StateCandidate
		default:
			ra.State = StateStable
		}
		out = append(out, ra)
	}
	return out
}

package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// What a rollout's driver is (View.Driver).
const (
	// DriverAlive: its liveness node exists.
	DriverAlive = "alive"
	// DriverGone: the rollout was started with a driver (a plan: --auto,
	// --steps or a bake time) whose liveness node is gone: its process
	// died, promote or abort the rollout by hand.
	DriverGone = "gone"
	// DriverNone: the rollout is driven by hand.
	DriverNone = "none"
)

// View is a root's rollout as `confpush rollout status` and the
// dashboard show it: the rollout in progress (Canary, nil when none),
// where each agent is in it and why, and the progress of each step.
type View struct {
	// State is the rollout as publish.Publisher.Rollout read it.
	State *publish.RolloutState
	// Record is State.Record when it is this rollout's (nil when there is
	// none, or it is a previous rollout's, or not written yet).
	Record *publish.RolloutRecord
	// Driver is DriverAlive, DriverGone or DriverNone.
	Driver string
	// Agents are the agents in the rollout (Classify), in id order.
	Agents []Agent
	// Reasons say why each failing or gone agent is so (by agent id): the
	// candidate's rejection, the failing target or the agent's error; a
	// gone agent's missing or untrusted status node.
	Reasons map[string]string
	// Counts is how many agents are in each state.
	Counts map[string]int
	// Steps are the selections the rollout went through (start, each
	// widen; the last is current) and the planned ones still ahead.
	Steps []StepProgress
	// Outside counts the agents the current selection does not select.
	Outside OutsideProgress
}

// StepProgress is one step of a rollout: the agents its selection
// selects and where they are.
type StepProgress struct {
	Selector  string  `json:"selector,omitempty"`
	Percent   float64 `json:"percent,omitempty"`
	Selection string  `json:"selection"`
	// Current marks the step in progress; Planned a step of the driver's
	// plan not reached yet (its agents are still on stable).
	Current bool `json:"current,omitempty"`
	Planned bool `json:"planned,omitempty"`
	Agents  int  `json:"agents"`
	Applied int  `json:"applied"`
	Pending int  `json:"pending"`
	Failing int  `json:"failing"`
	Gone    int  `json:"gone"`
}

// OutsideProgress counts the agents outside the current selection: on
// stable, or still on the candidate's side (selected by an earlier
// labelling, which never goes back).
type OutsideProgress struct {
	Agents      int `json:"agents"`
	Stable      int `json:"stable"`
	OnCandidate int `json:"on_candidate"`
}

// Read reads the rollout of pub's root and places fl's agents in it. A
// root never published has no rollout.
func Read(ctx context.Context, pub *publish.Publisher, fl *fleet.Fleet) (*View, error) {
	rs, err := pub.Rollout(ctx)
	if errors.Is(err, publish.ErrNotPublished) {
		rs, err = &publish.RolloutState{Root: pub.Root(), Stable: &manifest.Manifest{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var agents []fleet.Agent
	if rs.Canary != nil {
		if agents, err = fl.List(ctx); err != nil {
			return nil, err
		}
	}
	return NewView(rs, agents), nil
}

// NewView places agents (as fleet.Fleet.List returns them) in the rollout
// rs describes.
func NewView(rs *publish.RolloutState, agents []fleet.Agent) *View {
	v := &View{State: rs, Driver: DriverNone, Reasons: map[string]string{}, Counts: map[string]int{}}
	c := rs.Canary
	if c == nil {
		return v
	}
	if rec := rs.Record; rec != nil && rec.RolloutID == c.RolloutID {
		v.Record = rec
	}
	switch {
	case rs.DriverAlive:
		v.Driver = DriverAlive
	case v.Record != nil && (v.Record.Auto || len(v.Record.Steps) > 0 || v.Record.Bake != ""):
		v.Driver = DriverGone
	}
	v.Agents = Classify(agents, rs.Stable.Generation, rs.Stable.Incarnation, c)
	v.Reasons = reasons(agents, v.Agents, c.Generation)
	v.Steps = steps(v.Record, c.Selection)
	for _, ra := range v.Agents {
		v.Counts[ra.State]++
		if !ra.Selected {
			v.Outside.Agents++
			if ra.State == StateStable {
				v.Outside.Stable++
			} else {
				v.Outside.OnCandidate++
			}
		}
		for i := range v.Steps {
			st := &v.Steps[i]
			if st.Current {
				if !ra.Selected {
					continue
				}
			} else if !(manifest.Selection{Selector: st.Selector, Percent: st.Percent}).Selects(ra.ID, ra.Labels) {
				continue
			}
			st.Agents++
			if st.Planned {
				continue // its agents are not selected yet
			}
			switch ra.State {
			case StateApplied:
				st.Applied++
			case StateFailing:
				st.Failing++
			case StateGone:
				st.Gone++
			default:
				st.Pending++
			}
		}
	}
	return v
}

// steps are the selections of the start and of each widen the record
// holds, the current one (cur) last, then the plan's percents above it.
func steps(rec *publish.RolloutRecord, cur manifest.Selection) []StepProgress {
	var sels []manifest.Selection
	if rec != nil {
		for _, ev := range rec.Events {
			if (ev.Kind == publish.EventStart || ev.Kind == publish.EventWiden) && ev.Selection != nil &&
				(len(sels) == 0 || sels[len(sels)-1] != *ev.Selection) {
				sels = append(sels, *ev.Selection)
			}
		}
	}
	if len(sels) == 0 || sels[len(sels)-1] != cur {
		sels = append(sels, cur)
	}
	out := make([]StepProgress, 0, len(sels))
	for i, sel := range sels {
		out = append(out, StepProgress{Selector: sel.Selector, Percent: sel.Percent,
			Selection: publish.DescribeSelection(sel), Current: i == len(sels)-1})
	}
	if rec == nil || cur.Percent == 0 {
		return out
	}
	for _, pct := range rec.Steps {
		if pct > cur.Percent && pct <= 100 {
			sel := manifest.Selection{Selector: cur.Selector, Percent: pct}
			out = append(out, StepProgress{Selector: sel.Selector, Percent: pct, Selection: publish.DescribeSelection(sel), Planned: true})
		}
	}
	return out
}

// reasons says why each failing or gone agent of ras is so.
func reasons(agents []fleet.Agent, ras []Agent, candidate int64) map[string]string {
	byID := make(map[string]fleet.Agent, len(agents))
	for _, ag := range agents {
		byID[ag.ID] = ag
	}
	out := map[string]string{}
	for _, ra := range ras {
		ag := byID[ra.ID]
		switch ra.State {
		case StateFailing:
			why := ag.Status.Failure()
			if ag.Rejected(candidate) {
				why = fmt.Sprintf("rejected generation %d: %s", ag.Status.Attempted, ag.Status.LastError)
			}
			out[ra.ID] = why
		case StateGone:
			switch {
			case ag.Err != nil:
				out[ra.ID] = "status node unreadable: " + ag.Err.Error()
			case ag.Untrusted != "":
				out[ra.ID] = "status node untrusted: " + ag.Untrusted
			case ag.Registration != nil && !ag.Registration.LastSeen.IsZero():
				out[ra.ID] = "no status node (last seen " + time.Since(ag.Registration.LastSeen).Round(time.Second).String() + " ago)"
			case ag.Registration != nil:
				out[ra.ID] = "no status node (last seen -)"
			default:
				out[ra.ID] = "no status node"
			}
		}
	}
	return out
}

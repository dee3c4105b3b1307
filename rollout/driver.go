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

// Outcomes of Drive.
const (
	// OutcomePromoted: every step baked and the driver promoted.
	OutcomePromoted = "promoted"
	// OutcomeAborted: a canary agent failed and the driver aborted.
	OutcomeAborted = "aborted"
)

// ErrEnded means the rollout a driver follows was ended (promoted,
// aborted or superseded) by someone else: the driver stops without acting.
var ErrEnded = errors.New("the rollout was ended elsewhere")

// Plan is what Drive does with a rollout.
type Plan struct {
	// RolloutID is the rollout to drive (its canary must be in the root).
	RolloutID string
	// Selector is the rollout's selector, kept by every widening step.
	Selector string
	// Steps are the percents to bake at, in order; the first is the
	// selection the rollout started with. Empty: one step, the rollout's
	// selection as it is.
	Steps []float64
	// Bake is how long every selected agent must stay healthy at each
	// step.
	Bake time.Duration
	// Safety bounds the time between two evaluations when no watch fires
	// (a lost watch event); 0 means 30 s. Watches, not this interval,
	// drive the rollout.
	Safety time.Duration
	// Fence, when set, is the node whose existence every commit of the
	// driver requires (a watch leader's election node).
	Fence string
	// Message is recorded with the driver's widen, promote and abort.
	Message string
	// AllowOldAgents is the promote's and abort's
	// Request.AllowOldAgents (a rollout of a tree started despite older
	// agents promotes despite them too).
	AllowOldAgents bool
	// Progress, when set, is called with every evaluation whose summary
	// differs from the previous one and with every action.
	Progress func(Event)
}

// Event is one line of a driver's progress.
type Event struct {
	At time.Time `json:"at"`
	// Kind is "progress", "widen", "promote" or "abort".
	Kind string `json:"kind"`
	// Step is the step's index (0-based) and Percent its percent (0: the
	// selector alone).
	Step    int     `json:"step"`
	Percent float64 `json:"percent,omitempty"`
	// Health is the evaluation the event is about.
	Health Health `json:"-"`
	// Generation is the generation the action published (widen: the
	// candidate's).
	Generation int64 `json:"generation,omitempty"`
	// Reason explains an action (abort: the failing agents).
	Reason string `json:"reason,omitempty"`
}

// Result is how a driven rollout ended.
type Result struct {
	// Outcome is OutcomePromoted or OutcomeAborted.
	Outcome string
	// Generation is the generation the promote or abort published.
	Generation int64
	// Failing names the agents that made the driver abort.
	Failing []string
	// Events are the driver's actions, in order.
	Events []Event
}

// Drive drives rollout plan.RolloutID of pub's root to its end: it holds
// the driver's liveness node (publish.Publisher.HoldDriver) while it runs,
// follows fl, the root's fleet, through watches (fleet.Fleet.Changes) and
// judges it with Evaluate: it aborts as soon as one canary agent fails on
// the candidate, widens to the next step or promotes once every expected
// selected agent stayed healthy for plan.Bake. Every action is one of
// pub's compare-and-swaps expecting the rollout: when someone else ended
// it, Drive returns an error wrapping ErrEnded. When ctx ends it returns
// ctx.Err() and leaves the rollout as it is (anyone can promote or abort
// it).
func Drive(ctx context.Context, pub *publish.Publisher, fl *fleet.Fleet, plan Plan) (*Result, error) {
	if plan.RolloutID == "" {
		return nil, &publish.InputError{Err: errors.New("no rollout id to drive")}
	}
	if plan.Safety <= 0 {
		plan.Safety = 30 * time.Second
	}
	lease, err := pub.HoldDriver(ctx, plan.RolloutID)
	if err != nil {
		return nil, err
	}
	defer lease.Release(ctx)
	d := driver{pub: pub, plan: plan}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake := make(chan struct{}, 1)
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- fl.Changes(ctx, func() error {
			select {
			case wake <- struct{}{}:
			default:
			}
			return nil
		})
	}()

	res := &Result{}
	step := 0
	var since time.Time
	last := ""
	timer := time.NewTimer(plan.Safety)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case err := <-watchErr:
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("follow the fleet of %s: %w", pub.Root(), err)
		case <-wake:
		case <-timer.C:
		}
		m, _, err := pub.Current(ctx)
		if err != nil {
			return res, err
		}
		if m.Canary == nil || m.Canary.RolloutID != plan.RolloutID {
			return res, d.endedElsewhere(m)
		}
		// The driver node goes with an expired session: hold it again so
		// rollout status does not report a running driver as gone.
		lease.Keep(ctx)
		agents, err := fl.List(ctx)
		if err != nil {
			return res, err
		}
		now := time.Now()
		h := Evaluate(Classify(agents, m.Generation, m.Incarnation, m.Canary), since, now, plan.Bake)
		since = h.HealthySince
		percent := m.Canary.Percent
		ev := Event{At: now.UTC(), Kind: "progress", Step: step, Percent: percent, Health: h}
		if sum := fmt.Sprintf("%d %s %d/%d %v %v %v %v", step, h.Verdict, h.Applied, h.Selected, h.Failing, h.Gone, h.Pending, h.HealthySince); sum != last {
			last = sum
			d.progress(ev)
		}
		next := plan.Safety
		switch h.Verdict {
		case VerdictFail:
			r, err := pub.Abort(ctx, plan.RolloutID, publish.Request{Fence: plan.Fence, AllowOldAgents: plan.AllowOldAgents, Message: driverMessage(plan.Message,
				fmt.Sprintf("automatic abort: %v failing on the candidate", h.Failing))})
			if err != nil {
				return res, d.actionFailed(ctx, "abort", err)
			}
			res.Outcome, res.Generation, res.Failing = OutcomeAborted, r.Generation, h.Failing
			d.record(res, Event{At: time.Now().UTC(), Kind: publish.EventAbort, Step: step, Percent: percent,
				Health: h, Generation: r.Generation, Reason: fmt.Sprintf("failing: %v", h.Failing)})
			return res, nil
		case VerdictPass:
			// Steps an operator already widened past (rollout widen
			// from elsewhere) are skipped: a rollout only widens.
			for step+1 < len(plan.Steps) && !wider(m.Canary.Selection, plan.Steps[step+1]) {
				step++
			}
			if step+1 < len(plan.Steps) {
				step++
				sel := Step(plan.Selector, plan.Steps[step])
				if plan.Fence != "" {
					if err := pub.CheckFence(ctx, plan.Fence); err != nil {
						return res, err
					}
				}
				r, err := pub.Widen(ctx, plan.RolloutID, sel, plan.Message)
				if err != nil {
					return res, d.actionFailed(ctx, "widen", err)
				}
				since, last, next = time.Time{}, "", 0
				d.record(res, Event{At: time.Now().UTC(), Kind: publish.EventWiden, Step: step, Percent: sel.Percent,
					Health: h, Generation: r.Generation})
				break
			}
			r, err := pub.Promote(ctx, plan.RolloutID, publish.Request{Fence: plan.Fence, AllowOldAgents: plan.AllowOldAgents,
				Message: driverMessage(plan.Message, "automatic promote after the bake")})
			if err != nil {
				return res, d.actionFailed(ctx, "promote", err)
			}
			res.Outcome, res.Generation = OutcomePromoted, r.Generation
			d.record(res, Event{At: time.Now().UTC(), Kind: publish.EventPromote, Step: step, Percent: percent,
				Health: h, Generation: r.Generation})
			return res, nil
		default:
			if h.BakeLeft > 0 && h.BakeLeft < next {
				next = h.BakeLeft
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// driver is what Drive's helpers share.
type driver struct {
	pub  *publish.Publisher
	plan Plan
}

func (d driver) progress(ev Event) {
	if d.plan.Progress != nil {
		d.plan.Progress(ev)
	}
}

func (d driver) record(res *Result, ev Event) {
	res.Events = append(res.Events, ev)
	d.progress(ev)
}

// endedElsewhere describes a rollout someone else ended.
func (d driver) endedElsewhere(m *manifest.Manifest) error {
	now := fmt.Sprintf("generation %d is live", m.Generation)
	if m.Canary != nil {
		now = "rollout " + m.Canary.RolloutID + " replaced it"
	}
	return fmt.Errorf("%w: rollout %s of %s was promoted, aborted or superseded by someone else (%s); the driver stops",
		ErrEnded, d.plan.RolloutID, d.pub.Root(), now)
}

// actionFailed turns a lost compare-and-swap into ErrEnded.
func (d driver) actionFailed(ctx context.Context, action string, err error) error {
	var rc *publish.RolloutConflictError
	if errors.As(err, &rc) || errors.Is(err, publish.ErrConflict) {
		if m, _, rerr := d.pub.Current(ctx); rerr == nil && (m.Canary == nil || m.Canary.RolloutID != d.plan.RolloutID) {
			return d.endedElsewhere(m)
		}
	}
	return fmt.Errorf("automatic %s of rollout %s: %w", action, d.plan.RolloutID, err)
}

func driverMessage(operator, auto string) string {
	if operator == "" {
		return auto
	}
	return operator + " (" + auto + ")"
}

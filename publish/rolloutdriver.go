package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
)

// Outcomes of DriveRollout.
const (
	// OutcomePromoted: every step baked and the driver promoted.
	OutcomePromoted = "promoted"
	// OutcomeAborted: a canary agent failed and the driver aborted.
	OutcomeAborted = "aborted"
)

// ErrRolloutEnded means the rollout a driver follows was ended (promoted,
// aborted or superseded) by someone else: the driver stops without acting.
var ErrRolloutEnded = errors.New("the rollout was ended elsewhere")

// DriverPlan is what DriveRollout does with a rollout.
type DriverPlan struct {
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
	Progress func(DriverEvent)
}

// DriverEvent is one line of a driver's progress.
type DriverEvent struct {
	At time.Time `json:"at"`
	// Kind is "progress", "widen", "promote" or "abort".
	Kind string `json:"kind"`
	// Step is the step's index (0-based) and Percent its percent (0: the
	// selector alone).
	Step    int     `json:"step"`
	Percent float64 `json:"percent,omitempty"`
	// Health is the evaluation the event is about.
	Health fleet.CanaryHealth `json:"-"`
	// Generation is the generation the action published (widen: the
	// candidate's).
	Generation int64 `json:"generation,omitempty"`
	// Reason explains an action (abort: the failing agents).
	Reason string `json:"reason,omitempty"`
}

// DriverResult is how a driven rollout ended.
type DriverResult struct {
	// Outcome is OutcomePromoted or OutcomeAborted.
	Outcome string
	// Generation is the generation the promote or abort published.
	Generation int64
	// Failing names the agents that made the driver abort.
	Failing []string
	// Events are the driver's actions, in order.
	Events []DriverEvent
}

// DriveRollout drives rollout plan.RolloutID to its end: it holds the
// ephemeral driver node (rollout-driver/<rollout id>) while it runs,
// follows the fleet through watches (fleet.Fleet.Changes) and judges it with
// fleet.EvaluateCanary: it aborts as soon as one canary agent fails on the
// candidate, widens to the next step or promotes once every expected
// selected agent stayed healthy for plan.Bake. Every action is a
// compare-and-swap expecting the rollout: when someone else ended it, it
// returns an error wrapping ErrRolloutEnded. When ctx ends it returns
// ctx.Err() and leaves the rollout as it is (anyone can promote or abort
// it).
func (p *Publisher) DriveRollout(ctx context.Context, plan DriverPlan) (*DriverResult, error) {
	if plan.RolloutID == "" {
		return nil, &InputError{Err: errors.New("no rollout id to drive")}
	}
	if plan.Safety <= 0 {
		plan.Safety = 30 * time.Second
	}
	fl, err := fleet.New(p.cl, p.paths.Root, fleet.WithMeta(p.paths.Meta))
	if err != nil {
		return nil, err
	}
	node, acl, err := p.holdDriver(ctx, plan.RolloutID)
	if err != nil {
		return nil, err
	}
	defer p.dropLiveness(ctx, node)

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

	res := &DriverResult{}
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
			return res, fmt.Errorf("follow the fleet of %s: %w", p.paths.Root, err)
		case <-wake:
		case <-timer.C:
		}
		m, _, err := p.Current(ctx)
		if err != nil {
			return res, err
		}
		if m.Canary == nil || m.Canary.RolloutID != plan.RolloutID {
			return res, p.endedElsewhere(plan.RolloutID, m)
		}
		// The driver node goes with an expired session: hold it again so
		// rollout status does not report a running driver as gone.
		if st, err := p.exists(ctx, node); err == nil && st == nil {
			if err := p.createLiveness(ctx, node, []byte(p.cfg.name), acl); err != nil {
				p.log.Warn("could not recreate the rollout driver node", "path", node, "error", err)
			}
		}
		agents, err := fl.List(ctx)
		if err != nil {
			return res, err
		}
		now := time.Now()
		h := fleet.EvaluateCanary(fleet.ClassifyRollout(agents, m.Generation, m.Incarnation, m.Canary), since, now, plan.Bake)
		since = h.HealthySince
		percent := m.Canary.Percent
		ev := DriverEvent{At: now.UTC(), Kind: "progress", Step: step, Percent: percent, Health: h}
		if sum := fmt.Sprintf("%d %s %d/%d %v %v %v %v", step, h.Verdict, h.Applied, h.Selected, h.Failing, h.Gone, h.Pending, h.HealthySince); sum != last {
			last = sum
			p.progress(plan, ev)
		}
		next := plan.Safety
		switch h.Verdict {
		case fleet.VerdictFail:
			r, err := p.Abort(ctx, plan.RolloutID, Request{Fence: plan.Fence, AllowOldAgents: plan.AllowOldAgents, Message: driverMessage(plan.Message,
				fmt.Sprintf("automatic abort: %v failing on the candidate", h.Failing))})
			if err != nil {
				return res, p.actionFailed(ctx, plan.RolloutID, "abort", err)
			}
			res.Outcome, res.Generation, res.Failing = OutcomeAborted, r.Generation, h.Failing
			p.record(plan, res, DriverEvent{At: time.Now().UTC(), Kind: EventAbort, Step: step, Percent: percent,
				Health: h, Generation: r.Generation, Reason: fmt.Sprintf("failing: %v", h.Failing)})
			return res, nil
		case fleet.VerdictPass:
			// Steps an operator already widened past (rollout widen
			// from elsewhere) are skipped: a rollout only widens.
			for step+1 < len(plan.Steps) && !wider(m.Canary.Selection, plan.Steps[step+1]) {
				step++
			}
			if step+1 < len(plan.Steps) {
				step++
				sel := manifest.Selection{Selector: plan.Selector, Percent: plan.Steps[step]}
				if sel.Percent >= 100 && sel.Selector != "" {
					sel.Percent = 0
				}
				if plan.Fence != "" {
					if err := p.checkFence(ctx, plan.Fence); err != nil {
						return res, err
					}
				}
				r, err := p.Widen(ctx, plan.RolloutID, sel, plan.Message)
				if err != nil {
					return res, p.actionFailed(ctx, plan.RolloutID, "widen", err)
				}
				since, last, next = time.Time{}, "", 0
				p.record(plan, res, DriverEvent{At: time.Now().UTC(), Kind: EventWiden, Step: step, Percent: sel.Percent,
					Health: h, Generation: r.Generation})
				break
			}
			r, err := p.Promote(ctx, plan.RolloutID, Request{Fence: plan.Fence, AllowOldAgents: plan.AllowOldAgents,
				Message: driverMessage(plan.Message, "automatic promote after the bake")})
			if err != nil {
				return res, p.actionFailed(ctx, plan.RolloutID, "promote", err)
			}
			res.Outcome, res.Generation = OutcomePromoted, r.Generation
			p.record(plan, res, DriverEvent{At: time.Now().UTC(), Kind: EventPromote, Step: step, Percent: percent,
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

// holdDriver creates the driver's ephemeral liveness node, with the ACL of
// the rollout record (publishers only), and returns it and that ACL.
func (p *Publisher) holdDriver(ctx context.Context, rolloutID string) (string, []zk.ACL, error) {
	acl, _, err := p.conn().GetACL(p.paths.Rollout())
	if err != nil {
		return "", nil, fmt.Errorf("read the ACL of the rollout record %s: %w", p.paths.Rollout(), err)
	}
	if err := p.ensurePath(ctx, p.paths.RolloutDriver(), acl); err != nil {
		return "", nil, err
	}
	node := p.paths.RolloutDriver() + "/" + rolloutID
	return node, acl, p.createLiveness(ctx, node, []byte(p.cfg.name), acl)
}

func (p *Publisher) progress(plan DriverPlan, ev DriverEvent) {
	if plan.Progress != nil {
		plan.Progress(ev)
	}
}

func (p *Publisher) record(plan DriverPlan, res *DriverResult, ev DriverEvent) {
	res.Events = append(res.Events, ev)
	p.progress(plan, ev)
}

// endedElsewhere describes a rollout someone else ended.
func (p *Publisher) endedElsewhere(id string, m *manifest.Manifest) error {
	now := fmt.Sprintf("generation %d is live", m.Generation)
	if m.Canary != nil {
		now = "rollout " + m.Canary.RolloutID + " replaced it"
	}
	return fmt.Errorf("%w: rollout %s of %s was promoted, aborted or superseded by someone else (%s); the driver stops",
		ErrRolloutEnded, id, p.paths.Root, now)
}

// actionFailed turns a lost compare-and-swap into ErrRolloutEnded.
func (p *Publisher) actionFailed(ctx context.Context, id, action string, err error) error {
	var rc *RolloutConflictError
	if errors.As(err, &rc) || errors.Is(err, ErrConflict) {
		if m, _, rerr := p.Current(ctx); rerr == nil && (m.Canary == nil || m.Canary.RolloutID != id) {
			return p.endedElsewhere(id, m)
		}
	}
	return fmt.Errorf("automatic %s of rollout %s: %w", action, id, err)
}

func driverMessage(operator, auto string) string {
	if operator == "" {
		return auto
	}
	return operator + " (" + auto + ")"
}

// wider reports whether percent widens the selection cur (a selection
// without a percent already selects all its selector selects).
func wider(cur manifest.Selection, percent float64) bool {
	return cur.Percent > 0 && percent > cur.Percent
}

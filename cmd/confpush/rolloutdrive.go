package main

import (
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// exitAborted is the exit code of a rollout the driver aborted.
const exitAborted = 9

// driverFlags registers the driver's flags on publish.
func driverFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("auto", false, "canary: drive the rollout: abort as soon as a canary agent fails on the candidate, promote once every selected agent stayed healthy for --bake")
	f.Duration("bake", 5*time.Minute, "canary with --auto or --steps: how long every selected agent must stay healthy at each step")
	f.String("steps", "", "canary: percents to widen to, each baked (1%,10%,50%), then promote; implies --auto")
}

// driverPlan reads the driver's flags (a nil plan when not driving) and
// returns the canary selection set to the first step (--steps alone is a
// canary by percent).
func (a *app) driverPlan(sel *manifest.Selection) (*manifest.Selection, *publish.RolloutPlan, error) {
	steps := strings.TrimSpace(a.v.GetString("steps"))
	auto := a.v.GetBool("auto") || steps != ""
	if !auto {
		return sel, nil, nil
	}
	var errs []error
	if sel == nil && steps == "" {
		errs = append(errs, errors.New("--auto and --steps drive a canary: give --canary, --canary-percent or --canary-agents"))
	}
	bake := a.v.GetDuration("bake")
	if bake < 0 {
		errs = append(errs, errors.New("--bake must not be negative"))
	}
	var pcts []float64
	if steps != "" {
		if sel != nil && sel.Percent != 0 {
			errs = append(errs, errors.New("--steps sets the percents: drop --canary-percent"))
		}
		prev := 0.0
		for _, s := range strings.Split(steps, ",") {
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("--steps: %q is not a percent", s))
			case v <= 0 || v > 100:
				errs = append(errs, fmt.Errorf("--steps: %v%% is outside (0, 100]", v))
			case v <= prev:
				errs = append(errs, fmt.Errorf("--steps: %v%% does not grow (a rollout only widens)", v))
			default:
				pcts = append(pcts, v)
				prev = v
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, usageError{errlist.Join(errs...)}
	}
	if len(pcts) > 0 {
		if sel == nil {
			sel = &manifest.Selection{}
		}
		sel.Percent = pcts[0]
		if err := sel.Validate(); err != nil {
			return nil, nil, usageError{fmt.Errorf("--steps: %w", err)}
		}
	}
	return sel, &publish.RolloutPlan{Steps: pcts, Bake: bake, Auto: true}, nil
}

// autoAbortedError reports a rollout the driver aborted (exit 9).
type autoAbortedError struct {
	id      string
	gen     int64
	failing []string
}

func (e autoAbortedError) Error() string {
	return fmt.Sprintf("rollout %s aborted automatically: %s failing on the candidate; generation %d carries the stable content",
		e.id, strings.Join(e.failing, ", "), e.gen)
}

// drive runs the rollout driver after publish --canary --auto started
// rollout res; the result object is printed once, at the end, with the
// driver's steps and outcome.
func (a *app) drive(cmd *cobra.Command, p *publish.Publisher, res *publish.Result, sel manifest.Selection, rp *publish.RolloutPlan, msg string) error {
	if res.DryRun {
		a.reportResult(p.Root(), res, 0)
		return nil
	}
	a.holdJSON = a.json()
	a.reportResult(p.Root(), res, 0)
	a.holdJSON = false
	held := a.held
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rs, err := p.Rollout(ctx)
	if err != nil {
		return err
	}
	if rs.Canary == nil || rs.Canary.Generation != res.Generation {
		return fmt.Errorf("%w: the rollout of generation %d is no longer in progress on %s", publish.ErrRolloutEnded, res.Generation, p.Root())
	}
	rolloutID := rs.Canary.RolloutID
	steps := rp.Steps
	nSteps := max(len(steps), 1)
	fmt.Fprintf(a.stderr, "driving rollout %s: %d step(s), bake %v each (ctrl-C leaves it as it is)\n", rolloutID, nSteps, rp.Bake)
	plan := publish.DriverPlan{RolloutID: rolloutID, Selector: sel.Selector, Steps: steps, Bake: rp.Bake, Message: msg,
		AllowOldAgents: a.v.GetBool("allow-old-agents"),
		Progress:       func(ev publish.DriverEvent) { driverLine(a.stderr, ev, nSteps) }}
	dr, err := p.DriveRollout(ctx, plan)
	if held != nil && dr != nil {
		events := make([]map[string]any, 0, len(dr.Events))
		for _, ev := range dr.Events {
			events = append(events, map[string]any{"at": ev.At, "kind": ev.Kind, "step": ev.Step + 1,
				"percent": ev.Percent, "generation": ev.Generation, "reason": ev.Reason})
		}
		held["driver"] = map[string]any{"rollout_id": rolloutID, "outcome": dr.Outcome, "generation": dr.Generation,
			"failing": nonNil(dr.Failing), "steps": events}
	}
	switch {
	case err != nil && ctx.Err() != nil && cmd.Context().Err() == nil:
		fmt.Fprintf(a.stderr, "interrupted: rollout %s is left as it is; finish it with\n  confpush --root %s rollout promote --rollout %s\n  confpush --root %s rollout abort --rollout %s\n",
			rolloutID, p.Root(), rolloutID, p.Root(), rolloutID)
		return drivenError{fmt.Errorf("interrupted: rollout %s left in progress (promote or abort it)", rolloutID), held}
	case err != nil:
		return drivenError{err, held}
	case dr.Outcome == publish.OutcomeAborted:
		return drivenError{autoAbortedError{id: rolloutID, gen: dr.Generation, failing: dr.Failing}, held}
	}
	if held != nil {
		a.writeJSON(held)
	} else {
		fmt.Fprintf(a.stdout, "promoted rollout %s: generation %d is live for every agent\n", rolloutID, dr.Generation)
	}
	return nil
}

// drivenError is a driver's failure; with --json the failure object
// carries the publish result (with its driver) as "published".
type drivenError struct {
	err       error
	published map[string]any
}

func (e drivenError) Error() string { return e.err.Error() }
func (e drivenError) Unwrap() error { return e.err }

// driverLine prints one line of the driver's progress.
func driverLine(w io.Writer, ev publish.DriverEvent, nSteps int) {
	h := ev.Health
	sel := "the selection"
	if ev.Percent > 0 {
		sel = strconv.FormatFloat(ev.Percent, 'f', -1, 64) + "%"
	}
	switch ev.Kind {
	case publish.EventWiden:
		fmt.Fprintf(w, "step %d/%d: widened to %s\n", ev.Step+1, nSteps, sel)
	case publish.EventPromote:
		fmt.Fprintf(w, "step %d/%d: baked; promoted as generation %d\n", ev.Step+1, nSteps, ev.Generation)
	case publish.EventAbort:
		fmt.Fprintf(w, "step %d/%d: %s; aborted as generation %d\n", ev.Step+1, nSteps, ev.Reason, ev.Generation)
	default:
		state := "waiting"
		switch {
		case h.Verdict == fleet.VerdictFail:
			state = fmt.Sprintf("failing: %v", h.Failing)
		case !h.HealthySince.IsZero():
			state = fmt.Sprintf("healthy since %s, bake left %v", h.HealthySince.UTC().Format(time.TimeOnly), h.BakeLeft.Round(time.Second))
		case len(h.Gone) > 0:
			state = fmt.Sprintf("waiting (gone: %v)", h.Gone)
		case len(h.Pending) > 0:
			state = fmt.Sprintf("waiting (pending: %v)", h.Pending)
		}
		fmt.Fprintf(w, "step %d/%d (%s): %d/%d applied, %s\n", ev.Step+1, nSteps, sel, h.Applied, h.Selected, state)
	}
}

package agent

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A template target's render has a time and a step budget (TargetSpec's
// RenderTimeout and RenderSteps): a render over budget fails like any
// template error and rejects its generation, and the agent goes on. The
// budget is checked between steps (internal/template), so it cannot stop a
// single helper call that never returns. What is left is watched here: a
// render still running defaultWedgeGrace after its time budget ran out is
// wedged, and then /healthz and /readyz fail, the systemd watchdog is no
// longer pinged (systemd restarts the agent) and a shutdown does not wait
// for it.

// defaultWedgeGrace is how long a render may run past its time budget
// before the agent counts itself wedged. The budget is checked at every
// step, so a render that overruns it by this much is stuck in one helper
// call.
const defaultWedgeGrace = 30 * time.Second

// defaultShutdownGrace is how long a stopping daemon waits for a render in
// progress to end (it is interrupted at its next step) before it exits
// without it: nothing of the generation being rendered is in place yet.
const defaultShutdownGrace = 5 * time.Second

// wedgeCheckInterval is how often a daemon waiting for an apply looks for
// a wedged render, to report it.
const wedgeCheckInterval = time.Second

// renderWatch records the template renders in flight.
type renderWatch struct {
	mu      sync.Mutex
	running map[*target]renderRun
}

// renderRun is one render in flight.
type renderRun struct {
	generation int64
	start      time.Time
	budget     time.Duration
}

func newRenderWatch() *renderWatch {
	return &renderWatch{running: make(map[*target]renderRun)}
}

// begin records that t started rendering generation gen and returns what
// records its end. Renders of one target never overlap: they happen under
// the renderer's lock. A target compiled outside a Renderer has no watch.
func (w *renderWatch) begin(t *target, gen int64) (end func()) {
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running[t] = renderRun{generation: gen, start: time.Now(), budget: t.tmpl.Limits().Timeout}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.running, t)
	}
}

// oldest returns the render in flight that started first, and whether
// there is one.
func (w *renderWatch) oldest() (name string, run renderRun, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, r := range w.running {
		if !ok || r.start.Before(run.start) {
			name, run, ok = t.spec.Name, r, true
		}
	}
	return name, run, ok
}

// wedge describes a wedged render.
type wedge struct {
	target     string
	generation int64
	running    time.Duration
	budget     time.Duration
}

// String is the reason /healthz and /readyz give.
func (w *wedge) String() string {
	return fmt.Sprintf("apply wedged: the render of target %q (generation %d) has run for %v, past its time budget of %v (render_timeout), and does not return; the agent needs a restart",
		w.target, w.generation, w.running.Round(time.Second), w.budget)
}

// wedged returns the render in flight that has run past its time budget
// by more than r.wedgeGrace, nil when none has. Only the oldest render can
// be: it is the one holding the apply. It never waits for an apply.
func (r *Renderer) wedged() *wedge {
	name, run, ok := r.renders.oldest()
	if !ok {
		return nil
	}
	if d := time.Since(run.start); d > run.budget+r.wedgeGrace {
		return &wedge{target: name, generation: run.generation, running: d, budget: run.budget}
	}
	return nil
}

// renderContext returns ctx, also ended when the daemon stops (stopOn):
// a shutdown interrupts a render, whose generation has nothing in place
// yet, while the check and reload commands, which only ctx bounds, run to
// their end.
func (r *Renderer) renderContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if stop := r.stop; stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// applyWatched applies snap and waits for the outcome. Meanwhile it pings
// the watchdog at every heartbeat as long as no render is wedged, and
// reports a wedged render once (log, status). ok is false when the daemon
// is stopping (ctx ended) and a render is still in flight shutdownGrace
// later (and at every shutdownGrace after that): the apply is left behind,
// unfinished, and the daemon exits without it.
func (d *Daemon) applyWatched(ctx context.Context, snap Snapshot, heartbeat <-chan time.Time) (out Outcome, ok bool) {
	done := make(chan Outcome, 1)
	go func() { done <- d.r.Apply(context.WithoutCancel(ctx), snap) }()
	check := time.NewTicker(wedgeCheckInterval)
	defer check.Stop()
	stopping := ctx.Done()
	var giveUp <-chan time.Time
	reported := false
	for {
		select {
		case out := <-done:
			return out, true
		case <-heartbeat:
			if d.r.wedged() == nil {
				d.opts.Heartbeat()
			}
		case <-check.C:
			if w := d.r.wedged(); w != nil && !reported {
				reported = true
				d.log.Error("apply wedged: a render does not return, past its time budget; /healthz fails and the watchdog is no longer pinged",
					"target", w.target, "generation", w.generation, "running", w.running, "render_timeout", w.budget)
				d.publishStatus()
			}
		case <-stopping:
			stopping = nil
			t := time.NewTicker(d.shutdownGrace)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			if name, run, ok := d.r.renders.oldest(); ok {
				d.log.Warn("stopping without waiting for a render that does not end",
					"target", name, "generation", run.generation, "running", time.Since(run.start))
				return Outcome{}, false
			}
		}
	}
}

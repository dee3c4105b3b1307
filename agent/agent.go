// Package agent renders the snapshots a cache follows into files: the core
// of confagent.
//
// The split follows consul-template's: the cache watches ZooKeeper, package
// render writes outputs atomically, and this package decides what to apply
// and when, runs check and reload commands, repairs drift, and reports.
//
// Applying a snapshot (one generation) works in phases, so that a host never
// runs half of its targets at G and half at G-1:
//
//  1. Stage: every target is rendered from the same snapshot and written
//     beside its destination (a temp file, or a new timestamped directory),
//     invisible to readers. Outputs identical to what is in place are not
//     staged at all.
//  2. Check: every changed target's check command runs against its staged
//     output. In the default mode (ApplyAll) one failure aborts every
//     target: the old outputs stay, the failure is reported, and the
//     generation is not retried until a newer one arrives or the
//     configuration changes. In ApplyIndependent mode each target commits on
//     its own.
//  3. Commit: each staged output is swapped in with one rename.
//  4. Reload: the reload command of every target whose output changed runs
//     once. Unchanged outputs never trigger a reload.
//
// Drift repair re-renders the last applied snapshot when someone edits or
// deletes an output (without check or reload: the content goes back to what
// was checked and loaded).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zkconf/zkconf/agent/render"
)

// Snapshot is what the agent renders: one verified generation.
// *cache.Snapshot implements it.
type Snapshot interface {
	render.Snapshot
	Zxid() int64
	PublishID() string
	PublishedAt() time.Time
}

// ApplyMode says whether targets are applied all-or-nothing.
type ApplyMode string

// Apply modes.
const (
	// ApplyAll applies a generation only if every target renders and passes
	// its check (the default).
	ApplyAll ApplyMode = "all"
	// ApplyIndependent applies each target on its own.
	ApplyIndependent ApplyMode = "independent"
)

// Renderer applies snapshots to a set of targets. It is safe for concurrent
// use; applies are serialised.
type Renderer struct {
	log     *slog.Logger
	metrics *Metrics

	mu       sync.Mutex
	mode     ApplyMode
	targets  []*target
	applied  Snapshot // last snapshot applied to every target, nil before
	rejected string   // publish id of the last generation a check rejected
	lastErr  error
	// attempted is the generation of the last Apply that was not skipped.
	attempted int64
}

// NewRenderer compiles specs. Every problem is reported at once.
func NewRenderer(specs []TargetSpec, mode ApplyMode, log *slog.Logger, m *Metrics) (*Renderer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Renderer{log: log, metrics: m}
	if err := r.Configure(specs, mode); err != nil {
		return nil, err
	}
	return r, nil
}

// Configure replaces the targets. Targets whose spec is unchanged keep what
// they applied; a new configuration clears a check rejection so the next
// Apply tries the current generation again.
func (r *Renderer) Configure(specs []TargetSpec, mode ApplyMode) error {
	var errs []error
	ts := make([]*target, 0, len(specs))
	for _, s := range specs {
		t, err := compile(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ts = append(ts, t)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if mode == "" {
		mode = ApplyAll
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range ts {
		for _, old := range r.targets {
			if equalSpec(old.spec, t.spec) {
				t.applied, t.out, t.files, t.result = old.applied, old.out, old.files, old.result
				// The writer remembers what it wrote: keeping it spares
				// reading every file again.
				t.dir = old.dir
			}
		}
	}
	r.targets, r.mode, r.rejected = ts, mode, ""
	return nil
}

func equalSpec(a, b TargetSpec) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Dest == b.Dest && a.Item == b.Item &&
		fmt.Sprint(a.Items) == fmt.Sprint(b.Items) && a.Template == b.Template && a.Mode == b.Mode &&
		a.UID == b.UID && a.GID == b.GID && a.Check == b.Check && a.Reload == b.Reload &&
		a.FollowSymlink == b.FollowSymlink
}

// Outcome is the result of one Apply.
type Outcome struct {
	Generation int64
	// Skipped is true when nothing was attempted: the generation was
	// already applied, or was rejected before and nothing changed since.
	Skipped bool
	// Rejected is true when a render or check failed: the generation is
	// not retried until a newer one arrives or the configuration changes.
	Rejected bool
	// Changed lists targets whose output changed.
	Changed []string
	// Err is every failure, joined.
	Err error
}

// Apply renders snap to every target (see the package documentation for
// the phases). ctx bounds the check and reload commands only: once the
// commit phase starts it runs to the end, so a shutdown never leaves a
// half-applied generation.
func (r *Renderer) Apply(ctx context.Context, snap Snapshot) Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Outcome{Generation: snap.Generation()}
	if r.rejected != "" && r.rejected == snap.PublishID() {
		out.Skipped = true
		out.Err = r.lastErr
		return out
	}
	if r.applied != nil && r.applied.PublishID() == snap.PublishID() && r.allApplied(snap) {
		out.Skipped = true
		return out
	}
	start := time.Now()
	r.attempted = snap.Generation()
	if r.mode == ApplyIndependent {
		for _, t := range r.targets {
			r.applyTargets(ctx, snap, []*target{t}, &out)
		}
	} else {
		r.applyTargets(ctx, snap, r.targets, &out)
	}
	r.lastErr = out.Err
	if out.Err == nil {
		r.applied = snap
		r.rejected = ""
	}
	r.metrics.observeApply(snap, out, time.Since(start))
	if out.Err != nil {
		r.log.Error("apply failed", "generation", snap.Generation(), "error", out.Err)
	} else if len(out.Changed) > 0 {
		r.log.Info("applied", "generation", snap.Generation(), "changed", out.Changed)
	} else {
		r.log.Debug("generation applied with no output change", "generation", snap.Generation())
	}
	return out
}

func (r *Renderer) allApplied(snap Snapshot) bool {
	for _, t := range r.targets {
		if t.applied == nil || t.applied.PublishID() != snap.PublishID() {
			return false
		}
	}
	return true
}

// applyTargets stages, checks, commits and reloads ts as one unit.
func (r *Renderer) applyTargets(ctx context.Context, snap Snapshot, ts []*target, out *Outcome) {
	gen := snap.Generation()
	var stagedAll []*staged
	abortAll := func() {
		for _, s := range stagedAll {
			s.abort()
		}
	}
	var errs []error
	failed := map[*target]bool{}
	fail := func(t *target, kind string, err error) {
		failed[t] = true
		errs = append(errs, fmt.Errorf("generation %d rejected: target %q: %s: %w", gen, t.spec.Name, kind, err))
		t.result.OK, t.result.LastError, t.result.LastAttempt, t.result.UpdatedAt = false, fmt.Sprintf("%s: %v", kind, err), gen, time.Now()
		r.metrics.failure(t.spec.Name, kind)
	}
	for _, t := range ts {
		s, err := t.stage(snap)
		if err != nil {
			fail(t, "render", err)
			continue
		}
		stagedAll = append(stagedAll, s)
	}
	if len(errs) == 0 {
		for _, s := range stagedAll {
			if err := s.check(ctx, gen); err != nil {
				fail(s.t, "check", err)
			}
		}
	}
	if len(errs) > 0 {
		abortAll()
		for _, t := range ts {
			t.result.LastAttempt, t.result.UpdatedAt = gen, time.Now()
		}
		// Not retried in a loop: only a newer generation, or a new
		// configuration, makes the renderer try again.
		r.rejected = snap.PublishID()
		out.Rejected = true
		out.Err = errors.Join(out.Err, errors.Join(errs...))
		return
	}
	var changed []*target
	for _, s := range stagedAll {
		if !s.changed {
			s.abort()
			continue
		}
		if _, err := s.commit(); err != nil {
			fail(s.t, "write", err)
			continue
		}
		changed = append(changed, s.t)
	}
	for _, s := range stagedAll {
		if !failed[s.t] {
			s.t.applied, s.t.out, s.t.files = snap, s.out, s.files
			s.t.result.Generation, s.t.result.OK, s.t.result.LastError = gen, true, ""
			s.t.result.LastAttempt, s.t.result.UpdatedAt = gen, time.Now()
		}
	}
	for _, t := range changed {
		out.Changed = append(out.Changed, t.spec.Name)
		output, err := t.reload(ctx, gen)
		if err != nil {
			fail(t, "reload", err)
			continue
		}
		if t.spec.Reload != "" {
			t.result.Reloads++
			r.metrics.reloaded(t.spec.Name)
			r.log.Info("reloaded", "target", t.spec.Name, "generation", gen, "output", truncate(output, 512))
		}
	}
	out.Err = errors.Join(out.Err, errors.Join(errs...))
}

// Repair restores the last applied output wherever it no longer matches
// what is on disk (drift), without check or reload. It returns the targets
// it restored.
//
// The drift watcher also sees the agent's own writes, so most calls find
// nothing to do: the check comes first and writes nothing (for a dir
// target, it reads only files whose inode, size, mode, owner, mtime or
// ctime changed), and nothing is rendered again.
func (r *Renderer) Repair() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var fixed []string
	for _, t := range r.targets {
		if t.applied == nil {
			continue
		}
		if ok, err := t.matches(); err == nil && ok {
			continue
		}
		s, err := t.repairStage()
		if err != nil {
			r.log.Warn("drift repair: render failed", "target", t.spec.Name, "error", err)
			continue
		}
		if !s.changed {
			continue
		}
		if _, err := s.commit(); err != nil {
			r.log.Warn("drift repair failed", "target", t.spec.Name, "error", err)
			continue
		}
		t.result.Repairs++
		r.metrics.repaired(t.spec.Name)
		r.log.Warn("drift repaired: output was changed outside confagent and restored",
			"target", t.spec.Name, "dest", t.spec.Dest, "generation", t.applied.Generation())
		fixed = append(fixed, t.spec.Name)
	}
	return fixed
}

// Results returns every target's last result.
func (r *Renderer) Results() []TargetResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TargetResult, len(r.targets))
	for i, t := range r.targets {
		out[i] = t.result
	}
	return out
}

// Applied returns the snapshot last applied to every target, or nil.
func (r *Renderer) Applied() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// Attempted returns the generation last attempted (0 before any).
func (r *Renderer) Attempted() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempted
}

// LastError returns the last Apply's error, nil after a success.
func (r *Renderer) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Dests returns every target's destination, for the drift watcher.
func (r *Renderer) Dests() []TargetSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TargetSpec, len(r.targets))
	for i, t := range r.targets {
		out[i] = t.spec
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

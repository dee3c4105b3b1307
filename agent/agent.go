// Package agent renders the snapshots a cache follows into files: the core
// of confagent.
//
// The split follows consul-template's: the cache watches ZooKeeper, the
// template engine turns a snapshot into text, the atomic writers put it in
// place (internal packages of confagent), and this package decides what to
// apply and when, runs check and reload commands, repairs drift, and
// reports. docs/design.md gives the guarantees and their limits.
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
//     once. Unchanged outputs never trigger a reload, except one whose
//     previous reload has not succeeded yet (below).
//
// Some failures are not the generation's fault and are retried with
// backoff by the daemon (Outcome.Retry) until they clear, without a new
// publish:
//
//   - A failed reload leaves the target "reload pending": the output is
//     in place but its consumer never loaded it. The pending flag is set
//     before the commit, persisted in the state directory, survives applies
//     whose output is unchanged (they run the pending reload) and is
//     covered by the reload of a newer generation; only a successful reload
//     clears it. An agent that stops with a reload pending runs it after
//     its restart.
//   - A transient write error (ENOSPC, EDQUOT, EIO and the like; the
//     target result says Retrying "transient") does not reject the
//     generation: it is staged again on the next retry.
//
// Drift repair re-renders the last applied snapshot when someone edits or
// deletes an output (without check or reload: the content goes back to what
// was checked and loaded).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/template"
)

// Snapshot is what the agent renders: one verified generation.
// *cache.Snapshot implements it.
type Snapshot interface {
	// Generation is the generation number of the set.
	Generation() int64
	// Names returns the item names in the set, in any order.
	Names() []string
	// Get returns an item's content and whether the item exists.
	Get(name string) ([]byte, bool)
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
// use; applies are serialised. Results, Applied, Attempted and LastError
// never wait for an apply in progress: they read what the renderer last
// published (at the start and the end of every apply, and after every
// other change).
type Renderer struct {
	log     *slog.Logger
	metrics *Metrics

	// view is what the readers see (publish).
	view atomic.Pointer[rendererView]
	// renders records the renders in flight, and wedgeGrace is how long a
	// render may run past its time budget before it counts as wedged
	// (wedge.go).
	renders    *renderWatch
	wedgeGrace time.Duration

	mu       sync.Mutex
	mode     ApplyMode
	targets  []*target
	applied  Snapshot // last snapshot applied to every target, nil before
	rejected string   // publish id of the last generation a check rejected
	lastErr  error
	// attempted is the generation of the last Apply that was not skipped.
	attempted int64
	// oneShot: the process applies once and exits (Daemon.Once,
	// confagent --once), so no dir target fills a pool of empty files
	// (render.DirWriter.Refill) for a next write that never comes.
	oneShot bool

	// Failures retried without a new generation. rejectErr is the error
	// of the rejection recorded in rejected; pendingFile, when set,
	// persists the names of the targets whose reload is pending, and
	// savedPending is what it holds.
	rejectErr    error
	pendingFile  string
	savedPending string

	// host is what template targets' host-fact helpers report (host.go).
	host template.Host
	// reloadSplay and stop: see quiesce.go.
	reloadSplay time.Duration
	stop        <-chan struct{}
	// phases is how long the last Apply spent in each phase (timings.go).
	phases applyPhases
	// expect, when set (Daemon.Run: the drift watcher's), is told each
	// file or template output just before it is renamed into place, so
	// that the rename's event is known as ours (drift.go). Not guarded by
	// mu: Run clears it on its way out while a wedged apply holds mu.
	expect atomic.Pointer[expectFunc]
	// cmdOut remembers command failures, to withhold their output from
	// the status node (cmdoutput.go).
	cmdOut commandOutputs
}

// Failure classes that the daemon retries with backoff
// (TargetResult.Retrying).
const (
	RetryReload    = "reload"
	RetryTransient = "transient"
)

// NewRenderer compiles specs. Every problem is reported at once.
func NewRenderer(specs []TargetSpec, mode ApplyMode, log *slog.Logger, m *Metrics) (*Renderer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Renderer{log: log, metrics: m, host: localHost(), renders: newRenderWatch(), wedgeGrace: defaultWedgeGrace}
	if err := r.configure(specs, mode); err != nil {
		return nil, err
	}
	return r, nil
}

// configure replaces the targets. Targets whose spec is unchanged keep what
// they applied; a new configuration clears a check rejection so the next
// Apply tries the current generation again.
func (r *Renderer) configure(specs []TargetSpec, mode ApplyMode) error {
	var errs []error
	ts := make([]*target, 0, len(specs))
	for _, s := range specs {
		t, err := compile(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.host, t.renders = &r.host, r.renders
		ts = append(ts, t)
	}
	if err := errlist.Join(errs...); err != nil {
		return err
	}
	if mode == "" {
		mode = ApplyAll
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.publish()
	for _, t := range ts {
		for _, old := range r.targets {
			if equalSpec(old.spec, t.spec) {
				t.applied, t.sum, t.files, t.result, t.waiting = old.applied, old.sum, old.files, old.result, old.waiting
				// The writer remembers what it wrote: keeping it spares
				// reading every file again.
				t.dir = old.dir
				if t.dir != nil {
					t.dir.SetGrace(t.spec.Grace)
				}
			}
			// The output in place was never loaded, whatever else about
			// the target changed.
			if old.spec.Name == t.spec.Name && old.spec.Dest == t.spec.Dest && old.reloadPending && t.spec.Reload != "" {
				t.markReloadPending()
			}
		}
	}
	r.targets, r.mode, r.rejected, r.rejectErr = ts, mode, "", nil
	r.metrics.initTargets(ts)
	r.savePending()
	return nil
}

func equalSpec(a, b TargetSpec) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Dest == b.Dest && a.Item == b.Item &&
		fmt.Sprint(a.Items) == fmt.Sprint(b.Items) && a.Template == b.Template && a.Mode == b.Mode &&
		a.UID == b.UID && a.GID == b.GID && a.Check == b.Check && a.Reload == b.Reload &&
		a.FollowSymlink == b.FollowSymlink && a.MissingKey == b.MissingKey && a.Prefix == b.Prefix && a.DirMode == b.DirMode &&
		a.Root == b.Root && slices.Equal(a.Roots, b.Roots) && equalSyntax(a, b)
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
	// Retry is true when a failure is retried with backoff without a new
	// generation: a reload is pending, or a write failed transiently.
	Retry bool
}

// Apply renders snap to every target (see the package documentation for
// the phases). ctx bounds the renders and the check and reload commands;
// once the commit phase starts it runs to the end, so a shutdown never
// leaves a half-applied generation. A render interrupted by ctx (or by the
// daemon stopping) fails the apply without rejecting the generation.
func (r *Renderer) Apply(ctx context.Context, snap Snapshot) Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.publish()
	out := Outcome{Generation: snap.Generation()}
	if r.rejected != "" && r.rejected == snap.PublishID() {
		out.Rejected = true
		if !r.reloadsPending() {
			out.Skipped = true
			out.Err = r.lastErr
			return out
		}
		// The generation stays rejected, but the outputs in place still
		// have to be loaded.
		out.Err = errlist.Join(r.rejectErr, r.runReloads(ctx, r.targets, nil, 0))
		out.Retry = r.reloadsPending()
		r.lastErr = out.Err
		r.metrics.observeTargets(r.targets)
		return out
	}
	if r.applied != nil && r.applied.PublishID() == snap.PublishID() && r.allApplied(snap) && !r.reloadsPending() {
		out.Skipped = true
		return out
	}
	start := time.Now()
	r.phases = applyPhases{}
	r.attempted = snap.Generation()
	r.publish()
	if r.log.Enabled(ctx, slog.LevelDebug) { // its arguments allocate even when disabled
		r.log.Debug("applying", "generation", snap.Generation())
	}
	rctx, cancel := r.renderContext(ctx)
	defer cancel()
	if r.mode == ApplyIndependent {
		for _, t := range r.targets {
			r.applyTargets(ctx, rctx, snap, []*target{t}, &out)
		}
	} else {
		for _, ts := range applyUnits(snap, r.targets) {
			r.applyTargets(ctx, rctx, snap, ts, &out)
		}
	}
	// The previous generation directories whose grace period has passed
	// go now, after the swap (the dir targets leave them to the sweep):
	// in this apply's wake-up, not in the next one's stage.
	r.sweepLocked()
	r.lastErr = out.Err
	if out.Err == nil {
		r.applied = snap
		r.rejected = ""
	}
	out.Retry = out.Retry || r.reloadsPending()
	took := time.Since(start)
	r.metrics.observeApply(snap, out, took)
	r.metrics.observeTargets(r.targets)
	switch {
	case out.Err != nil && !out.Rejected && errors.Is(out.Err, template.ErrInterrupted):
		r.log.Info("apply interrupted: the agent is stopping; nothing of this generation is in place", "generation", snap.Generation(), "duration", took)
	case out.Err != nil:
		r.log.Error("apply failed", "generation", snap.Generation(), "duration", took, "error", out.Err)
	case len(out.Changed) > 0:
		r.log.LogAttrs(ctx, slog.LevelInfo, "applied", appliedAttrs(snap, out.Changed, took, r.phases)...)
	default:
		r.log.Debug("generation applied with no output change", "generation", snap.Generation(), "duration", took)
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

// applyTargets applies snap to ts as one unit, in four named phases read
// top to bottom the way Kubernetes' AtomicWriter.Write reads (rctx bounds
// the renders, ctx the commands):
//
//  1. stage: render every target and write it beside its destination;
//  2. check: run every staged target's check command; any failure of
//     either phase aborts every staged output (abort) and nothing of the
//     generation is in place;
//  3. commit: wait until the snapshot's state is durable (the barrier:
//     the cache writes it while this unit stages and checks; a state
//     that cannot be made durable aborts as in 2, retried), persist the
//     pending reloads, then swap each staged output in with one rename
//     (the commit point of each target), and record what each target now
//     holds;
//  4. reload: run the reload of every target whose output changed (and
//     of every one whose reload is pending).
func (r *Renderer) applyTargets(ctx, rctx context.Context, snap Snapshot, ts []*target, out *Outcome) {
	a := &applyRun{r: r, snap: snap, gen: snap.Generation(), failed: map[*target]bool{}}
	phaseStart := time.Now()

	// (1) Stage.
	a.stage(rctx, ts)
	phaseStart = r.phases.lap(&r.phases.stage, phaseStart)

	// (2) Check, unless staging failed already.
	if len(a.errs) == 0 {
		a.check(ctx)
	}
	phaseStart = r.phases.lap(&r.phases.check, phaseStart)

	// (3) Commit, once no restart can start from an older generation
	// than the one about to show.
	if len(a.errs) == 0 {
		a.durable(ctx)
	}
	phaseStart = r.phases.lap(&r.phases.durable, phaseStart)
	if len(a.errs) > 0 {
		a.abort(ctx, ts, out)
		return
	}

	changed := a.commit(out)
	r.phases.lap(&r.phases.swap, phaseStart)
	a.record()

	// (4) Reload.
	if len(a.errs) > 0 && !a.rejecting {
		out.Retry = true
	}
	out.Err = errlist.Join(out.Err, errlist.Join(a.errs...), r.runReloads(ctx, ts, changed, a.gen))
}

// applyRun is one applyTargets call: what its phases staged and what
// failed.
type applyRun struct {
	r    *Renderer
	snap Snapshot
	gen  int64
	// staged is every target staged without error, in target order.
	staged []*staged
	errs   []error
	failed map[*target]bool
	// rejecting: a failure that only a new generation can fix.
	rejecting bool
}

// fail records a failure of kind for t: an interrupted render (the agent
// is stopping) and a transient write error are not the generation's
// fault; every other failure but a write rejects the generation.
func (a *applyRun) fail(t *target, kind string, err error) {
	a.failed[t] = true
	gen := targetGeneration(a.snap, t.spec, a.gen)
	if errors.Is(err, template.ErrInterrupted) {
		// Nothing of the generation is in place yet.
		a.errs = append(a.errs, fmt.Errorf("generation %d not applied: target %q: %w", gen, t.spec.Name, err))
		return
	}
	if render.IsTransient(err) {
		a.errs = append(a.errs, a.r.failTarget(t, gen, RetryTransient, err))
		return
	}
	a.rejecting = a.rejecting || kind != "write"
	a.errs = append(a.errs, a.r.failTarget(t, gen, kind, err))
}

// stage is phase 1: every target of ts rendered and written beside its
// destination, side by side (stageAll).
func (a *applyRun) stage(rctx context.Context, ts []*target) {
	stages, stageErrs := stageAll(rctx, a.snap, ts)
	for i, t := range ts {
		if stageErrs[i] != nil {
			a.fail(t, "render", stageErrs[i])
			continue
		}
		a.staged = append(a.staged, stages[i])
	}
}

// check is phase 2: every staged target's check command, against its
// staged output.
func (a *applyRun) check(ctx context.Context) {
	for _, s := range a.staged {
		if err := s.check(ctx, targetGeneration(a.snap, s.t.spec, a.gen)); err != nil {
			a.fail(s.t, "check", err)
		}
	}
}

// abort ends an apply whose stage or check failed: every staged output is
// removed, the outputs in place stay (those never loaded still get their
// reload), and the generation is rejected or retried.
func (a *applyRun) abort(ctx context.Context, ts []*target, out *Outcome) {
	for _, s := range a.staged {
		s.abort()
	}
	for _, t := range ts {
		t.result.LastAttempt, t.result.UpdatedAt = targetGeneration(a.snap, t.spec, a.gen), time.Now()
	}
	if a.rejecting {
		// Not retried in a loop: only a newer generation, or a new
		// configuration, makes the renderer try again.
		a.r.rejected = a.snap.PublishID()
		a.r.rejectErr = errlist.Join(a.errs...)
		out.Rejected = true
	} else {
		out.Retry = true
	}
	out.Err = errlist.Join(out.Err, errlist.Join(a.errs...), a.r.runReloads(ctx, ts, nil, 0))
}

// commit is phase 3: the pending-reload flags of the changed targets are
// made durable, then every staged output is swapped in (commitAll). It
// returns the targets whose output changed; a target whose swap failed
// gets its pending flag back as it was.
func (a *applyRun) commit(out *Outcome) map[*target]bool {
	// The pending flag is on disk before the new output is visible, so
	// that an agent killed between the commit and the reload reloads
	// after its restart.
	wasPending := map[*target]bool{}
	for _, s := range a.staged {
		if s.changed && s.t.spec.Reload != "" {
			wasPending[s.t] = s.t.reloadPending
			s.t.markReloadPending()
		}
	}
	a.r.savePending()
	for _, s := range a.staged {
		a.r.expectCommit(s)
	}
	changed := map[*target]bool{}
	commitErrs := commitAll(a.staged)
	for i, s := range a.staged {
		if !s.changed {
			continue
		}
		if err := commitErrs[i]; err != nil {
			if p, ok := wasPending[s.t]; ok && !p {
				s.t.reloadPending, s.t.result.ReloadPending = false, false
			}
			a.fail(s.t, "write", err)
			continue
		}
		changed[s.t] = true
		out.Changed = append(out.Changed, s.t.spec.Name)
	}
	return changed
}

// record notes, for every target committed (or unchanged) without error,
// that it holds the generation.
func (a *applyRun) record() {
	for _, s := range a.staged {
		if a.failed[s.t] {
			continue
		}
		s.t.applied, s.t.sum, s.t.files, s.t.waiting = a.snap, s.sum, s.files, s.waiting
		// With several roots a result reports the target's own root's
		// generation, not the renderer's combined sequence.
		g := targetGeneration(a.snap, s.t.spec, a.gen)
		s.t.result.Generation, s.t.result.OK, s.t.result.LastError = g, true, ""
		s.t.result.LastAttempt, s.t.result.UpdatedAt = g, time.Now()
		if s.t.result.Retrying != RetryReload {
			s.t.result.Retrying, s.t.result.Retries = "", 0
		}
	}
}

// failTarget records a failure of kind for t and returns it as an error.
// A failure of a retried class counts a retry when it follows one of the
// same class.
func (r *Renderer) failTarget(t *target, gen int64, kind string, err error) error {
	t.result.OK, t.result.LastError, t.result.LastAttempt, t.result.UpdatedAt = false, phaseMessage(kind, err), gen, time.Now()
	r.cmdOut.record(err)
	r.metrics.failure(t.spec.Name, kind)
	switch kind {
	case RetryReload, RetryTransient:
		if t.result.Retrying == kind {
			t.result.Retries++
			r.metrics.retried(t.spec.Name, kind)
		} else {
			t.result.Retrying, t.result.Retries = kind, 0
		}
	}
	switch kind {
	case RetryReload:
		return fmt.Errorf("generation %d in place but not loaded, reload retried: %s%w", gen, targetContext(t, kind, err), err)
	case RetryTransient:
		return fmt.Errorf("generation %d not applied yet, retried: target %q: %s write error: %w", gen, t.spec.Name, kind, err)
	}
	return fmt.Errorf("generation %d rejected: %s%w", gen, targetContext(t, kind, err), err)
}

// runReloads runs the reload of every target of ts whose output changed
// (in changed) or whose reload is pending, and returns the failures. gen
// is the generation just committed (0: the one in place).
func (r *Renderer) runReloads(ctx context.Context, ts []*target, changed map[*target]bool, gen int64) error {
	r.splay(ctx, ts, changed)
	var errs []error
	for _, t := range ts {
		if !changed[t] && !t.reloadPending {
			continue
		}
		if t.spec.Reload == "" {
			t.reloadPending = false
			continue
		}
		g := gen
		if !changed[t] && t.applied != nil {
			g = t.applied.Generation()
		}
		retry := !changed[t]
		cg := g
		if t.applied != nil {
			cg = targetGeneration(t.applied, t.spec, g)
		}
		output, err := t.reload(ctx, cg)
		if err != nil {
			errs = append(errs, r.failTarget(t, cg, RetryReload, err))
			continue
		}
		t.reloadPending, t.result.ReloadPending = false, false
		if t.result.Retrying == RetryReload {
			t.result.Retrying, t.result.Retries = "", 0
			if strings.HasPrefix(t.result.LastError, RetryReload) {
				t.result.OK, t.result.LastError = true, ""
			}
		}
		t.result.Reloads++
		r.metrics.reloaded(t.spec.Name)
		if retry {
			r.log.Info("reloaded after a pending reload", "target", t.spec.Name, "generation", cg, "output", lastBytes(output, 512))
		} else {
			r.log.Info("reloaded", "target", t.spec.Name, "generation", cg, "output", lastBytes(output, 512))
		}
	}
	r.savePending()
	return errlist.Join(errs...)
}

// markReloadPending records that t's output has to be loaded.
func (t *target) markReloadPending() {
	t.reloadPending, t.result.ReloadPending = true, true
}

// reloadsPending reports whether any target's reload is pending.
func (r *Renderer) reloadsPending() bool {
	for _, t := range r.targets {
		if t.reloadPending {
			return true
		}
	}
	return false
}

// pendingState is the persisted list of targets whose reload is pending.
type pendingState struct {
	Reload []string `json:"reload_pending"`
}

// persistPendingReloads makes the renderer keep the names of targets whose
// reload is pending in path (in the state directory), and marks the
// targets that path lists as pending: a reload that never succeeded
// before a restart runs again after it, even though the output in place
// is unchanged. Call it before the first Apply.
func (r *Renderer) persistPendingReloads(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.publish()
	r.pendingFile = path
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pending reloads: %w", err)
	}
	var st pendingState
	if err := json.Unmarshal(b, &st); err != nil {
		// Unreadable: the worst case is a reload that does not run again.
		r.log.Warn("ignoring an unreadable pending-reloads file", "path", path, "error", err)
		return nil
	}
	r.savedPending = string(b)
	for _, t := range r.targets {
		if slices.Contains(st.Reload, t.spec.Name) && t.spec.Reload != "" {
			t.markReloadPending()
			t.result.OK, t.result.Retrying = false, RetryReload
			t.result.LastError = RetryReload + ": had not succeeded when the agent stopped; running it again"
			r.log.Warn("reload pending from before the restart: it runs again", "target", t.spec.Name)
		}
	}
	return nil
}

// savePending writes the pending reloads to pendingFile if they changed.
// A write that fails is logged: the flag stays in memory.
func (r *Renderer) savePending() {
	if r.pendingFile == "" {
		return
	}
	var st pendingState
	for _, t := range r.targets {
		if t.reloadPending {
			st.Reload = append(st.Reload, t.spec.Name)
		}
	}
	b, _ := json.Marshal(st)
	if string(b) == r.savedPending || (len(st.Reload) == 0 && r.savedPending == "") {
		return
	}
	if len(st.Reload) == 0 {
		if err := os.Remove(r.pendingFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("cannot remove the pending-reloads file", "path", r.pendingFile, "error", err)
			return
		}
		r.savedPending = ""
		return
	}
	if _, err := render.WriteFile(r.pendingFile, b, render.FileOptions{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		r.log.Error("cannot persist the pending reloads: a restart would not run them again", "path", r.pendingFile, "error", err)
		return
	}
	r.savedPending = string(b)
}

// Repair restores the last applied output wherever it no longer matches
// what is on disk (drift), without check or reload. It returns the targets
// it restored.
//
// The drift watcher also sees the agent's own writes, so most calls find
// nothing to do: the check comes first and writes nothing (for a dir
// target, it reads only files whose inode, size, mode, owner, mtime or
// ctime changed), and only an output found changed is made again (a
// template target's rendered from the applied snapshot, see
// target.repairStage).
func (r *Renderer) Repair() []string {
	return r.repairIn(nil)
}

// repairIn is Repair with each target's check limited to what scope's
// directories hold (target.matchesIn; nil: everything).
func (r *Renderer) repairIn(scope map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.publish()
	rctx, cancel := r.renderContext(context.Background())
	defer cancel()
	var fixed []string
	for _, t := range r.targets {
		if t.applied == nil || t.waiting {
			continue
		}
		if ok, err := t.matchesIn(scope); err == nil && ok {
			continue
		}
		s, err := t.repairStage(rctx)
		if err != nil {
			r.log.Warn("drift repair: render failed", "target", t.spec.Name, "error", err)
			continue
		}
		if !s.changed {
			continue
		}
		r.expectCommit(s)
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

// expectFunc is told of a file or template output about to be renamed
// into place at path.
type expectFunc func(path string, sum render.Digest, opts render.FileOptions)

// setExpect sets what is told of each file or template output before its
// rename (nil: nothing).
func (r *Renderer) setExpect(fn expectFunc) {
	if fn == nil {
		r.expect.Store(nil)
		return
	}
	r.expect.Store(&fn)
}

// expectCommit tells r.expect of s's output when s is a changed file or
// template output about to be committed.
func (r *Renderer) expectCommit(s *staged) {
	fn := r.expect.Load()
	if fn == nil || !s.changed || s.t.spec.Kind == KindDir {
		return
	}
	(*fn)(s.t.spec.Dest, s.sum, s.t.fileOptions())
}

// setLinksWatched tells each dir target's writer whether the drift
// watcher watches its directory (watched), so that a write may take the
// top-level links it found ours before as still ours
// (render.DirWriter.SetLinksWatched): every change there is an event,
// whose repair pass reads every link (Repair: Matches).
func (r *Renderer) setLinksWatched(watched func(dir string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets {
		if t.dir != nil {
			t.dir.SetLinksWatched(watched(t.spec.Dest))
		}
	}
}

// sweepRetired removes the previous generation directories of dir targets
// whose grace period has passed, refills their pools of empty files
// (render.DirWriter.Refill), and returns how long until the next one's
// ends (0: none is kept).
func (r *Renderer) sweepRetired() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sweepLocked()
}

// sweepLocked is sweepRetired with r.mu held.
func (r *Renderer) sweepLocked() time.Duration {
	var next time.Duration
	for _, t := range r.targets {
		if t.dir == nil {
			continue
		}
		d, err := t.dir.Sweep()
		if err != nil {
			r.log.Warn("cannot remove a previous generation directory; the next write retries", "target", t.spec.Name, "error", err)
		}
		// The empty files the next write takes instead of creating its
		// own, made here, after the swap, rather than on its way (none
		// when there is no next write: oneShot).
		if !r.oneShot {
			if err := t.dir.Refill(); err != nil {
				r.log.Warn("cannot prepare the pool of empty files; the next write creates its files", "target", t.spec.Name, "error", err)
			}
		}
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

// rendererView is what Results, Applied, Attempted and LastError report.
type rendererView struct {
	results   []TargetResult
	applied   Snapshot
	attempted int64
	lastErr   error
}

// publish makes the renderer's current state what its readers see.
// Called with r.mu held, after every change of what they report: an apply
// holds r.mu for as long as its renders, checks and reloads run, and
// /status, /readyz and the status node must not wait for them.
func (r *Renderer) publish() {
	v := &rendererView{results: make([]TargetResult, len(r.targets)), applied: r.applied, attempted: r.attempted, lastErr: r.lastErr}
	for i, t := range r.targets {
		v.results[i] = t.result
	}
	r.view.Store(v)
}

// Results returns every target's last result.
func (r *Renderer) Results() []TargetResult { return slices.Clone(r.view.Load().results) }

// Applied returns the snapshot last applied to every target, or nil.
func (r *Renderer) Applied() Snapshot { return r.view.Load().applied }

// Attempted returns the generation last attempted (0 before any); during
// an apply, the generation it applies.
func (r *Renderer) Attempted() int64 { return r.view.Load().attempted }

// LastError returns the last Apply's error, nil after a success.
func (r *Renderer) LastError() error { return r.view.Load().lastErr }

// renderBytes is what the template targets' last renders allocated, all
// together (they run side by side): the heap the next apply's renders may
// need, which the automatic memory limit leaves room for (memlimit.go).
func (r *Renderer) renderBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, t := range r.targets {
		n += t.renderAlloc
	}
	return n
}

// driftDirs are the directories the drift watcher watches: the one
// holding each file or template output; for a dir target its directory,
// its current generation directory and every sub-directory of the tree
// applied there (an edit of a nested file is an event in its own
// directory only).
func (r *Renderer) driftDirs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range r.targets {
		if t.spec.Kind != KindDir {
			out = append(out, filepath.Dir(t.spec.Dest))
			continue
		}
		out = append(out, t.spec.Dest)
		cur, err := render.CurrentPath(t.spec.Dest)
		if err != nil {
			continue
		}
		out = append(out, cur)
		dirs := map[string]bool{}
		for name := range t.files {
			for i := 0; i < len(name); i++ {
				if name[i] == '/' {
					dirs[name[:i]] = true
				}
			}
		}
		for d := range dirs {
			out = append(out, filepath.Join(cur, filepath.FromSlash(d)))
		}
	}
	return out
}

// lastBytes keeps the last n bytes of s: the end of a command's output is
// where it says why.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// specs returns every target's spec (destination, kind, options); it waits
// for an apply in progress.
func (r *Renderer) specs() []TargetSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TargetSpec, len(r.targets))
	for i, t := range r.targets {
		out[i] = t.spec
	}
	return out
}

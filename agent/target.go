package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/targets"
	"github.com/zkconf/zkconf/internal/template"
)

// Target kinds.
const (
	KindFile     = targets.KindFile     // one item to one file
	KindDir      = targets.KindDir      // items (all, or those matching globs) to a directory, swapped as a whole
	KindTemplate = targets.KindTemplate // a Go text/template rendered from the snapshot to one file
)

// TargetSpec is one output, as configured.
type TargetSpec struct {
	Name string
	Kind string
	Dest string
	// Item is the item a file target renders.
	Item string
	// Items are glob patterns (path.Match) selecting a dir target's items
	// by their path below Prefix ("*" never matches "/"); empty selects
	// all.
	Items []string
	// Prefix is the directory (an item path ending in "/", "conf.d/") of
	// the items a dir target renders, stripped from their file names;
	// empty renders every item.
	Prefix string
	// DirMode is the mode of the sub-directories a dir target creates for
	// item paths (0: 0755); they are owned like the files.
	DirMode os.FileMode
	// Template is a template target's source text, and TemplatePath where
	// it came from (for messages).
	Template     string
	TemplatePath string
	// MissingKey is what a template does with a map key the map does not
	// have: "error" (the default, also "") fails the render, "zero" makes
	// it no value (false in if, replaced by default, printed as nothing).
	MissingKey string
	Mode       os.FileMode
	UID, GID   int // -1 leaves the owner as the process creates it
	Check      string
	Reload     string
	Timeout    time.Duration
	// FollowSymlink allows a file destination that is a symlink.
	FollowSymlink bool

	// Grace is how long a dir target keeps its previous generation
	// directory after a swap, for readers that resolved "..data" just
	// before it; 0 removes it at once.
	Grace time.Duration

	// RenderTimeout and RenderSteps are a template target's render
	// budget: how long one render may run and how many steps (range
	// iterations and template calls) it may take. A render over budget
	// fails, which rejects the generation. Zero takes the template
	// engine's default (10 s, 10,000,000 steps).
	RenderTimeout time.Duration
	RenderSteps   int64

	// Syntax is a template target's template language: SyntaxGo (the
	// default, also "") or SyntaxConfd; Confd is what a confd template
	// reads (confd.go).
	Syntax string
	Confd  ConfdResource

	// Root is the name of the root the target renders, when the daemon
	// follows several (Options.Roots); Roots are the other roots a
	// template target reads, which make it render only cuts (roots.go).
	Root  string
	Roots []string
}

// target is a TargetSpec compiled for rendering, plus what it last applied.
type target struct {
	spec TargetSpec
	// c is spec compiled (package targets: what an offline render runs
	// too), and tmpl its template (nil but for template targets).
	c    *targets.Target
	tmpl targets.TemplateRenderer
	dir  *render.DirWriter
	// host is the renderer's host facts, read under its lock.
	host *template.Host
	// renders is the renderer's record of the renders in flight (wedge.go).
	renders *renderWatch

	// applied is the snapshot whose output the destination holds, nil until
	// the first successful apply; sum (file and template targets: the
	// output's digest) or files (dir targets: the output, the snapshot's
	// own items) is what drift detection compares with the disk without
	// rendering again. A file or template output is not kept: a template's
	// can be megabytes, alive beside the next render's, and the collector's
	// goal doubles whatever is alive (docs/bench/latency-rss64c-2026-11-27);
	// drift repair renders applied again (repairStage).
	applied Snapshot
	sum     render.Digest
	files   map[string][]byte
	result  TargetResult
	// renderAlloc is what the last render of a template target allocated
	// on the heap, the process's other goroutines' allocations meanwhile
	// included (Renderer.renderBytes).
	renderAlloc int64

	// reloadPending is set (and persisted) before a changed output is
	// committed and cleared by the reload that succeeds after it: a reload
	// that failed, or never ran because the agent stopped, is run again
	// (with backoff) even though later applies find the output unchanged.
	reloadPending bool
	// waiting: the last snapshot staged had nothing for this target yet
	// (several roots: its root's first snapshot, or a first cut); the
	// output in place was kept, and drift repair leaves it alone.
	waiting bool
}

// TargetResult is a target's last outcome (fleet.TargetResult on the wire).
type TargetResult = fleet.TargetResult

func compile(spec TargetSpec) (*target, error) {
	c, err := targets.Compile(spec.internal())
	if err != nil {
		return nil, err
	}
	t := &target{spec: spec, c: c, tmpl: c.Template,
		result: TargetResult{Name: spec.Name, Kind: spec.Kind, Dest: spec.Dest, OK: true}}
	if spec.Kind == KindDir {
		t.dir = render.NewDirWriter(spec.Dest)
		t.dir.SetGrace(spec.Grace)
		// The renderer sweeps after every apply (Renderer.Apply), after
		// the swap: what expired is not removed in the next stage.
		t.dir.SetOwnerSweeps(true)
	}
	return t, nil
}

// fileOptions are the target's render options. The parent of a rendered
// file is created when missing (render creates it without following a
// symbolic link that others could replace; 0755, as install(1) would:
// the service's user must traverse it).
func (t *target) fileOptions() render.FileOptions {
	return render.FileOptions{Mode: t.spec.Mode, UID: t.spec.UID, GID: t.spec.GID, FollowSymlink: t.spec.FollowSymlink, CreateDirs: true,
		DirMode: t.spec.DirMode}
}

// selected returns the files a dir target renders from snap: the items
// below its Prefix, by their path below it, that its globs select.
func (t *target) selected(snap Snapshot) map[string][]byte {
	view, err := viewFor(snap, t.spec)
	if err != nil {
		return nil
	}
	return t.c.Select(view)
}

// output renders the target's content for a file or template target. ctx
// interrupts a template's render (template.ErrInterrupted).
func (t *target) output(ctx context.Context, snap Snapshot) ([]byte, error) {
	view, err := viewFor(snap, t.spec)
	if err != nil {
		return nil, err
	}
	return t.c.Output(ctx, view, func(ctx context.Context, view template.Snapshot) ([]byte, error) {
		defer t.renders.begin(t, view.Generation())()
		before := heapAllocs()
		out, err := t.tmpl.ExecuteContext(ctx, view, t.hostFacts())
		t.renderAlloc = max(heapAllocs()-before, 0)
		return out, err
	})
}

// staged is a target's output written beside its destination, not yet
// visible to readers.
type staged struct {
	t       *target
	path    string // what a check command examines
	changed bool
	commit  func() (bool, error)
	abort   func()
	// sum (a file or template output's digest) or files (a dir target's
	// output) is recorded in the target once applied. The output's bytes
	// are the stage's (render.StagedFile), not kept here.
	sum   render.Digest
	files map[string][]byte
	// waiting: nothing to render yet (see target.waiting), recorded with
	// the output: a stage that fails later must leave the target's
	// waiting as the last recorded apply left it, or drift repair would
	// write an output that was never recorded.
	waiting bool
}

func unchanged(t *target, sum render.Digest, files map[string][]byte) *staged {
	return &staged{t: t, sum: sum, files: files,
		commit: func() (bool, error) { return false, nil }, abort: func() {}}
}

// stage renders and stages snap's output for t. An output identical to
// what is in place is not staged at all: it is returned with
// changed=false, having written nothing.
func (t *target) stage(ctx context.Context, snap Snapshot) (*staged, error) {
	// With several roots, a target whose root has no snapshot yet, or a
	// template with no cut yet, keeps what is in place.
	if _, err := viewFor(snap, t.spec); err != nil {
		s := unchanged(t, t.sum, t.files)
		s.waiting = true
		return s, nil
	}
	if t.spec.Kind == KindDir {
		files := t.selected(snap)
		return t.stageDir(files)
	}
	if t.spec.Kind == KindTemplate {
		return t.stageTemplate(ctx, snap, render.Digest{})
	}
	data, err := t.output(ctx, snap)
	if err != nil {
		return nil, err
	}
	return t.stageFile(data)
}

// stageTemplate renders snap's output for a template target straight
// into its staged file (render.FileStream): a large output is written as
// it is made, never held whole in memory (docs/bench/
// latency-tmplstream-2026-11-27). A render that fails leaves nothing
// behind: the temporary file is removed and the destination untouched.
// An output identical to what is in place is not staged (changed=false).
// When want is not the zero Digest (drift repair), an output other than
// want is not staged either: errRenderedOther.
func (t *target) stageTemplate(ctx context.Context, snap Snapshot, want render.Digest) (*staged, error) {
	view, err := viewFor(snap, t.spec)
	if err != nil {
		return nil, err
	}
	w := render.NewFileStream(t.spec.Dest, t.fileOptions(), t.sum.Size(), want)
	err = func() error {
		defer t.renders.begin(t, view.Generation())()
		before := heapAllocs()
		err := t.tmpl.ExecuteTo(ctx, w, view, t.hostFacts())
		t.renderAlloc = max(heapAllocs()-before, 0)
		return err
	}()
	if werr := w.Err(); werr != nil {
		// The write failed (a full disk), not the template: the stream
		// removed its file already.
		err = werr
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	sum := w.Digest()
	if !want.IsZero() && !sum.Equal(want) {
		w.Abort()
		return nil, errRenderedOther
	}
	sf, err := w.Stage()
	if err != nil {
		return nil, err
	}
	if sf == nil {
		return unchanged(t, sum, nil), nil
	}
	return &staged{t: t, path: sf.Path(), changed: true, commit: sf.Commit, abort: sf.Abort, sum: sum}, nil
}

// stageDir stages files for a dir target.
func (t *target) stageDir(files map[string][]byte) (*staged, error) {
	sd, err := t.dir.StageIfChanged(files, t.fileOptions())
	if err != nil {
		return nil, err
	}
	if sd == nil {
		return unchanged(t, render.Digest{}, files), nil
	}
	return &staged{t: t, path: sd.Path(), changed: true, commit: sd.Commit, abort: sd.Abort, files: files}, nil
}

// stageFile stages data for a file or template target.
func (t *target) stageFile(data []byte) (*staged, error) {
	sf, err := render.StageIfChanged(t.spec.Dest, data, t.fileOptions())
	if err != nil {
		return nil, err
	}
	if sf == nil {
		return unchanged(t, render.DigestOf(data), nil), nil
	}
	return &staged{t: t, path: sf.Path(), changed: true, commit: sf.Commit, abort: sf.Abort, sum: render.DigestOf(data)}, nil
}

// matches reports whether the destination still holds the applied output,
// reading no file whose identity is unchanged (dir targets) and writing
// nothing: the drift check.
func (t *target) matches() (bool, error) {
	if t.spec.Kind == KindDir {
		return t.dir.Matches(t.files, t.fileOptions())
	}
	return render.MatchesDigest(t.spec.Dest, t.sum, t.fileOptions())
}

// matchesIn is matches for a pass that needs to look only at what the
// drift watcher could not see: scope holds the directories just added to
// the watch set (nil: look at everything). A file or template target whose
// directory was watched before is not read (any change to it since was an
// event, which asks for a pass of its own); a dir target whose directory
// was watched before has only its current generation directory checked
// (the new one an apply made, whose writes no watch saw).
func (t *target) matchesIn(scope map[string]bool) (bool, error) {
	if scope == nil {
		return t.matches()
	}
	if t.spec.Kind != KindDir {
		if !scope[filepath.Dir(t.spec.Dest)] {
			return true, nil
		}
		return t.matches()
	}
	if scope[t.spec.Dest] {
		return t.matches()
	}
	under := filepath.Clean(t.spec.Dest) + string(filepath.Separator)
	for dir := range scope {
		if strings.HasPrefix(dir, under) {
			return t.dir.MatchesCurrent(t.files, t.fileOptions())
		}
	}
	return true, nil
}

// errRenderedOther is drift repair's refusal to write a template's output
// that is not the one applied.
var errRenderedOther = errors.New("the applied snapshot renders differently now (a host fact changed since the apply): left to the next apply, which runs the reload")

// repairStage stages the applied output again, for drift repair. A file
// or template target's output is made again from the applied snapshot
// (its bytes are not kept, see target.sum): a file target's is the item
// itself, a template's is rendered again. The template helpers are
// deterministic, so that is the applied output, unless a host fact it
// reads changed since the apply (fileExists): then nothing is staged
// (errRenderedOther), since a repair runs no reload and the service would
// be left with an output it never loaded. ctx interrupts the render.
func (t *target) repairStage(ctx context.Context) (*staged, error) {
	if t.spec.Kind == KindDir {
		return t.stageDir(t.files)
	}
	if t.spec.Kind == KindTemplate {
		if t.sum.IsZero() {
			return nil, errRenderedOther // nothing applied to compare with
		}
		return t.stageTemplate(ctx, t.applied, t.sum)
	}
	data, err := t.output(ctx, t.applied)
	if err != nil {
		return nil, err
	}
	if !t.sum.Matches(data) {
		return nil, errRenderedOther
	}
	return t.stageFile(data)
}

// check runs the target's check command against the staged output.
func (s *staged) check(ctx context.Context, gen int64) error {
	if s.t.spec.Check == "" || !s.changed {
		return nil
	}
	_, err := runCommand(ctx, s.t.c.CheckCommand(s.path, gen))
	return err
}

// reload runs the target's reload command after its output changed.
func (t *target) reload(ctx context.Context, gen int64) (string, error) {
	if t.spec.Reload == "" {
		return "", nil
	}
	return runCommand(ctx, targets.Command{Kind: "reload", Target: t.spec.Name, Script: t.spec.Reload,
		Dest: t.spec.Dest, Generation: gen, Timeout: t.spec.Timeout})
}

// stageAll stages snap for every target of ts, the targets side by side
// (each writes and fsyncs only its own staged output, so their fsyncs
// overlap), and returns each one's staged output or error, in ts's order.
// ctx interrupts the renders.
func stageAll(ctx context.Context, snap Snapshot, ts []*target) ([]*staged, []error) {
	stages, errs := make([]*staged, len(ts)), make([]error, len(ts))
	if len(ts) == 1 {
		stages[0], errs[0] = ts[0].stage(ctx, snap)
		return stages, errs
	}
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() { stages[i], errs[i] = t.stage(ctx, snap) })
	}
	wg.Wait()
	return stages, errs
}

// commitAll commits every changed staged output of ss, side by side (each
// swap is its own target's: their directory fsyncs overlap), aborts the
// unchanged ones, and returns each one's commit error, in ss's order.
// Every output is checked and the pending reloads are on disk before it
// runs, as when they were committed one after the other.
//
// The first changed output is committed on the calling goroutine, the
// others on their own: so the swaps start in the configuration's order.
// (Started on goroutines alone, on the agent's one processor the last one
// started would run first, and the first would wait for a hand-off.)
func commitAll(ss []*staged) []error {
	errs := make([]error, len(ss))
	first := -1
	var wg sync.WaitGroup
	for i, s := range ss {
		if !s.changed {
			s.abort()
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		wg.Go(func() { _, errs[i] = s.commit() })
	}
	if first >= 0 {
		_, errs[first] = ss[first].commit()
	}
	wg.Wait()
	return errs
}

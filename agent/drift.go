package agent

import (
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/watchdirs"
)

// driftDebounce groups the burst of events one edit (or one of our own
// applies) produces into one repair pass.
const driftDebounce = 200 * time.Millisecond

// driftWatcher reports changes to the targets' outputs. It watches the
// directory holding each file or template output, and for dir targets the
// directory, its current generation directory (editing dir/name writes
// through the link into it) and every sub-directory of the tree it holds.
//
// Our own writes show up too. A file or template target's rename into
// place is recognised (expect): the event's file is compared with what
// the renderer committed there, and one that holds it is no drift, so an
// apply does not cost a repair pass of its own a debounce later (a
// separate wake-up of the whole process, measured at a tenth of the
// agent's CPU per publish). A change made after that comparison is an
// event of its own. Other events of ours (a dir target's entries, the
// sweep) either carry our own names (ownName) or cost a pass that finds
// nothing to fix.
type driftWatcher struct {
	w       *fsnotify.Watcher
	log     *slog.Logger
	watched map[string]bool
	out     chan struct{}
	// armed is a request for a pass, debounced with the events.
	armed chan struct{}
	done  chan struct{}

	// expected holds, by destination path, the output last committed to
	// each file or template target (expect); guarded by mu.
	mu       sync.Mutex
	expected map[string]expectedFile
	// passed, when set (tests), is told the name of every event that
	// starts a (debounced) pass.
	passed func(name string)
}

// expectedFile is an output the renderer committed: its digest (not its
// bytes, which the renderer does not keep either) and the mode and owner
// it was given.
type expectedFile struct {
	sum  render.Digest
	opts render.FileOptions
}

func newDriftWatcher(log *slog.Logger) (*driftWatcher, error) {
	return newDriftWatcherFunc(log, nil)
}

// newDriftWatcherFunc is newDriftWatcher with passed set (see
// driftWatcher.passed).
func newDriftWatcherFunc(log *slog.Logger, passed func(name string)) (*driftWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	d := &driftWatcher{w: w, log: log, watched: map[string]bool{},
		out: make(chan struct{}, 1), armed: make(chan struct{}, 1), done: make(chan struct{}),
		expected: map[string]expectedFile{}, passed: passed}
	go d.loop()
	return d, nil
}

// expect records that the renderer is about to rename the content sum
// stands for into place at path (a file or template target's
// destination): an event naming path whose file then holds it, with opts'
// mode and owner, is the rename's own. Called before the rename, so that its event never finds the
// previous output expected.
func (d *driftWatcher) expect(path string, sum render.Digest, opts render.FileOptions) {
	d.mu.Lock()
	d.expected[filepath.Clean(path)] = expectedFile{sum: sum, opts: opts}
	d.mu.Unlock()
}

// ours reports whether the file an event names holds what the renderer
// last committed there: read and compared, as the repair pass would (a
// rename's event arrives while the file is new, when its identity alone
// cannot vouch for its content). An error or a mismatch is not ours.
func (d *driftWatcher) ours(name string) bool {
	d.mu.Lock()
	e, ok := d.expected[filepath.Clean(name)]
	d.mu.Unlock()
	if !ok {
		return false
	}
	same, err := render.MatchesDigest(name, e.sum, e.opts)
	return err == nil && same
}

func (d *driftWatcher) events() <-chan struct{} { return d.out }

// watch makes the watch set match dirs (Renderer.driftDirs) and reports
// whether it armed a new watch, and which directories of dirs were not
// watched before (fresh: those it watches now and those it failed to).
// Called from the daemon's goroutine only. After a new watch the caller
// runs one repair pass (at once after an apply, in the apply's own
// wake-up; arm after a repair): a change made between the write and the
// watch would otherwise go unseen. Only fresh directories can hold such a
// change: one watched before reported it as an event.
func (d *driftWatcher) watch(dirs []string) (added bool, fresh map[string]bool) {
	want := make(map[string]bool, len(dirs))
	fresh = map[string]bool{}
	for _, dir := range dirs {
		want[dir] = true
		if !d.watched[dir] {
			fresh[dir] = true
		}
	}
	added = watchdirs.Sync(d.w, d.watched, want, func(p string, err error) {
		d.log.Warn("drift watch not set", "path", p, "error", err)
	})
	return added, fresh
}

// isWatched reports whether dir is in the watch set. Called from the
// daemon's goroutine only.
func (d *driftWatcher) isWatched(dir string) bool { return d.watched[dir] }

// arm asks for a repair pass, debounced like an event.
func (d *driftWatcher) arm() {
	select {
	case d.armed <- struct{}{}:
	default:
	}
}

func (d *driftWatcher) signal() {
	select {
	case d.out <- struct{}{}:
	default:
	}
}

// ownName reports whether a file name is one the writers create while
// staging (temp files, timestamped and temporary directories and links):
// their events are ours, and reacting to them would loop forever.
func ownName(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, "..") || strings.Contains(base, ".zkconf-tmp")
}

func (d *driftWatcher) loop() {
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-d.done:
			return
		case <-d.armed:
			if timer == nil {
				timer = time.NewTimer(driftDebounce)
				fire = timer.C
			}
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			// Any other change in a watched directory starts a repair
			// pass: the pass compares content and is a no-op for
			// unrelated files, which keeps this loop free of shared state.
			// With a pass already due there is nothing to tell apart
			// (nor a file to read per event of a burst).
			if timer != nil || ownName(ev.Name) || d.ours(ev.Name) {
				continue
			}
			if d.passed != nil {
				d.passed(ev.Name)
			}
			timer = time.NewTimer(driftDebounce)
			fire = timer.C
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			d.log.Warn("file watch error", "error", err)
			// Events may be lost (the kernel's queue overflowed): a
			// pass looks at everything, the dir targets' links too,
			// which writes trust while they are watched.
			if timer == nil {
				timer = time.NewTimer(driftDebounce)
				fire = timer.C
			}
		case <-fire:
			timer, fire = nil, nil
			d.signal()
		}
	}
}

func (d *driftWatcher) close() {
	close(d.done)
	_ = d.w.Close()
}

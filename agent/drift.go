package agent

import (
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/zkconf/zkconf/internal/watchdirs"
)

// driftDebounce groups the burst of events one edit (or one of our own
// applies) produces into one repair pass.
const driftDebounce = 200 * time.Millisecond

// driftWatcher reports changes to the targets' outputs. It watches the
// directory holding each file or template output, and for dir targets the
// directory, its current generation directory (editing dir/name writes
// through the link into it) and every sub-directory of the tree it holds. Our own writes show up too; the repair pass
// that follows finds nothing to fix, which is cheaper than telling events
// apart.
type driftWatcher struct {
	w       *fsnotify.Watcher
	log     *slog.Logger
	watched map[string]bool
	out     chan struct{}
	// armed is watch's request for a pass, debounced with the events.
	armed chan struct{}
	done  chan struct{}
}

func newDriftWatcher(log *slog.Logger) (*driftWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	d := &driftWatcher{w: w, log: log, watched: map[string]bool{},
		out: make(chan struct{}, 1), armed: make(chan struct{}, 1), done: make(chan struct{})}
	go d.loop()
	return d, nil
}

func (d *driftWatcher) events() <-chan struct{} { return d.out }

// watch makes the watch set match dirs (Renderer.driftDirs). Called from
// the daemon's goroutine only. When it arms a new watch it also asks for
// one repair pass: a change made between the write and the watch would
// otherwise go unseen. The request is debounced like an event: an apply
// arms the watch of its new generation directory and its own writes
// (a template target's rename) are events too, and one pass covers both
// (each pass lists and lstats every output: most of what an apply of a
// small change cost).
func (d *driftWatcher) watch(dirs []string) {
	want := make(map[string]bool, len(dirs))
	for _, dir := range dirs {
		want[dir] = true
	}
	if watchdirs.Sync(d.w, d.watched, want, func(p string, err error) {
		d.log.Warn("drift watch not set", "path", p, "error", err)
	}) {
		select {
		case d.armed <- struct{}{}:
		default:
		}
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
			if ownName(ev.Name) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(driftDebounce)
				fire = timer.C
			}
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			d.log.Warn("file watch error", "error", err)
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

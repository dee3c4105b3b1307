// Package watch is the machinery of `confpush watch`: a leader-elected,
// fenced publisher of one directory. Several processes campaign on one
// election node; the leader publishes the directory at the start of its
// term and after every (debounced) change, each commit fenced by its
// election node, and drives each change as a canary rollout when asked
// to. The command owns the flags and the exit code; this package owns
// the loop and prints its progress lines to Config.Out.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/zkconf/zkconf/cmd/confpush/internal/election"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/watchdirs"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
	"github.com/zkconf/zkconf/zkclient"
)

// Config is one watch: what it publishes, through what, and how.
type Config struct {
	Client    *zkclient.Client
	Publisher *publish.Publisher
	Fleet     *fleet.Fleet
	// Election is the election directory of the root.
	Election string
	// Dir is the directory published; Load and Syntax read and check it
	// as publish does.
	Dir    string
	Load   publish.LoadOptions
	Syntax bool
	// Debounce is the quiet time after the last change before a publish;
	// Timeout bounds one publish (not its rollout's drive).
	Debounce, Timeout time.Duration
	Supersede         bool
	AllowOldAgents    bool
	// Canary and Plan make every change a canary rollout the leader
	// drives (both nil: plain publishes). AllowEmptyCanary accepts a
	// selection of no expected agent.
	Canary           *manifest.Selection
	Plan             *publish.RolloutPlan
	AllowEmptyCanary bool
	// Out receives the progress lines; Log the log records.
	Out io.Writer
	Log *slog.Logger
	// Ignored prints the ignored entries of a read of Dir (called when
	// they change); Progress one event of a rollout's driver.
	Ignored  func(ignored []string)
	Progress func(ev rollout.Event, nSteps int)
}

// ErrLeadershipLost ends a term.
var ErrLeadershipLost = errors.New("leadership lost")

// Run campaigns, leads and campaigns again after a lost term, until ctx
// ends (nil).
func Run(ctx context.Context, c Config) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(c.Dir); err != nil {
		return fmt.Errorf("watch %s: %w", c.Dir, err)
	}
	host, _ := os.Hostname()
	cand := election.New(c.Client, c.Election, []byte(fmt.Sprintf("%s pid %d", host, os.Getpid())), nil)
	// The sub-directories of the tree are watched too, as each read of
	// the directory finds them.
	l := &leader{Config: c, w: w, watched: map[string]bool{c.Dir: true}}
	for ctx.Err() == nil {
		c.Log.Info("campaigning for leadership", "election", c.Election)
		lead, err := cand.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		c.Log.Info("leading: publishing on changes", "node", lead.Node)
		fmt.Fprintf(c.Out, "leader (%s): watching %s\n", lead.Node, c.Dir)
		if lost := l.lead(ctx, lead); lost != nil {
			c.Log.Warn("leadership lost; campaigning again", "reason", lost)
			fmt.Fprintf(c.Out, "leadership lost: %v\n", lost)
		}
	}
	return nil
}

// leader is a watch between and across its terms.
type leader struct {
	Config
	w       *fsnotify.Watcher
	watched map[string]bool
}

// lead publishes the directory on every change while this process leads.
// It returns when ctx ends (nil) or leadership is lost (the reason).
func (l *leader) lead(ctx context.Context, lead election.Leadership) error {
	sess := l.Client.Session()
	publishNow := true // the directory may have changed while we did not lead
	ws := &state{}
	var timer <-chan time.Time
	for {
		// While disconnected, publishing is suspended: a pending
		// publish waits for the session to come back (a write sent on a
		// lost connection has an unknown outcome, which only the session
		// can resolve).
		if publishNow && !sess.Status().Connected {
			l.Log.Info("publish pending until reconnected")
		}
		if publishNow && sess.Status().Connected {
			publishNow = false
			err := l.publishDir(ctx, lead.Node, ws)
			want := map[string]bool{l.Dir: true}
			for _, d := range ws.dirs {
				want[filepath.Join(l.Dir, d)] = true
			}
			if watchdirs.Sync(l.w, l.watched, want, func(d string, err error) {
				l.Log.Warn("sub-directory not watched", "dir", d, "error", err)
			}) {
				// A file written into a new sub-directory before its
				// watch: read the directory again.
				timer = time.After(l.Debounce)
			}
			if err != nil {
				var refused refusedError
				switch {
				case errors.Is(err, publish.ErrFenced):
					return fmt.Errorf("%w: %v", ErrLeadershipLost, err)
				case errors.As(err, &refused):
					l.Log.Error("directory refused; nothing published (the next change is tried again)", "error", refused.err)
					fmt.Fprintf(l.Out, "publish refused: %v\n", refused.err)
				case errors.As(err, new(*rollout.EmptySelectionError)):
					l.Log.Error("canary refused; nothing published (the next change is tried again)", "error", err)
					fmt.Fprintf(l.Out, "publish refused: %v\n", err)
				default:
					l.Log.Error("publish failed", "error", err)
					fmt.Fprintf(l.Out, "publish failed: %v\n", err)
				}
			}
		}
		changed := sess.Changed()
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-l.w.Events:
			if !ok {
				return errors.New("file watcher closed")
			}
			l.Log.Debug("change", "path", ev.Name, "op", ev.Op.String())
			timer = time.After(l.Debounce)
		case err := <-l.w.Errors:
			l.Log.Warn("file watch error", "error", err)
		case <-timer:
			timer = nil
			publishNow = true
		case <-changed:
			if st := sess.Status(); st.Connected && !publishNow && st.Expiries > 0 && st.Epoch != lead.Epoch {
				// A new session after an expiry: our election node is
				// probably gone. With a publish pending, the fence on its
				// commit decides; otherwise look, and campaign again if it
				// is gone so this process stands by as a follower.
				if ok, _, err := l.Client.Conn().Exists(lead.Node); err == nil && !ok {
					return fmt.Errorf("%w: election node %s gone (session expired)", ErrLeadershipLost, lead.Node)
				}
			}
		}
	}
}

// state is what a leader remembers between its publishes.
type state struct {
	// known is the live generation this term published or already
	// reported (0: none yet, at the start of a term).
	known int64
	// heldAt is the live rollback generation whose replaced content the
	// directory was last found to hold (reported once).
	heldAt int64
	// drive is the canary rollout just started, for the leader to drive;
	// aborted is the content of the last set its driver aborted (not
	// published again until the directory changes).
	drive   *started
	aborted string
	// ignored is the list of ignored entries last reported.
	ignored string
	// dirs are the sub-directories the last read of the directory found.
	dirs []string
}

// started is a rollout a watch leader started and drives.
type started struct {
	res   *publish.Result
	items map[string][]byte
}

// refusedError is a directory state that does not validate.
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

// publishDir validates the directory and publishes it fenced by the
// leader's node, unless it equals the live generation (unchanged) or
// holds the content a live rollback replaced (held back). The publish
// expects the live generation it judged, so the warning naming the
// generation it replaces is true; a publish landing in between is judged
// again.
func (l *leader) publishDir(ctx context.Context, fence string, ws *state) error {
	c, err := publish.LoadDirContents(l.Dir, l.Load)
	items := c.Items
	ws.dirs = c.Dirs
	if ig := strings.Join(c.Ignored, ", "); ig != ws.ignored {
		ws.ignored = ig
		if ig != "" {
			l.Log.Info("ignoring files matching the ignore patterns", "files", ig)
		}
		if l.Ignored != nil {
			l.Ignored(c.Ignored)
		}
	}
	if err == nil {
		err = publish.Validate(items, publish.ValidateOptions{Syntax: l.Syntax})
	}
	if err != nil {
		return refusedError{err}
	}
	pctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := l.publishJudged(pctx, items, fence, ws)
		if err == nil && ws.drive != nil {
			return l.drive(ctx, fence, ws)
		}
		if !errors.Is(err, publish.ErrConflict) || attempt == attempts {
			return err
		}
		l.Log.Info("another publish landed while judging the directory; judging again", "error", err)
	}
}

// publishJudged is one attempt of publishDir against the live generation.
func (l *leader) publishJudged(ctx context.Context, items map[string][]byte, fence string, ws *state) error {
	live, _, err := l.Publisher.Current(ctx)
	if errors.Is(err, publish.ErrNotPublished) {
		live, err = nil, nil
	}
	if err != nil {
		return err
	}
	var expect int64
	if live != nil && !sameContent(items, live) {
		expect = live.Generation
		held, err := holdsReplaced(ctx, l.Publisher, items, live)
		if err != nil {
			return err
		}
		if held {
			if ws.heldAt != live.Generation {
				ws.heldAt, ws.known = live.Generation, live.Generation
				l.Log.Warn("not republishing: the directory still holds the content the live rollback replaced; change the directory to publish again",
					"live_generation", live.Generation, "rollback_of", live.RollbackOf, "replaced_generation", live.Generation-1)
				fmt.Fprintf(l.Out, "not republishing: live generation %d is a rollback to generation %d, and the directory still holds generation %d's content, which that rollback replaced; change the directory to publish it (or run 'confpush publish' on it to undo the rollback)\n",
					live.Generation, live.RollbackOf, live.Generation-1)
			}
			return nil
		}
		if live.Generation != ws.known {
			rollback := ""
			if live.RollbackOf > 0 {
				rollback = fmt.Sprintf(", a rollback to generation %d", live.RollbackOf)
			}
			l.Log.Warn(fmt.Sprintf("the directory differs from live generation %d%s, which this watch did not publish: publishing the directory replaces generation %d",
				live.Generation, rollback, live.Generation),
				"replaces_generation", live.Generation, "published_by", live.Publisher, "published_at", live.PublishedAt)
		}
	}
	req := publish.Request{Items: items, Fence: fence, ExpectGeneration: expect, Supersede: l.Supersede,
		AllowOldAgents: l.AllowOldAgents}
	if skip := l.canaryRequest(&req, live, ws); skip {
		return nil
	}
	res, err := rollout.Start(ctx, l.Publisher, l.Fleet, req, l.AllowEmptyCanary)
	if err != nil {
		return err
	}
	if req.Canary != nil {
		ws.drive = &started{res: res, items: items}
	}
	ws.known = res.Generation
	switch {
	case res.Unchanged:
		fmt.Fprintf(l.Out, "unchanged at generation %d\n", res.Generation)
	case req.Canary != nil:
		fmt.Fprintf(l.Out, "started a canary rollout: candidate generation %d for selection %s (%d added, %d changed, %d removed)\n",
			res.Generation, publish.DescribeSelection(*req.Canary), len(res.Added), len(res.Changed), len(res.Removed))
	default:
		fmt.Fprintf(l.Out, "published generation %d (%d added, %d changed, %d removed)\n",
			res.Generation, len(res.Added), len(res.Changed), len(res.Removed))
	}
	return nil
}

// holdsReplaced reports whether live is a rollback and items equal the
// generation it replaced (the one before it).
func holdsReplaced(ctx context.Context, p *publish.Publisher, items map[string][]byte, live *manifest.Manifest) (bool, error) {
	if live.RollbackOf == 0 {
		return false, nil
	}
	hist, err := p.History(ctx)
	if err != nil {
		return false, err
	}
	for _, m := range hist {
		if m.Generation == live.Generation-1 {
			return sameContent(items, m), nil
		}
	}
	return false, nil // not retained: nothing to compare with
}

// sameContent reports whether items are exactly m's items.
func sameContent(items map[string][]byte, m *manifest.Manifest) bool {
	if len(items) != len(m.Items) {
		return false
	}
	for n, data := range items {
		if !m.Matches(n, data) {
			return false
		}
	}
	return true
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/election"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/watchdirs"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

func (a *app) watchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch DIR",
		Short: "Publish DIR whenever it changes (leader-elected, fenced)",
		Long: `watch publishes DIR once at start and then whenever it changes (fsnotify,
debounced). Several watch processes may run for availability: they elect one
leader and only the leader publishes. Every commit of the leader carries a
check that its election node still exists, so a leader whose session expired
cannot publish even before it learns it lost; while disconnected it suspends
publishing. It runs until SIGINT or SIGTERM (--timeout does not apply).
DIR is the source of truth: a file removed from it is removed from the root
(watch implies publish --prune). DIR is read as publish reads it (its
sub-directories as item paths, each of them watched too): editor
and tool leftovers (backups such as app.conf~, autosaves such as
#app.conf#, swap and temporary files) are skipped and named (--ignore adds
patterns, --no-default-ignore drops the defaults), and a symbolic link
whose target resolves outside DIR is refused unless
--follow-external-symlinks (a link to /etc/shadow would publish it to every
host, and keep it in history).

Every state of DIR is validated as publish validates it (--no-validate skips
the .json/.yaml/.toml syntax check): a bad state is refused with its problems
logged and nothing published; the next good state is published.

At start (and whenever it becomes leader) a DIR equal to the live generation
publishes nothing. A DIR that differs is published (DIR is watch's source of
truth), with a warning naming the generation it replaces, and saying so when
that generation is a rollback. One exception: when the live generation is a
rollback and DIR still holds exactly the content of the generation that
rollback replaced, watch does not publish it again (that would silently undo
the rollback); it says so and publishes once DIR's content changes.

With --canary SELECTOR (or --canary-percent, --canary-agents) and --auto
or --steps, each change is published as a canary rollout that the leader
drives as 'publish --auto' does (abort on the first failing canary agent,
promote after --bake), its commits fenced by its election node. Content
the driver aborted is not tried again until DIR changes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return a.watch(ctx, args[0])
		},
	}
	cmd.Flags().Duration("debounce", 500*time.Millisecond, "quiet time after the last change before publishing")
	cmd.Flags().Bool("flatten", false, "name the files of sub-directories dir_file (a flat set) instead of by their path dir/file")
	inputFlags(cmd)
	validateFlags(cmd)
	supersedeFlag(cmd)
	allowOldAgentsFlag(cmd)
	watchCanaryFlags(cmd)
	return cmd
}

func (a *app) watch(ctx context.Context, dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("watch: %s is not a directory", dir)
	}
	if err := errlist.Join(a.watchCanaryPlan(), publish.CheckIgnore(a.loadOptions())); err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	// The sub-directories of the tree are watched too, as each read of
	// the directory finds them.
	watched := map[string]bool{dir: true}
	cl, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Conn().Close()
	p, err := publish.New(cl, a.v.GetString("root"),
		publish.WithMeta(a.v.GetString("meta")), publish.WithLogger(a.log))
	if err != nil {
		return usageError{err}
	}
	a.warnOpenRoot(cl.Conn())
	host, _ := os.Hostname()
	cand := election.New(cl, a.paths().Election(), []byte(fmt.Sprintf("%s pid %d", host, os.Getpid())), nil)
	debounce := a.v.GetDuration("debounce")
	opts := a.loadOptions()

	for ctx.Err() == nil {
		a.log.Info("campaigning for leadership", "election", a.paths().Election())
		lead, err := cand.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		a.log.Info("leading: publishing on changes", "node", lead.Node)
		fmt.Fprintf(a.stdout, "leader (%s): watching %s\n", lead.Node, dir)
		lost := a.lead(ctx, p, cl, lead, w, watched, dir, debounce, opts)
		if lost != nil {
			a.log.Warn("leadership lost; campaigning again", "reason", lost)
			fmt.Fprintf(a.stdout, "leadership lost: %v\n", lost)
		}
	}
	return nil
}

// errLeadershipLost ends a term.
var errLeadershipLost = errors.New("leadership lost")

// lead publishes dir on every change while this process leads. It returns
// when ctx ends (nil) or leadership is lost (the reason).
func (a *app) lead(ctx context.Context, p *publish.Publisher, cl *zkclient.Client, lead election.Leadership,
	w *fsnotify.Watcher, watched map[string]bool, dir string, debounce time.Duration, opts publish.LoadOptions) error {
	sess := cl.Session()
	publishNow := true // the directory may have changed while we did not lead
	ws := &watchState{}
	var timer <-chan time.Time
	for {
		// While disconnected, publishing is suspended: a pending
		// publish waits for the session to come back (a write sent on a
		// lost connection has an unknown outcome, which only the session
		// can resolve).
		if publishNow && !sess.Status().Connected {
			a.log.Info("publish pending until reconnected")
		}
		if publishNow && sess.Status().Connected {
			publishNow = false
			err := a.publishDir(ctx, p, dir, opts, lead.Node, ws)
			want := map[string]bool{dir: true}
			for _, d := range ws.dirs {
				want[filepath.Join(dir, d)] = true
			}
			if watchdirs.Sync(w, watched, want, func(d string, err error) {
				a.log.Warn("sub-directory not watched", "dir", d, "error", err)
			}) {
				// A file written into a new sub-directory before its
				// watch: read the directory again.
				timer = time.After(debounce)
			}
			if err != nil {
				var refused dirRefusedError
				switch {
				case errors.Is(err, publish.ErrFenced):
					return fmt.Errorf("%w: %v", errLeadershipLost, err)
				case errors.As(err, &refused):
					a.log.Error("directory refused; nothing published (the next change is tried again)", "error", refused.err)
					fmt.Fprintf(a.stdout, "publish refused: %v\n", refused.err)
				default:
					a.log.Error("publish failed", "error", err)
					fmt.Fprintf(a.stdout, "publish failed: %v\n", err)
				}
			}
		}
		changed := sess.Changed()
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("file watcher closed")
			}
			a.log.Debug("change", "path", ev.Name, "op", ev.Op.String())
			timer = time.After(debounce)
		case err := <-w.Errors:
			a.log.Warn("file watch error", "error", err)
		case <-timer:
			timer = nil
			publishNow = true
		case <-changed:
			if st := sess.Status(); st.Connected && !publishNow && st.Expiries > 0 && st.Epoch != lead.Epoch {
				// A new session after an expiry: our election node is
				// probably gone. With a publish pending, the fence on its
				// commit decides; otherwise look, and campaign again if it
				// is gone so this process stands by as a follower.
				if ok, _, err := cl.Conn().Exists(lead.Node); err == nil && !ok {
					return fmt.Errorf("%w: election node %s gone (session expired)", errLeadershipLost, lead.Node)
				}
			}
		}
	}
}

// watchState is what a leader remembers between its publishes.
type watchState struct {
	// known is the live generation this term published or already
	// reported (0: none yet, at the start of a term).
	known int64
	// heldAt is the live rollback generation whose replaced content the
	// directory was last found to hold (reported once).
	heldAt int64
	// drive is the canary rollout just started, for the leader to drive;
	// aborted is the content of the last set its driver aborted (not
	// published again until the directory changes).
	drive   *watchRollout
	aborted string
	// ignored is the list of ignored entries last reported.
	ignored string
	// dirs are the sub-directories the last read of the directory found.
	dirs []string
}

// dirRefusedError is a directory state that does not validate.
type dirRefusedError struct{ err error }

func (e dirRefusedError) Error() string { return e.err.Error() }
func (e dirRefusedError) Unwrap() error { return e.err }

// publishDir validates dir and publishes it fenced by the leader's node,
// unless it equals the live generation (unchanged) or holds the content a
// live rollback replaced (held back, see watchCommand). The publish
// expects the live generation it judged, so the warning naming the
// generation it replaces is true; a publish landing in between is judged
// again.
func (a *app) publishDir(ctx context.Context, p *publish.Publisher, dir string, opts publish.LoadOptions, fence string, ws *watchState) error {
	c, err := publish.LoadDirContents(dir, opts)
	items := c.Items
	ws.dirs = c.Dirs
	if ig := strings.Join(c.Ignored, ", "); ig != ws.ignored {
		ws.ignored = ig
		if ig != "" {
			a.log.Info("ignoring files matching the ignore patterns", "files", ig)
		}
		ignoredLine(a.stdout, c.Ignored, nil)
	}
	if err == nil {
		err = publish.Validate(items, publish.ValidateOptions{Syntax: a.validating()})
	}
	if err != nil {
		return dirRefusedError{err}
	}
	pctx, cancel := context.WithTimeout(ctx, a.v.GetDuration("timeout"))
	defer cancel()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := a.publishJudged(pctx, p, items, fence, ws)
		if err == nil && ws.drive != nil {
			return a.watchDrive(ctx, p, fence, ws)
		}
		if !errors.Is(err, publish.ErrConflict) || attempt == attempts {
			return err
		}
		a.log.Info("another publish landed while judging the directory; judging again", "error", err)
	}
}

// publishJudged is one attempt of publishDir against the live generation.
func (a *app) publishJudged(ctx context.Context, p *publish.Publisher, items map[string][]byte, fence string, ws *watchState) error {
	live, _, err := p.Current(ctx)
	if errors.Is(err, publish.ErrNotPublished) {
		live, err = nil, nil
	}
	if err != nil {
		return err
	}
	var expect int64
	if live != nil && !sameContent(items, live) {
		expect = live.Generation
		held, err := a.holdsReplaced(ctx, p, items, live)
		if err != nil {
			return err
		}
		if held {
			if ws.heldAt != live.Generation {
				ws.heldAt, ws.known = live.Generation, live.Generation
				a.log.Warn("not republishing: the directory still holds the content the live rollback replaced; change the directory to publish again",
					"live_generation", live.Generation, "rollback_of", live.RollbackOf, "replaced_generation", live.Generation-1)
				fmt.Fprintf(a.stdout, "not republishing: live generation %d is a rollback to generation %d, and the directory still holds generation %d's content, which that rollback replaced; change the directory to publish it (or run 'confpush publish' on it to undo the rollback)\n",
					live.Generation, live.RollbackOf, live.Generation-1)
			}
			return nil
		}
		if live.Generation != ws.known {
			rollback := ""
			if live.RollbackOf > 0 {
				rollback = fmt.Sprintf(", a rollback to generation %d", live.RollbackOf)
			}
			a.log.Warn(fmt.Sprintf("the directory differs from live generation %d%s, which this watch did not publish: publishing the directory replaces generation %d",
				live.Generation, rollback, live.Generation),
				"replaces_generation", live.Generation, "published_by", live.Publisher, "published_at", live.PublishedAt)
		}
	}
	req := publish.Request{Items: items, Fence: fence, ExpectGeneration: expect, Supersede: a.v.GetBool("supersede"),
		AllowOldAgents: a.v.GetBool("allow-old-agents")}
	if skip := a.watchCanaryRequest(&req, live, ws); skip {
		return nil
	}
	res, err := p.Publish(ctx, req)
	if err != nil {
		return err
	}
	if req.Canary != nil {
		ws.drive = &watchRollout{res: res, items: items}
	}
	ws.known = res.Generation
	switch {
	case res.Unchanged:
		fmt.Fprintf(a.stdout, "unchanged at generation %d\n", res.Generation)
	case req.Canary != nil:
		fmt.Fprintf(a.stdout, "started a canary rollout: candidate generation %d for selection %s (%d added, %d changed, %d removed)\n",
			res.Generation, publish.DescribeSelection(*req.Canary), len(res.Added), len(res.Changed), len(res.Removed))
	default:
		fmt.Fprintf(a.stdout, "published generation %d (%d added, %d changed, %d removed)\n",
			res.Generation, len(res.Added), len(res.Changed), len(res.Removed))
	}
	return nil
}

// holdsReplaced reports whether live is a rollback and items equal the
// generation it replaced (the one before it).
func (a *app) holdsReplaced(ctx context.Context, p *publish.Publisher, items map[string][]byte, live *manifest.Manifest) (bool, error) {
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

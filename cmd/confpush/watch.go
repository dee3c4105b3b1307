package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/election"
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
(watch implies publish --prune).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return a.watch(ctx, args[0])
		},
	}
	cmd.Flags().Duration("debounce", 500*time.Millisecond, "quiet time after the last change before publishing")
	cmd.Flags().Bool("flatten", false, "read sub-directories, dir/file as the item dir_file")
	return cmd
}

func (a *app) watch(ctx context.Context, dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("watch: %s is not a directory", dir)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	conn, sess, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	p, err := publish.New(conn, sess, a.v.GetString("root"),
		publish.WithMeta(a.v.GetString("meta")), publish.WithLogger(a.log))
	if err != nil {
		return usageError{err}
	}
	host, _ := os.Hostname()
	cand := election.New(conn, sess, a.paths().Election(), []byte(fmt.Sprintf("%s pid %d", host, os.Getpid())), nil)
	debounce := a.v.GetDuration("debounce")
	flatten := a.v.GetBool("flatten")

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
		lost := a.lead(ctx, p, sess, lead, w, dir, debounce, flatten)
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
func (a *app) lead(ctx context.Context, p *publish.Publisher, sess *zkclient.Session, lead election.Leadership,
	w *fsnotify.Watcher, dir string, debounce time.Duration, flatten bool) error {
	publishNow := true // the directory may have changed while we did not lead
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
			if err := a.publishDir(ctx, p, dir, flatten, lead.Node); err != nil {
				if errors.Is(err, publish.ErrFenced) {
					return fmt.Errorf("%w: %v", errLeadershipLost, err)
				}
				a.log.Error("publish failed", "error", err)
				fmt.Fprintf(a.stdout, "publish failed: %v\n", err)
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
				if ok, _, err := p.Conn().Exists(lead.Node); err == nil && !ok {
					return fmt.Errorf("%w: election node %s gone (session expired)", errLeadershipLost, lead.Node)
				}
			}
		}
	}
}

// publishDir publishes dir fenced by the leader's node.
func (a *app) publishDir(ctx context.Context, p *publish.Publisher, dir string, flatten bool, fence string) error {
	items, err := publish.LoadDir(dir, publish.LoadOptions{Flatten: flatten})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, a.v.GetDuration("timeout"))
	defer cancel()
	res, err := p.Publish(pctx, publish.Request{Items: items, Fence: fence})
	if err != nil {
		return err
	}
	if res.Unchanged {
		fmt.Fprintf(a.stdout, "unchanged at generation %d\n", res.Generation)
	} else {
		fmt.Fprintf(a.stdout, "published generation %d (%d added, %d changed, %d removed)\n",
			res.Generation, len(res.Added), len(res.Changed), len(res.Removed))
	}
	return nil
}

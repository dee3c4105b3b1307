package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/confpush/internal/watch"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
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
the driver aborted is not tried again until DIR changes. A selection that
selects no expected agent is refused as publish refuses it (unless
--allow-empty-canary): nothing is published, and the next change is
judged again.`,
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
	cl, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Conn().Close()
	p, err := a.publisher(cl)
	if err != nil {
		return err
	}
	f, err := a.fleetOf(cl)
	if err != nil {
		return usageError{err}
	}
	a.warnOpenRoot(ctx, cl.Conn())
	c := watch.Config{
		Client: cl, Publisher: p, Fleet: f, Election: a.paths().Election(),
		Dir: dir, Load: a.loadOptions(), Syntax: a.validating(),
		Debounce: a.v.GetDuration("debounce"), Timeout: a.v.GetDuration("timeout"),
		Supersede: a.v.GetBool("supersede"), AllowOldAgents: a.v.GetBool("allow-old-agents"),
		AllowEmptyCanary: a.v.GetBool("allow-empty-canary"),
		Out:              a.stdout, Log: a.log,
		Ignored:  func(ignored []string) { ignoredLine(a.stdout, ignored, nil) },
		Progress: func(ev rollout.Event, nSteps int) { driverLine(a.stdout, ev, nSteps) },
	}
	if sel, err := a.canarySelection(); err == nil {
		if sel, rp, err := a.driverPlan(sel); err == nil && rp != nil {
			c.Canary, c.Plan = sel, rp
		}
	}
	return watch.Run(ctx, c)
}

// watchCanaryFlags registers watch's canary flags: each change becomes a
// rollout the leader drives.
func watchCanaryFlags(cmd *cobra.Command) {
	canaryFlags(cmd)
	driverFlags(cmd)
}

// watchCanaryPlan checks watch's canary flags: a canary from watch must be
// driven (--auto or --steps), since a rollout left by hand would refuse
// every later change.
func (a *app) watchCanaryPlan() error {
	sel, err := a.canarySelection()
	if err != nil {
		return err
	}
	if sel != nil && !a.v.GetBool("auto") && a.v.GetString("steps") == "" {
		return usagef("watch --canary needs --auto or --steps: every change is a rollout the leader drives")
	}
	_, _, err = a.driverPlan(sel)
	return err
}

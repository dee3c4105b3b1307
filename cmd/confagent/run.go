package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/hashicorp/go-multierror"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/buildinfo"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/timerslack"
	"github.com/zkconf/zkconf/zkclient"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1
	exitUsage  = 2
	exitConfig = 3
)

type flags struct {
	config    string
	once      bool
	dryRun    bool
	noCheck   bool
	timeout   time.Duration
	logLevel  string
	logFormat string
	// reexec: the daemon may execute the program again
	// (timerslack.Raise); main's run only, not a flag.
	reexec bool
}

// run is the whole program, callable from tests: it never executes the
// program again (that would start the test binary over).
func run(args []string, stdout, stderr io.Writer) int {
	return runProgram(args, stdout, stderr, false)
}

// runProgram is the whole program; with reexec (main's) the daemon may
// execute itself again at start to raise its timer slack.
func runProgram(args []string, stdout, stderr io.Writer, reexec bool) int {
	// The logger writes from the cache's and the daemon's goroutines while
	// run prints from its own: serialise, since an io.Writer (a test's
	// bytes.Buffer, say) need not be safe for concurrent use.
	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	root, code := command(stdout, stderr, reexec)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitUsage
	}
	return *code
}

// command builds confagent's command tree, writing to stdout and stderr;
// the int it returns is the exit code its commands set when they run. It
// is apart from runProgram so that the tests reach the very tree run
// executes (the CLI reference is generated from it) without the shipped
// binary linking the reference's generator.
func command(stdout, stderr io.Writer, reexec bool) (*cobra.Command, *int) {
	f := flags{reexec: reexec}
	code := exitOK
	root := &cobra.Command{
		Use:   "confagent",
		Short: "Render zkconf config sets from ZooKeeper into files",
		Long: `confagent follows a zkconf root in ZooKeeper and renders every generation
into its targets atomically, running check commands before and reload commands
after a change. It keeps serving its last good config while ZooKeeper is away
and across restarts.

Exit codes: 0 success, 1 runtime error, 2 usage, 3 invalid configuration.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code = serve(cmd.Context(), f, stdout, stderr)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&f.config, "config", "/etc/confagent/confagent.yaml", "configuration file")
	pf.StringVar(&f.logLevel, "log-level", "", "override log.level (debug, info, warn, error)")
	pf.StringVar(&f.logFormat, "log-format", "", "override log.format (text, json)")
	root.Flags().BoolVar(&f.once, "once", false, "render the current generation and exit (0 on success)")
	root.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would change, run the check commands of the targets that change against it, and apply nothing")
	root.Flags().BoolVar(&f.noCheck, "no-check", false, "with --dry-run: do not run check commands")
	root.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "with --once or --dry-run: how long to wait for ZooKeeper")

	root.AddCommand(&cobra.Command{
		Use:   "check-config",
		Short: "Validate the configuration and report every problem",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := config.Load(f.config)
			if err != nil {
				printConfigErr(stderr, f.config, err)
				code = exitConfig
				return nil
			}
			fmt.Fprintf(stdout, "%s: ok (%d targets)\n", f.config, len(cfg.Targets))
			for _, w := range warnings(cfg) {
				fmt.Fprintf(stdout, "warning: %s\n", w)
			}
			return nil
		},
	})
	var adoptInc string
	adopt := &cobra.Command{
		Use:   "adopt",
		Short: "Make the agent follow the root's new incarnation (incarnation: refuse)",
		Long: `adopt tells the agent to follow the new incarnation of its root (the root
published anew on a ZooKeeper that was wiped or rebuilt) that it refuses under
"incarnation: refuse". It writes a request into the state directory: a running
agent picks it up within seconds, a stopped one at its next start. Without
--incarnation the agent adopts the incarnation it refuses when it reads the
request (its /status and confpush status name it as incarnation_refused).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := config.Load(f.config)
			if err != nil {
				printConfigErr(stderr, f.config, err)
				code = exitConfig
				return nil
			}
			if err := agent.WriteAdopt(cfg.StateDir, adoptInc); err != nil {
				fmt.Fprintf(stderr, "confagent adopt: %v\n", err)
				code = exitError
				return nil
			}
			what := "the incarnation it refuses now"
			if adoptInc != "" {
				what = "incarnation " + adoptInc
			}
			fmt.Fprintf(stdout, "adopt request written to %s: the agent follows %s (a running agent within seconds, a stopped one at its start)\n",
				filepath.Join(cfg.StateDir, agent.AdoptFileName), what)
			return nil
		},
	}
	adopt.Flags().StringVar(&adoptInc, "incarnation", "", "adopt only this incarnation id (32 hex digits)")
	root.AddCommand(adopt)
	root.AddCommand(dropinCommand(&f, stdout, stderr, &code))
	root.AddCommand(renderCommand(&f, stdout, stderr, &code))
	root.AddCommand(execCommand(&f, stdout, stderr, &code))
	root.AddCommand(importConfdCommand(stdout, stderr, &code))
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Fprintln(stdout, buildinfo.Get().String("confagent")) },
	})
	conventions(root, stdout)
	return root, &code
}

// warnings are legal settings an operator should look at twice.
func warnings(cfg *config.Config) []string {
	var w []string
	for _, t := range cfg.Targets {
		if t.Mode&0o004 != 0 {
			w = append(w, fmt.Sprintf("target %q: mode %04o makes %s world-readable", t.Name, t.Mode, t.Dest))
		}
	}
	w = append(w, cfg.Warnings...)
	return append(w, sandboxWarnings(cfg)...)
}

func printConfigErr(w io.Writer, path string, err error) {
	var me *multierror.Error
	if errors.As(err, &me) {
		fmt.Fprintf(w, "%s: %d problem(s):\n", path, len(me.Errors))
		for _, e := range me.Errors {
			fmt.Fprintf(w, "  - %v\n", e)
		}
		return
	}
	// config.Load's other errors name the file themselves.
	fmt.Fprintf(w, "%v\n", err)
}

// options turns a validated configuration into the daemon's options. It
// reads template sources and the credentials file.
func options(cfg *config.Config, log *slog.Logger) (agent.Options, error) {
	specs, err := cfg.TargetSpecs()
	errs := []error{err}
	zc := zkclient.Config{Servers: cfg.ZooKeeper.Servers, SessionTimeout: cfg.ZooKeeper.SessionTimeout, Logger: log}
	auth, err := zkclient.LoadAuth(cfg.ZooKeeper.AuthFile)
	if err != nil {
		errs = append(errs, fmt.Errorf("zookeeper.auth_file: %w", err))
	}
	zc.Auth = auth
	var roots []agent.RootSpec
	if len(cfg.Roots) > 1 {
		for _, r := range cfg.Roots {
			roots = append(roots, agent.RootSpec{Name: r.Name, Path: r.Path})
			if r.AuthFile == "" {
				continue
			}
			a, err := zkclient.LoadAuth(r.AuthFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("roots.%s.auth_file: %w", r.Name, err))
			}
			roots[len(roots)-1].Auth = a
			zc.ExtraAuth = append(zc.ExtraAuth, a)
		}
	}
	if cfg.ZooKeeper.TLS.Enabled() {
		if zc.TLS, err = cfg.ZooKeeper.TLS.Load(); err != nil {
			errs = append(errs, fmt.Errorf("zookeeper.tls: %w", err))
		}
	}
	return agent.Options{
		Root: cfg.Root, Roots: roots, Meta: cfg.Meta, AgentID: cfg.AgentID, StateDir: cfg.StateDir,
		ZK:         zc,
		StaleAfter: cfg.StaleAfter, ResyncInterval: cfg.ResyncInterval, ResyncJitter: cfg.ResyncJitter,
		Apply: agent.ApplyMode(cfg.Apply), Targets: agentSpecs(specs), Logger: log, Version: buildinfo.Get().Version,
		MemoryLimit: cfg.MemoryLimit, Labels: cfg.Labels, Incarnation: incarnationPolicy(cfg.Incarnation),
		WaitMin: cfg.Wait.Min, WaitMax: cfg.Wait.Max, ReloadSplay: cfg.ReloadSplay,
		StatusCommandOutput: cfg.Status.CommandOutput,
	}, errlist.Join(errs...)
}

// incarnationPolicy maps the incarnation key (validated: follow or
// refuse) to the cache's policy.
func incarnationPolicy(v string) cache.IncarnationPolicy {
	p, err := cache.ParseIncarnationPolicy(v)
	if err != nil {
		return cache.IncarnationFollow
	}
	return p
}

// load reads the configuration and turns it into the logger and the
// daemon's options; on failure it reports and returns the exit code.
func load(f flags, stderr io.Writer) (*config.Config, *slog.Logger, agent.Options, int) {
	cfg, err := config.Load(f.config)
	if err != nil {
		printConfigErr(stderr, f.config, err)
		return nil, nil, agent.Options{}, exitConfig
	}
	log, err := newLogger(stderr, cfg, f)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return nil, nil, agent.Options{}, exitUsage
	}
	opts, err := options(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return nil, nil, agent.Options{}, exitConfig
	}
	return cfg, log, opts, exitOK
}

func serve(ctx context.Context, f flags, stdout, stderr io.Writer) int {
	// First: the program may be executed again, and then starts over
	// (the configuration read once, its warnings logged once).
	var slackErr error
	if f.reexec && !f.dryRun {
		slackErr = timerslack.Raise(agentTimerSlack)
	}
	cfg, log, opts, code := load(f, stderr)
	if cfg == nil {
		return code
	}
	if f.dryRun {
		return dryRun(ctx, f, opts, stdout, stderr)
	}
	if slackErr != nil {
		log.Warn("timer slack not raised", "error", slackErr)
	}
	limitProcs()
	notifier := newSystemd(log)
	opts.OnStatus, opts.OnStarted = notifier.status, notifier.started
	opts.Heartbeat, opts.HeartbeatInterval = notifier.ping, notifier.interval
	d, err := agent.NewDaemon(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	defer d.Close()
	d.Metrics().SetBuildInfo(buildinfo.Get().Version, buildinfo.Get().Commit)

	if f.once {
		octx, cancel := context.WithTimeout(ctx, f.timeout)
		defer cancel()
		out, err := d.Once(octx)
		if err != nil {
			fmt.Fprintf(stderr, "confagent: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "generation %d applied; changed: %s\n", out.Generation, strings.Join(out.Changed, ", "))
		return exitOK
	}

	stopHTTP, err := serveLive(ctx, f, cfg, d, log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	defer stopHTTP()
	log.Info("confagent starting", "version", buildinfo.Get().Version, "commit", buildinfo.Get().Commit, "root", rootsLog(cfg), "agent_id", cfg.AgentID,
		"targets", len(cfg.Targets), "zookeeper", strings.Join(cfg.ZooKeeper.Servers, ","), "gomaxprocs", runtime.GOMAXPROCS(0), "timer_slack", timerSlack())
	if err := d.Run(ctx); err != nil {
		log.Error("confagent stopped", "error", err)
		return exitError
	}
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	log.Info("confagent stopped")
	return exitOK
}

// agentProcs is the GOMAXPROCS an agent runs with unless the environment
// sets one. An apply is a chain of short computations between waits for
// ZooKeeper and the disk, spread over a dozen goroutines; with a second
// processor the runtime woke a second thread to look for work at nearly
// every hand-over between them, and on a loaded host that cost 16-28 %
// of the agent's CPU per one-item publish
// (docs/bench/latency-idlecpu-2026-11-27), rendering no sooner: the waits
// still overlap, a goroutine in a system call leaves the processor to the
// others.
const agentProcs = 1

// agentTimerSlack is the timer slack an agent runs with unless it
// inherited one other than the kernel's default (systemd's
// TimerSlackNSec=): with the default 50 µs the runtime's monitor thread
// polled every 20-70 µs through an apply (17 % of the agent's CPU per
// one-item publish on a loaded host; internal/timerslack,
// docs/bench/latency-cpufive-2026-11-27). A millisecond late is nothing to
// the agent's timers (debounces, retries and sweeps of 100 ms and more).
const agentTimerSlack = time.Millisecond

// timerSlack is the slack the agent's threads run with, for the log.
func timerSlack() string {
	d, err := timerslack.Current()
	if err != nil {
		return "unknown"
	}
	return d.String()
}

// limitProcs sets GOMAXPROCS to agentProcs unless GOMAXPROCS is in the
// environment (the runtime has then read it).
func limitProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(agentProcs)
	}
}

// rootsLog names the root, or every root as name=path, for the log.
func rootsLog(cfg *config.Config) string {
	if cfg.Root != "" {
		return cfg.Root
	}
	var b strings.Builder
	for i, r := range cfg.Roots {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Name + "=" + r.Path)
	}
	return b.String()
}

// serveLive starts what a running agent serves beside its daemon: the
// HTTP endpoint and the watcher of the configuration file and template
// sources (SIGHUP and edits reload). The returned func stops the HTTP
// endpoint; the watcher stops with ctx.
func serveLive(ctx context.Context, f flags, cfg *config.Config, d *agent.Daemon, log *slog.Logger, stderr io.Writer) (func(), error) {
	lv := &live{logOut: stderr, http: &liveHTTP{handler: d.Handler(), log: log}}
	if err := lv.http.listen(cfg.HTTP.Listen, cfg.HTTP.AllowedHosts); err != nil {
		return nil, fmt.Errorf("http.listen: %w", err)
	}
	go watchConfig(ctx, f, d, log, lv, watchedFiles(cfg))
	return lv.http.close, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

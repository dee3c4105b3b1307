package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/buildinfo"
)

// execInnerEnv marks the process that runs the agent and supervises the
// child, below the init process (execinit_linux.go). The child does not
// inherit it.
const execInnerEnv = "ZKCONF_EXEC_INNER"

// Exit statuses of exec when the child cannot be started, as a shell's.
const (
	exitCannotExec = 126
	exitNotFound   = 127
)

type execFlags struct {
	startTimeout time.Duration
}

// execCommand is `confagent exec`.
func execCommand(f *flags, stdout, stderr io.Writer, code *int) *cobra.Command {
	var ef execFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]",
		Short: "Render every target, then run COMMAND and signal it when a target changes (containers)",
		Long: `exec runs the agent and supervises one child process, as consul-template's
exec mode does: a container's entrypoint, or a process supervisor's.

It renders every target first (from the persisted snapshot in state_dir when
there is one, else from ZooKeeper: it waits for a first generation, for ever
or for --start-timeout), then starts COMMAND with confagent's standard input,
output, error and environment. After every apply that changed a target
(every target, or those listed in exec.targets) the child gets
exec.reload_signal (default SIGHUP), once, after the files are in place;
with exec.restart: true it is stopped and started again instead.

SIGTERM and SIGINT are passed on to the child as they are; confagent waits for
it (at most exec.kill_timeout, then SIGKILL to its process group) and exits
with its status. SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH are passed on too.
SIGHUP reloads confagent's own configuration, as it does without exec. When
the child exits on its own, confagent stops and exits with the child's status
(128+N when a signal N killed it; 126 or 127 when COMMAND could not be
started). The HTTP endpoint and the status node work as without exec.

On Linux, exec is always a child subreaper: its first process only relays
signals and reaps every orphaned descendant, so zombies never accumulate,
whether it runs as PID 1 of a container or below another supervisor; the
agent and the child run below it. docs/confagent.md, "Exec mode", has the
details.`,
		Example: `  # a container entrypoint: nginx reloads (SIGHUP) after every change
  confagent exec -- nginx -g 'daemon off;'

  # give up when no generation can be rendered within two minutes
  confagent --config /etc/confagent/app.yaml exec --start-timeout 2m -- /app/server`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			*code = runExec(cmd.Context(), *f, ef, args, stderr)
			return nil
		},
	}
	// COMMAND's own flags are its own, with or without "--".
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().DurationVar(&ef.startTimeout, "start-timeout", 0, "exit (1) when no generation is rendered within this long; 0 waits for ever")
	return cmd
}

// runExec validates the configuration, then becomes the init process
// (Linux) or runs the agent and the child directly.
func runExec(ctx context.Context, f flags, ef execFlags, argv []string, stderr io.Writer) int {
	if _, err := config.Load(f.config); err != nil {
		printConfigErr(stderr, f.config, err)
		return exitConfig
	}
	if ef.startTimeout < 0 {
		fmt.Fprintf(stderr, "confagent exec: --start-timeout must not be negative\n")
		return exitUsage
	}
	if os.Getenv(execInnerEnv) == "" && initSupported {
		return runInit(innerArgs(f, ef, argv), stderr)
	}
	return runSupervised(ctx, f, ef, argv, stderr)
}

// innerArgs are the arguments of the process below init: the same
// command, spelled out.
func innerArgs(f flags, ef execFlags, argv []string) []string {
	args := []string{"--config", f.config}
	if f.logLevel != "" {
		args = append(args, "--log-level", f.logLevel)
	}
	if f.logFormat != "" {
		args = append(args, "--log-format", f.logFormat)
	}
	args = append(args, "exec", "--start-timeout", ef.startTimeout.String(), "--")
	return append(args, argv...)
}

// runSupervised runs the agent and, once every target is rendered, the
// child; it returns the child's exit status.
func runSupervised(ctx context.Context, f flags, ef execFlags, argv []string, stderr io.Writer) int {
	cfg, log, opts, code := load(f, stderr)
	if cfg == nil {
		return code
	}
	sup := newSupervisor(cfg.Exec, argv, log)
	opts.OnApply = sup.applied
	// SIGTERM and SIGINT cancel run's context; here they are the child's
	// to act on first, so the agent runs until the child is gone.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	d, err := agent.NewDaemon(actx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	defer d.Close()
	d.Metrics().SetBuildInfo(buildinfo.Get().Version, buildinfo.Get().Commit)
	stopHTTP, err := serveLive(actx, f, cfg, d, log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	defer stopHTTP()
	log.Info("confagent exec starting", "version", buildinfo.Get().Version, "root", rootsLog(cfg), "agent_id", cfg.AgentID,
		"targets", len(cfg.Targets), "command", strings.Join(argv, " "))
	runDone := make(chan struct{})
	var runErr error
	go func() {
		defer close(runDone)
		runErr = d.Run(actx)
	}()
	code = sup.run(d, runDone, &runErr, ef.startTimeout)
	cancel()
	// The agent finishes an apply in progress before it returns.
	<-runDone
	log.Info("confagent exec stopped", "exit_status", code)
	return code
}

// stopSignals are the signals that ask confagent to stop: passed on to the
// child, whose exit ends confagent.
func stopSignals() []os.Signal { return []os.Signal{syscall.SIGTERM, syscall.SIGINT} }

// forwardSignals are passed on to the child as they are. SIGHUP is not:
// it reloads confagent's configuration (watchConfig).
func forwardSignals() []os.Signal {
	return append([]os.Signal{syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}, stopSignals()...)
}

// supervisor starts the child after the first clean apply and signals or
// restarts it after every apply that changed a triggering target.
type supervisor struct {
	cfg     config.Exec
	argv    []string
	log     *slog.Logger
	reload  syscall.Signal
	kill    syscall.Signal
	trigger func(changed []string) bool

	mu      sync.Mutex
	isReady bool
	// pending counts applies that changed a triggering target since the
	// child was last signalled or started; wake is poked when it grows.
	pending int
	gens    []int64
	ready   chan struct{}
	wake    chan struct{}
}

func newSupervisor(cfg config.Exec, argv []string, log *slog.Logger) *supervisor {
	s := &supervisor{cfg: cfg, argv: argv, log: log,
		reload: signalByName(cfg.ReloadSignal, syscall.SIGHUP), kill: signalByName(cfg.KillSignal, syscall.SIGTERM),
		ready: make(chan struct{}), wake: make(chan struct{}, 1)}
	s.trigger = func(changed []string) bool { return len(changed) > 0 }
	if len(cfg.Targets) > 0 {
		s.trigger = func(changed []string) bool {
			return slices.ContainsFunc(changed, func(n string) bool { return slices.Contains(cfg.Targets, n) })
		}
	}
	return s
}

// applied is the daemon's OnApply: it runs on the daemon's goroutine and
// never blocks.
func (s *supervisor) applied(out agent.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isReady {
		// The child starts on the files in place: the first apply that
		// leaves every target rendered starts it, and needs no signal.
		if out.Err == nil {
			s.isReady = true
			close(s.ready)
		}
		return
	}
	if !s.trigger(out.Changed) {
		return
	}
	s.pending++
	s.gens = append(s.gens, out.Generation)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns and clears the changes not yet passed on.
func (s *supervisor) take() (int, []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, g := s.pending, s.gens
	s.pending, s.gens = 0, nil
	return n, g
}

// child is one run of the command.
type child struct {
	cmd    *exec.Cmd
	done   chan struct{}
	status int
}

// start starts the command; changes applied before it are in the files
// it reads.
func (s *supervisor) start() (*child, int) {
	s.take()
	// #nosec G204 -- running the operator's command is what exec is for.
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, execInnerEnv+"=") })
	cmd.SysProcAttr = childAttr(s.kill)
	if err := cmd.Start(); err != nil {
		s.log.Error("exec: the command could not be started", "command", s.argv[0], "error", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, exitNotFound
		}
		return nil, exitCannotExec
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		c.status = exitStatus(cmd.ProcessState)
		if c.status == exitError && err != nil {
			s.log.Error("exec: waiting for the child failed", "error", err)
		}
		close(c.done)
	}()
	s.log.Info("exec: child started", "pid", cmd.Process.Pid, "command", strings.Join(s.argv, " "))
	return c, 0
}

// exitStatus is a shell's $? for a finished command: its exit code, or
// 128+N when signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitError
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	return exitError
}

// run waits for the first clean apply (or the start timeout, a stop signal,
// the agent ending), starts the child and supervises it until it exits.
// runDone is closed when the agent's Run returned, with *runErr its error.
// It returns confagent's exit status.
func (s *supervisor) run(d *agent.Daemon, runDone <-chan struct{}, runErr *error, startTimeout time.Duration) int {
	// The thread that starts the child must outlive it: the child's
	// parent-death signal is tied to that thread.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardSignals()...)
	defer signal.Stop(sigs)
	var timeout <-chan time.Time
	if startTimeout > 0 {
		t := time.NewTimer(startTimeout)
		defer t.Stop()
		timeout = t.C
	}
	s.log.Info("exec: waiting until every target is rendered before starting the child")
wait:
	for {
		select {
		case <-s.ready:
			break wait
		case sig := <-sigs:
			if slices.Contains(stopSignals(), sig) {
				s.log.Info("exec: stopping before the child was started", "signal", sig)
				return exitOK
			}
		case <-runDone:
			s.log.Error("exec: the agent stopped before the child was started", "error", *runErr)
			return exitError
		case <-timeout:
			st := d.Status()
			why := st.NotReadyReason
			if st.LastError != "" {
				why = st.LastError
			}
			s.log.Error("exec: no generation rendered within --start-timeout: the child was not started",
				"start_timeout", startTimeout, "state", st.State, "reason", why)
			return exitError
		}
	}
	c, code := s.start()
	if c == nil {
		return code
	}
	var killTimer <-chan time.Time
	// stopping: confagent ends with this child; restarting: a new child
	// follows it (exec.restart).
	stopping, restarting := false, false
	// stop sends sig and arms the SIGKILL that follows exec.kill_timeout.
	stop := func(sig os.Signal) {
		_ = c.cmd.Process.Signal(sig)
		if killTimer == nil {
			killTimer = time.After(s.cfg.KillTimeout)
		}
	}
	for {
		select {
		case <-c.done:
			s.log.Info("exec: child exited", "pid", c.cmd.Process.Pid, "exit_status", c.status)
			if !restarting || stopping {
				if stopping && runDone == nil {
					return exitError // the agent failed: its status, not the child's
				}
				return c.status
			}
			restarting, killTimer = false, nil
			if c, code = s.start(); c == nil {
				return code
			}
		case sig := <-sigs:
			s.log.Info("exec: passing a signal on to the child", "signal", sig, "pid", c.cmd.Process.Pid)
			if slices.Contains(stopSignals(), sig) {
				stopping = true
				stop(sig)
				continue
			}
			_ = c.cmd.Process.Signal(sig)
		case <-s.wake:
			n, gens := s.take()
			if n == 0 || stopping || restarting {
				// A restart in progress starts the child on the newest files.
				continue
			}
			if s.cfg.Restart {
				s.log.Info("exec: restarting the child after a change", "generations", gens, "signal", s.kill, "pid", c.cmd.Process.Pid)
				restarting = true
				stop(s.kill)
				continue
			}
			s.log.Info("exec: signalling the child after a change", "generations", gens, "signal", s.reload, "pid", c.cmd.Process.Pid)
			_ = c.cmd.Process.Signal(s.reload)
		case <-runDone:
			s.log.Error("exec: the agent stopped: stopping the child", "error", *runErr, "signal", s.kill, "pid", c.cmd.Process.Pid)
			runDone = nil // closed: it must not fire again
			stopping = true
			stop(s.kill)
		case <-killTimer:
			s.log.Warn("exec: the child did not exit within exec.kill_timeout: killing its process group",
				"kill_timeout", s.cfg.KillTimeout, "pid", c.cmd.Process.Pid)
			killGroup(c.cmd.Process.Pid)
			killTimer = nil
		}
	}
}

// signalByName maps a validated signal name (config.Exec) to its number.
func signalByName(name string, def syscall.Signal) syscall.Signal {
	for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGTERM, syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGKILL} {
		if unixSignalName(s) == name {
			return s
		}
	}
	return def
}

// unixSignalName is "SIGHUP" for syscall.SIGHUP.
func unixSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGWINCH:
		return "SIGWINCH"
	case syscall.SIGALRM:
		return "SIGALRM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

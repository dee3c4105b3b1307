package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The exec tests run confagent exec (the binary TestMain builds) with this
// test binary as its child: init below turns it into the recording child
// when execChildEnv is set.
const execChildEnv = "ZKCONF_EXEC_TEST_CHILD"

func init() {
	switch os.Getenv(execChildEnv) {
	case "":
		return
	case "record":
		os.Exit(recordingChild())
	case "intermediate":
		os.Exit(intermediateChild())
	case "orphan":
		os.Exit(orphanChild())
	}
	os.Exit(99)
}

// recordingChild appends one line to $CHILD_LOG when it starts and for every
// signal it gets: the event, its pid and the content of $CHILD_WATCH at that
// moment (what a reload would load). On SIGTERM or SIGINT it exits with
// $CHILD_EXIT, after $CHILD_HOLD exists when that is set, or ignores them
// with $CHILD_IGNORE_TERM; on SIGUSR1 it exits with 3, on SIGUSR2 it kills
// itself with SIGKILL. With $CHILD_ORPHAN it first leaves an orphaned
// grandchild (intermediateChild).
func recordingChild() int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	record := func(event string) {
		b, err := os.ReadFile(os.Getenv("CHILD_WATCH"))
		content := string(b)
		if err != nil {
			content = "MISSING"
		}
		f, err := os.OpenFile(os.Getenv("CHILD_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			os.Exit(98)
		}
		fmt.Fprintf(f, "%s pid=%d file=%s\n", event, os.Getpid(), content)
		f.Close()
	}
	if os.Getenv("CHILD_ORPHAN") != "" {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), execChildEnv+"=intermediate")
		if err := cmd.Run(); err != nil {
			return 97
		}
	}
	record("start")
	for sig := range sigs {
		name := unixSignalName(sig.(syscall.Signal))
		record(name)
		switch sig {
		case syscall.SIGTERM, syscall.SIGINT:
			if os.Getenv("CHILD_IGNORE_TERM") != "" {
				continue
			}
			if hold := os.Getenv("CHILD_HOLD"); hold != "" {
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(hold); err == nil {
						break
					}
				}
			}
			record("exit")
			code, _ := strconv.Atoi(os.Getenv("CHILD_EXIT"))
			return code
		case syscall.SIGUSR1:
			return 3
		case syscall.SIGUSR2:
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return 0
}

// intermediateChild starts orphanChild and exits without waiting for it.
func intermediateChild() int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), execChildEnv+"=orphan", "ORPHAN_PARENT="+strconv.Itoa(os.Getpid()))
	if err := cmd.Start(); err != nil {
		return 96
	}
	return 0
}

// orphanChild waits until its parent is gone, writes its pid and its new
// parent's into $CHILD_ORPHAN, and exits: a zombie for whoever adopted it.
func orphanChild() int {
	parent, _ := strconv.Atoi(os.Getenv("ORPHAN_PARENT"))
	for deadline := time.Now().Add(time.Minute); os.Getppid() == parent && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	out := os.Getenv("CHILD_ORPHAN")
	if err := os.WriteFile(out+".tmp", []byte(fmt.Sprintf("%d %d", os.Getpid(), os.Getppid())), 0o644); err != nil {
		return 95
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return 95
	}
	return 0
}

// execEnv is a confagent exec under test: a template target "conf"
// (item app) and a file target "extra" (item extra).
type execEnv struct {
	*env
	childLog string
	watch    string
}

func newExecEnv(t *testing.T, execYAML string) *execEnv {
	t.Helper()
	return execEnvOn(t, newEnv(t), execYAML)
}

// execEnvOn is newExecEnv on env, for a test that needs an env of its own
// making (newEnvOwnServer).
func execEnvOn(t *testing.T, env *env, execYAML string) *execEnv {
	t.Helper()
	e := &execEnv{env: env}
	e.childLog = filepath.Join(e.dir, "child.log")
	e.watch = filepath.Join(e.out, "app.conf")
	e.writeExecConfig(t, execYAML)
	return e
}

func (e *execEnv) writeExecConfig(t *testing.T, execYAML string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "app.tmpl"), []byte(`app={{ item "app" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := e.agentConfig("text", "info", "127.0.0.1:0", fmt.Sprintf(`  - name: conf
    type: template
    src: %s
    dest: %s
  - name: extra
    type: file
    item: extra
    dest: %s
`, filepath.Join(e.dir, "app.tmpl"), e.watch, filepath.Join(e.out, "extra")))
	writeAtomic(t, e.cfgPath, cfg+execYAML)
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
}

// startExec starts confagent exec with the recording child; childEnv are
// the child's settings (CHILD_EXIT=42, ...).
func (e *execEnv) startExec(t *testing.T, execArgs []string, childEnv ...string) *proc {
	t.Helper()
	t.Setenv(execChildEnv, "record")
	t.Setenv("CHILD_LOG", e.childLog)
	t.Setenv("CHILD_WATCH", e.watch)
	for _, kv := range childEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	args := append(append([]string{"exec"}, execArgs...), "--", os.Args[0])
	return e.start(t, args...)
}

// childLines waits until the child's log has at least n lines and returns
// them all.
func (e *execEnv) childLines(t *testing.T, n int) []string {
	t.Helper()
	var lines []string
	waitFile(t, e.childLog, func(b []byte) bool {
		lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		return len(b) > 0 && len(lines) >= n
	})
	return lines
}

// waitFile waits (fsnotify on its directory) until path exists and ok
// accepts its content.
func waitFile(t *testing.T, path string, ok func([]byte) bool) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(60 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && ok(b) {
			return
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			t.Fatal(err)
		case <-timeout:
			b, _ := os.ReadFile(path)
			t.Fatalf("%s never reached the expected content; it holds:\n%s", path, b)
		}
	}
}

// events strips pids: "SIGHUP file=app=v2".
func events(lines []string) []string {
	re := regexp.MustCompile(` pid=\d+`)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = re.ReplaceAllString(l, "")
	}
	return out
}

// exitCode waits for p to exit and returns its status.
func exitCode(t *testing.T, p *proc) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("confagent exec did not exit:\n%s", p.log())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (e *execEnv) publishApp(t *testing.T, app, extra string) int64 {
	t.Helper()
	return e.publish(t, map[string][]byte{"app": []byte(app), "extra": []byte(extra)})
}

// TestExecSignalsOncePerChange: the child starts after the first render,
// gets exec.reload_signal exactly once per apply that changed a target of
// exec.targets (after the file is in place), none for an apply that
// changed only another target; SIGTERM is passed on, confagent waits for the
// child and exits with its status; the status node and HTTP keep working.
func TestExecSignalsOncePerChange(t *testing.T) {
	e := newExecEnv(t, "exec:\n  targets: [conf]\n")
	e.publishApp(t, "v1", "e1")
	p := e.startExec(t, nil, "CHILD_EXIT=42")
	e.childLines(t, 1)
	e.waitApplied(t, "agent-under-test", 1)
	addr := p.waitText(t, regexp.MustCompile(`msg="http listening" addr=(\S+)`))[1]

	e.publishApp(t, "v2", "e1")
	e.childLines(t, 2)
	g3 := e.publishApp(t, "v2", "e2") // only "extra" changes: no signal
	e.waitApplied(t, "agent-under-test", g3)
	e.publishApp(t, "v3", "e2")
	lines := e.childLines(t, 3)
	if want := []string{"start file=app=v1", "SIGHUP file=app=v2", "SIGHUP file=app=v3"}; !slices.Equal(events(lines), want) {
		t.Fatalf("child saw %q, want %q", events(lines), want)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %s", resp.Status)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 42 {
		t.Fatalf("confagent exec exited %d, want the child's 42:\n%s", code, p.log())
	}
	lines = e.childLines(t, 5)
	if want := []string{"start file=app=v1", "SIGHUP file=app=v2", "SIGHUP file=app=v3", "SIGTERM file=app=v3", "exit file=app=v3"}; !slices.Equal(events(lines), want) {
		t.Fatalf("child saw %q, want %q", events(lines), want)
	}
	if n := strings.Count(p.log(), "exec: signalling the child after a change"); n != 2 {
		t.Fatalf("%d signals logged, want 2:\n%s", n, p.log())
	}
}

// TestExecChildExitEndsConfagent: a child that exits on its own ends
// confagent with its status (SIGUSR1 and SIGUSR2, passed on, make it exit 3
// or kill itself: 128+9).
func TestExecChildExitEndsConfagent(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGUSR1, 3}, {syscall.SIGUSR2, 128 + 9}} {
		t.Run(unixSignalName(tc.sig), func(t *testing.T) {
			e := newExecEnv(t, "")
			e.publishApp(t, "v1", "e1")
			p := e.startExec(t, nil)
			e.childLines(t, 1)
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, p); code != tc.want {
				t.Fatalf("confagent exec exited %d, want %d:\n%s", code, tc.want, p.log())
			}
			if want := []string{"start file=app=v1", unixSignalName(tc.sig) + " file=app=v1"}; !slices.Equal(events(e.childLines(t, 2)), want) {
				t.Fatalf("child saw %q, want %q", events(e.childLines(t, 2)), want)
			}
		})
	}
}

// TestExecTermWaitsForChild: after SIGTERM confagent keeps running until the
// child exits, however long that takes within exec.kill_timeout.
func TestExecTermWaitsForChild(t *testing.T) {
	e := newExecEnv(t, "")
	hold := filepath.Join(e.dir, "release")
	e.publishApp(t, "v1", "e1")
	p := e.startExec(t, nil, "CHILD_HOLD="+hold, "CHILD_EXIT=7")
	e.childLines(t, 1)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.childLines(t, 2) // the child got SIGTERM and holds on
	select {
	case <-p.done:
		t.Fatalf("confagent exec exited before its child:\n%s", p.log())
	default:
	}
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 7 {
		t.Fatalf("confagent exec exited %d, want 7:\n%s", code, p.log())
	}
	b, _ := os.ReadFile(e.childLog)
	if !strings.HasPrefix(events(strings.Split(strings.TrimSpace(string(b)), "\n"))[2], "exit ") {
		t.Fatalf("confagent exec exited before its child did:\n%s", b)
	}
}

// TestExecKillTimeout: a child that ignores SIGTERM is killed (SIGKILL to its
// process group) after exec.kill_timeout.
func TestExecKillTimeout(t *testing.T) {
	e := newExecEnv(t, "exec:\n  kill_timeout: 1s\n")
	e.publishApp(t, "v1", "e1")
	p := e.startExec(t, nil, "CHILD_IGNORE_TERM=1")
	e.childLines(t, 1)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 128+9 {
		t.Fatalf("confagent exec exited %d, want 137:\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), "did not exit within exec.kill_timeout") {
		t.Fatalf("the kill is not logged:\n%s", p.log())
	}
}

// TestExecRestart: with exec.restart the child is stopped with
// exec.kill_signal and started again on the new files.
func TestExecRestart(t *testing.T) {
	e := newExecEnv(t, "exec:\n  restart: true\n  kill_signal: SIGINT\n")
	e.publishApp(t, "v1", "e1")
	p := e.startExec(t, nil)
	e.childLines(t, 1)
	e.publishApp(t, "v2", "e1")
	lines := e.childLines(t, 4)
	if want := []string{"start file=app=v1", "SIGINT file=app=v2", "exit file=app=v2", "start file=app=v2"}; !slices.Equal(events(lines), want) {
		t.Fatalf("child saw %q, want %q", events(lines), want)
	}
	if pid := func(l string) string { return strings.Fields(l)[1] }; pid(lines[0]) == pid(lines[3]) {
		t.Fatalf("not restarted: %q", lines)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.log())
	}
}

// TestExecWithoutZooKeeper: with ZooKeeper down the child starts on the
// persisted snapshot; without one, --start-timeout ends confagent (exit 1)
// and the child is never started.
func TestExecWithoutZooKeeper(t *testing.T) {
	e := execEnvOn(t, newEnvOwnServer(t), "")
	e.publishApp(t, "v1", "e1")
	var out, errb strings.Builder
	if code := run([]string{"--config", e.cfgPath, "--once"}, &out, &errb); code != 0 {
		t.Fatalf("--once: %d %s", code, errb.String())
	}
	e.c.Stop(0)
	if err := os.Remove(e.watch); err != nil {
		t.Fatal(err)
	}
	p := e.startExec(t, nil)
	if want := []string{"start file=app=v1"}; !slices.Equal(events(e.childLines(t, 1)), want) {
		t.Fatalf("child saw %q, want %q", events(e.childLines(t, 1)), want)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exitCode(t, p)

	if err := os.RemoveAll(filepath.Join(e.dir, "state")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.childLog); err != nil {
		t.Fatal(err)
	}
	p = e.startExec(t, []string{"--start-timeout", "2s"})
	if code := exitCode(t, p); code != exitError {
		t.Fatalf("exit %d, want 1:\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), "no generation rendered within --start-timeout") {
		t.Fatalf("no reason given:\n%s", p.log())
	}
	if _, err := os.Stat(e.childLog); !os.IsNotExist(err) {
		t.Fatalf("the child was started: %v", err)
	}
}

// TestExecReapsOrphans: a grandchild orphaned by the child is adopted by
// confagent exec's first process (a child subreaper, not the host's init)
// and reaped when it exits.
func TestExecReapsOrphans(t *testing.T) {
	e := newExecEnv(t, "")
	orphan := filepath.Join(e.dir, "orphan")
	e.publishApp(t, "v1", "e1")
	p := e.startExec(t, nil, "CHILD_ORPHAN="+orphan)
	var pid, ppid int
	waitFile(t, orphan, func(b []byte) bool {
		_, err := fmt.Sscanf(string(b), "%d %d", &pid, &ppid)
		return err == nil
	})
	if ppid != p.cmd.Process.Pid {
		t.Fatalf("the orphan was adopted by %d, not by confagent exec (%d)", ppid, p.cmd.Process.Pid)
	}
	// It exits at once; a zombie keeps its /proc entry until reaped.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if os.IsNotExist(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("orphan %d not reaped: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exitCode(t, p)
}

// TestExecBadCommand: a command that cannot be started ends confagent exec
// with 127, as a shell would; a negative --start-timeout is a usage error.
func TestExecBadCommand(t *testing.T) {
	e := newExecEnv(t, "")
	e.publishApp(t, "v1", "e1")
	p := e.start(t, "exec", "--", filepath.Join(e.dir, "no-such-program"))
	if code := exitCode(t, p); code != exitNotFound {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNotFound, p.log())
	}
	if !strings.Contains(p.log(), "exec: the command could not be started") {
		t.Fatalf("no reason given:\n%s", p.log())
	}
	var out, errb strings.Builder
	if code := run([]string{"--config", e.cfgPath, "exec", "--start-timeout", "-1s", "--", "true"}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "confagent exec: --start-timeout must not be negative") {
		t.Fatalf("negative --start-timeout: %d %s", code, errb.String())
	}
}

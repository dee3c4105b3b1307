package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/internal/timerslack"
)

// maxCommandOutput bounds how much of a command's output is kept for logs
// and status: enough to explain a failure, not enough to flood either.
const maxCommandOutput = 4096

// CommandError is a check or reload command that failed, timed out or
// could not start: agent.CommandError's fields, which agent converts it to.
type CommandError struct {
	Kind     string // "check" or "reload"
	Target   string
	ExitCode int // -1 when it did not exit normally
	TimedOut bool
	Output   string // the tail of combined stdout and stderr
	Err      error
}

func (e *CommandError) Error() string { return e.Message(true) }

func (e *CommandError) Unwrap() error { return e.Err }

// Message is the error's text, with the last line of the command's
// output when withOutput.
func (e *CommandError) Message(withOutput bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s command of target %q ", e.Kind, e.Target)
	switch {
	case e.TimedOut:
		b.WriteString("timed out")
	case e.ExitCode >= 0:
		fmt.Fprintf(&b, "exited with status %d", e.ExitCode)
	default:
		fmt.Fprintf(&b, "failed: %v", e.Err)
	}
	if out := strings.TrimSpace(e.Output); out != "" && withOutput {
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
		fmt.Fprintf(&b, ": %s", out)
	}
	return b.String()
}

// Command describes one check or reload run.
type Command struct {
	Kind, Target string
	Script       string
	Staged       string // the staged file or directory, for checks
	Dest         string
	Generation   int64
	Timeout      time.Duration
}

// CheckCommand is t's check command against the output at staged.
func (t *Target) CheckCommand(staged string, gen int64) Command {
	return Command{Kind: "check", Target: t.Spec.Name, Script: t.Spec.Check, Staged: staged,
		Dest: t.Spec.Dest, Generation: gen, Timeout: t.Spec.Timeout}
}

// Run executes the command with /bin/sh -c and returns its output (the
// tail) and a *CommandError when it failed. `{{.src}}` in the script is
// replaced by the shell-quoted staged path (confd's convention); the same
// path is in $ZKCONF_STAGED. The whole process group is killed on timeout
// so a check that forks cannot outlive it.
func (c Command) Run(ctx context.Context) (string, error) {
	script := c.Script
	if c.Staged != "" {
		script = strings.ReplaceAll(script, "{{.src}}", shellQuote(c.Staged))
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// #nosec G204 -- running the operator's configured check/reload command is the point.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(),
		"ZKCONF_TARGET="+c.Target,
		"ZKCONF_DEST="+c.Dest,
		"ZKCONF_GENERATION="+strconv.FormatInt(c.Generation, 10),
	)
	if c.Staged != "" {
		cmd.Env = append(cmd.Env, "ZKCONF_STAGED="+c.Staged)
	}
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	// The kernel's timer slack, not the agent's (a reload may start a
	// daemon).
	err := timerslack.Run(cmd)
	if err == nil {
		return out.String(), nil
	}
	ce := &CommandError{Kind: c.Kind, Target: c.Target, ExitCode: -1, Output: out.String(), Err: err}
	var ee *exec.ExitError
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		ce.TimedOut = true
	} else if errors.As(err, &ee) && ee.Exited() {
		ce.ExitCode = ee.ExitCode()
	}
	return out.String(), ce
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tailBuffer keeps the last maxCommandOutput bytes written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.b.Write(p)
	if t.b.Len() > 2*maxCommandOutput {
		keep := t.b.Bytes()[t.b.Len()-maxCommandOutput:]
		t.b = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	b := t.b.Bytes()
	if len(b) > maxCommandOutput {
		b = b[len(b)-maxCommandOutput:]
	}
	return string(b)
}

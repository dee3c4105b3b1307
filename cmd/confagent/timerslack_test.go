//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConfagentTimerSlack: a real confagent runs every thread (the Go
// runtime's monitor among them) with agentTimerSlack when it was started
// with the kernel's default, and keeps a slack its parent chose.
func TestConfagentTimerSlack(t *testing.T) {
	for _, c := range []struct {
		inherited time.Duration
		want      time.Duration
	}{{50 * time.Microsecond, agentTimerSlack}, {200 * time.Microsecond, 200 * time.Microsecond}} {
		t.Run(c.inherited.String(), func(t *testing.T) {
			e := newEnv(t)
			var p *proc
			func() {
				// The agent inherits the slack of the thread that forks it.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(c.inherited), 0, 0, 0); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) }()
				p = e.start(t)
			}()
			p.waitLog(t, "confagent starting")
			m := regexp.MustCompile(`"confagent starting".* timer_slack=(\S+)`).FindStringSubmatch(p.log())
			if m == nil || m[1] != c.want.String() {
				t.Fatalf("start line's timer_slack %v, want %v:\n%s", m, c.want, p.log())
			}
			pid := p.cmd.Process.Pid
			tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
			if err != nil || len(tasks) < 2 {
				t.Fatalf("threads of %d: %v %v", pid, tasks, err)
			}
			for _, task := range tasks {
				// A thread's slack is at /proc/<tid>/timerslack_ns.
				b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
				if err != nil {
					continue // the thread ended
				}
				if got := strings.TrimSpace(string(b)); got != strconv.FormatInt(c.want.Nanoseconds(), 10) {
					t.Errorf("thread %s runs with slack %s ns, want %d", filepath.Base(task), got, c.want.Nanoseconds())
				}
			}
		})
	}
}

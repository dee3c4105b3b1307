package timerslack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const helperEnv = "TIMERSLACK_TEST_HELPER"

// TestMain runs the helper process of TestRaise when asked to: it raises
// the slack, then prints every thread's.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := Raise(time.Millisecond); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		// Threads the runtime starts from now on, and the ones it had.
		done := make(chan struct{})
		for range 4 {
			go func() { time.Sleep(time.Millisecond); done <- struct{}{} }()
		}
		for range 4 {
			<-done
		}
		fmt.Print(threadSlacks())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// threadSlacks returns the distinct timer slacks of this process's
// threads, one a line.
func threadSlacks() string {
	seen := map[string]bool{}
	// A thread's slack is at /proc/<tid>/timerslack_ns (the task
	// directories have none).
	tasks, _ := filepath.Glob("/proc/self/task/*")
	var out []string
	for _, p := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(p), "timerslack_ns"))
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// withSlack runs f on a thread whose timer slack is slack, and puts the
// thread back to the default after.
func withSlack(t *testing.T, slack time.Duration, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(Default), 0, 0, 0) }()
	f()
}

// TestRaise: a process started with the default slack runs every thread,
// the runtime's monitor among them, with the raised slack; one started
// with another slack keeps it.
func TestRaise(t *testing.T) {
	for _, c := range []struct {
		inherited time.Duration
		want      string
	}{{Default, "1000000\n"}, {200 * time.Microsecond, "200000\n"}} {
		t.Run(c.inherited.String(), func(t *testing.T) {
			var out []byte
			var err error
			withSlack(t, c.inherited, func() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), helperEnv+"=1")
				out, err = cmd.Output()
			})
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			if string(out) != c.want {
				t.Fatalf("threads' slacks after Raise, inherited %v:\n%s\nwant only %s", c.inherited, out, c.want)
			}
		})
	}
}

// TestStartDefaultSlack: a child started through Start runs with the
// kernel's default slack, where a child forked by a thread with a raised
// slack would inherit it.
func TestStartDefaultSlack(t *testing.T) {
	read := func(start func(*exec.Cmd) error) string {
		cmd := exec.Command("cat", "/proc/self/timerslack_ns")
		var b strings.Builder
		cmd.Stdout = &b
		if err := start(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(b.String())
	}
	var plain, started string
	withSlack(t, time.Millisecond, func() {
		plain = read((*exec.Cmd).Start)
		started = read(Start)
		if cur, err := Current(); err != nil || cur != time.Millisecond {
			t.Errorf("Start left the thread at %v (%v), want 1ms", cur, err)
		}
	})
	if plain != "1000000" {
		t.Fatalf("a child forked by a thread with a 1ms slack has %s: the test cannot tell", plain)
	}
	if started != "50000" {
		t.Fatalf("child started through Start has slack %s, want 50000", started)
	}
}

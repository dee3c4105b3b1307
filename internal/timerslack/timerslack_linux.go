package timerslack

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Current returns the calling thread's timer slack.
func Current() (time.Duration, error) {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("timer slack: %w", err)
	}
	return time.Duration(ns), nil
}

// Raise makes slack the timer slack of every thread of the process when
// it inherited the kernel's default (Default): it sets the slack and
// executes the program again (/proc/self/exe, the same arguments and
// environment, the same process), so it does not return then. A slack
// other than the default was chosen by whoever started the process
// (systemd's TimerSlackNSec=, or an earlier Raise) and is kept: Raise
// returns nil. It returns an error when the program could not be
// executed again; the process then goes on with the slack it had.
//
// Raise must be called before the process does anything that it must not
// do twice: the new image starts from main again.
func Raise(slack time.Duration) error {
	if slack == Default {
		return nil
	}
	// prctl and execve act on the calling thread: the new image's main
	// thread is this one, and keeps its slack.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := Current()
	if err != nil || cur != Default {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0); err != nil {
		return fmt.Errorf("timer slack: %w", err)
	}
	// /proc/self/exe is this very binary, even when a package upgrade
	// replaced the file since.
	err = unix.Exec("/proc/self/exe", os.Args, os.Environ())
	// Not replaced: this thread goes back to the slack of the others.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(Default), 0, 0, 0)
	return fmt.Errorf("timer slack: execute the program again: %w", err)
}

// Start starts cmd with the kernel's default timer slack, whatever the
// process runs with: a child inherits the slack of the thread that forks
// it, and a command (a reload that starts a daemon) must not keep the
// agent's.
func Start(cmd *exec.Cmd) error {
	// os/exec forks on the calling thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := Current()
	if err != nil || cur == Default {
		return cmd.Start()
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(Default), 0, 0, 0); err != nil {
		return cmd.Start()
	}
	defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0) }()
	return cmd.Start()
}

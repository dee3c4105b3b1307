package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

// initSupported: on Linux, exec's first process is an init that reaps
// orphans (a child subreaper), below which the agent and the child run.
const initSupported = true

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (Linux 3.4).
const prSetChildSubreaper = 36

// runInit is the first process of confagent exec. It makes itself a child
// subreaper, so that every orphaned descendant (a daemon the child forked
// and left, the leftovers of a check command) is re-parented to it rather
// than to the host's init, starts the agent-and-supervisor process (this
// binary again, with args), relays every signal it gets to that process,
// and reaps every child that exits. It starts nothing else, so a
// wait4(-1) reaper steals no other code's exit status: that is why the
// agent, whose check and reload commands are waited for by os/exec, runs
// in a process of its own below it. It exits with that process's status.
func runInit(args []string, stderr io.Writer) int {
	// The inner process's parent-death signal is tied to this thread.
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(stderr, "confagent exec: cannot become a child subreaper (orphaned processes will not be reaped here): %v\n", errno)
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	fwd := make(chan os.Signal, 32)
	signal.Notify(fwd, append([]os.Signal{syscall.SIGHUP}, forwardSignals()...)...)
	// /proc/self/exe is this very binary, even when a package upgrade
	// replaced the file since.
	// #nosec G204 -- this binary again, with the arguments it was given.
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{os.Args[0]}, args...), &syscall.ProcAttr{
		Env:   append(os.Environ(), execInnerEnv+"=1"),
		Files: []uintptr{0, 1, 2},
		// Its own process group: a terminal's Ctrl-C reaches only this
		// process (which relays it once) or the child (in the terminal's
		// foreground, see childAttr), never both.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	})
	if err != nil {
		fmt.Fprintf(stderr, "confagent exec: cannot start the agent process: %v\n", err)
		return exitError
	}
	for {
		select {
		case <-chld:
			// One pass reaps every child that has exited: SIGCHLDs that
			// arrive together are merged.
			for {
				var ws syscall.WaitStatus
				wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if err == syscall.EINTR {
					continue
				}
				if err != nil || wpid <= 0 {
					break
				}
				if wpid == pid {
					if ws.Signaled() {
						return 128 + int(ws.Signal())
					}
					return ws.ExitStatus()
				}
			}
		case sig := <-fwd:
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(pid, s)
			}
		}
	}
}

// childAttr starts the child in a process group of its own, in the
// terminal's foreground when confagent has it (so that Ctrl-C reaches the
// child once, from the terminal), with kill as its parent-death signal: a
// confagent killed outright does not leave it running unsupervised.
func childAttr(kill syscall.Signal) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: kill}
	var fg int32
	// #nosec G103 -- tcgetpgrp(0): the ioctl writes the process group into fg.
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&fg))); errno == 0 {
		parent, _ := syscall.Getpgid(os.Getppid())
		if int(fg) == syscall.Getpgrp() || (os.Getenv(execInnerEnv) != "" && int(fg) == parent) {
			a.Foreground, a.Ctty = true, 0
		}
	}
	return a
}

// killGroup sends SIGKILL to the process group the child leads.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

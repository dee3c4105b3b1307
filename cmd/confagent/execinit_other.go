//go:build !linux

package main

import (
	"io"
	"syscall"
)

// initSupported: outside Linux there is no child subreaper; exec runs the
// agent and the child in one process and reaps only the child.
const initSupported = false

func runInit([]string, io.Writer) int { panic("confagent exec: no init outside Linux") }

// childAttr starts the child in a process group of its own.
func childAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to the process group the child leads.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

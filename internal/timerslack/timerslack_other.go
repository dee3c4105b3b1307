//go:build !linux

package timerslack

import (
	"os/exec"
	"time"
)

// Current returns Default: only Linux has a timer slack to set.
func Current() (time.Duration, error) { return Default, nil }

// Raise does nothing outside Linux.
func Raise(time.Duration) error { return nil }

// Start starts cmd.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

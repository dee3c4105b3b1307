//go:build unix && !linux

package main

import (
	"os"
	"testing"
)

// openPTY opens a pseudo-terminal the Linux way only (/dev/ptmx and its
// ioctls); the suite runs on Linux, and elsewhere the tests that need a
// terminal say why they did not run.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	t.Skip("pseudo-terminal tests open /dev/ptmx with Linux ioctls")
	return nil, nil
}

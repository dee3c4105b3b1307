//go:build !linux

package main

import "os"

// isTTY reports whether f is a character device, the best guess for a
// terminal without the platform's terminal ioctl.
func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

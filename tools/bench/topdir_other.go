//go:build !linux

package bench

// spreadSubdirs does nothing off Linux (topdir_linux.go).
func spreadSubdirs(string) bool { return false }

// Package fuzzdir gives fuzz tests a directory for the files they write on
// every input. It is test support for zkconf's own fuzz tests.
package fuzzdir

import (
	"os"
	"testing"
)

// Temp returns a directory removed when tb ends: on tmpfs (/dev/shm) when
// there is one, because a disk shared with fsync-heavy tests stalls the
// fuzzer; tb's own TempDir otherwise.
func Temp(tb testing.TB) string {
	tb.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "zkconf-fuzz-"); err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return tb.TempDir()
}

//go:build linux && (amd64 || arm64)

package durable

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSyncAIO: the kernel's AIO fsync is used here (this machine's
// kernel offers it), every submitted file reported, and a descriptor the
// kernel refuses at submission (a pipe has no fsync) fsynced on its own
// with fsync's error, not lost, the files after it still fsynced.
func TestSyncAIO(t *testing.T) {
	fds, _ := openFiles(t, 4)
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	all := []int{fds[0], fds[1], p[0], fds[2], fds[3]}
	errs, ok := syncAIO(all)
	if !ok {
		t.Fatal("syncAIO: no AIO context on this kernel")
	}
	for i, err := range errs {
		if i == 2 {
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("pipe: %v, want EINVAL", err)
			}
		} else if err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
}

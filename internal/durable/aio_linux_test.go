//go:build linux && (amd64 || arm64)

package durable

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"

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

// TestAIOLayout: the structures handed to the kernel have its sizes
// (struct iocb 64 bytes, struct io_event 32).
func TestAIOLayout(t *testing.T) {
	if n := unsafe.Sizeof(iocb{}); n != 64 {
		t.Errorf("iocb is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(ioEvent{}); n != 32 {
		t.Errorf("ioEvent is %d bytes, want 32", n)
	}
	if n := unsafe.Offsetof(iocb{}.fildes); n != 20 {
		t.Errorf("iocb.fildes at %d, want 20", n)
	}
}

//go:build unix

package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openFiles creates n files in a temporary directory, each written, and
// returns their descriptors (owned by the caller) and names.
func openFiles(t *testing.T, n int) ([]int, []string) {
	t.Helper()
	dir := t.TempDir()
	var fds []int
	var names []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, []byte(p)); err != nil {
			t.Fatal(err)
		}
		fds, names = append(fds, fd), append(names, p)
	}
	return fds, names
}

// TestSyncCloseFDsReportsEach: every descriptor is fsynced and closed,
// and the one whose fsync fails (a pipe: EINVAL), in the middle of more
// than one batch of files, gets its own error, the others none.
func TestSyncCloseFDsReportsEach(t *testing.T) {
	fds, names := openFiles(t, 70)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	const bad = 33
	fds = append(fds[:bad], append([]int{p[0]}, fds[bad:]...)...)
	names = append(names[:bad], append([]string{"pipe"}, names[bad:]...)...)
	errs := SyncCloseFDs(fds, names)
	for i, err := range errs {
		if i == bad {
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("the pipe's error = %v, want EINVAL", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	for i, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
			t.Errorf("%s: descriptor %d still open (%v)", names[i], fd, err)
		}
	}
	for _, n := range names {
		if n == "pipe" {
			continue
		}
		if b, err := os.ReadFile(n); err != nil || string(b) != n {
			t.Errorf("%s = %q, %v", n, b, err)
		}
	}
}

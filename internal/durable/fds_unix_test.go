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

// TestSyncCloseFDsDir: the files are fsynced and closed and the directory
// fsynced and left open; a directory whose fsync fails (a descriptor
// not open: EBADF) gets that error without failing the files, and
// one that cannot be fsynced (a pipe stands in: EINVAL) is tolerated.
func TestSyncCloseFDsDir(t *testing.T) {
	dirFD := func(t *testing.T) int {
		fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	const closed = 1 << 20 // above any descriptor the test opens: EBADF
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for _, tc := range []struct {
		name    string
		dir     int
		wantErr error
		keep    bool // the directory's descriptor is still open afterwards
	}{
		{"directory", dirFD(t), nil, true},
		{"closed descriptor", closed, unix.EBADF, false},
		{"no fsync (EINVAL)", p[0], nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, names := openFiles(t, 3)
			errs, dirErr := SyncCloseFDsDir(fds, names, tc.dir, "d")
			if tc.wantErr == nil && dirErr != nil || tc.wantErr != nil && !errors.Is(dirErr, tc.wantErr) {
				t.Errorf("directory's error = %v, want %v", dirErr, tc.wantErr)
			}
			for i, err := range errs {
				if err != nil {
					t.Errorf("%s: %v", names[i], err)
				}
			}
			if len(errs) != len(fds) {
				t.Fatalf("%d errors for %d files", len(errs), len(fds))
			}
			for i, fd := range fds {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
					t.Errorf("%s: descriptor %d still open (%v)", names[i], fd, err)
				}
			}
			if tc.keep {
				if _, err := unix.FcntlInt(uintptr(tc.dir), unix.F_GETFD, 0); err != nil {
					t.Errorf("the directory's descriptor was closed: %v", err)
				}
			}
			if tc.dir != p[0] && tc.keep {
				_ = unix.Close(tc.dir)
			}
		})
	}
}

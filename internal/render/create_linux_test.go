package render

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirWriterModeDespiteUmask: files created through bare descriptors
// with their final mode (no fchmod) still get exactly opts' mode when
// the umask takes some of its bits, and the writer's record of each is
// the identity lstat sees.
func TestDirWriterModeDespiteUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, mode := range []os.FileMode{0o644, 0o600, 0o755} {
		dir := t.TempDir()
		w := NewDirWriter(dir)
		files := bigPayload(5, 100, "v1")
		if _, err := w.Write(files, opts(mode)); err != nil {
			t.Fatal(err)
		}
		assertSet(t, dir, files, mode)
		gen, _ := CurrentPath(dir)
		for name := range files {
			fi, err := os.Lstat(filepath.Join(gen, name))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := idOf(fi)
			if got := w.rec.files[name].id; got != want {
				t.Errorf("mode %o: %s: recorded identity %+v, lstat sees %+v", mode, name, got, want)
			}
		}
	}
}

// TestIdOfStatMatchesLstat: the identity of a file from a bare fstat is
// the one idOf gives for its lstat, special mode bits included.
func TestIdOfStatMatchesLstat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o755 | os.ModeSetuid | os.ModeSetgid | os.ModeSticky} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := idOf(fi)
		if got := idOfStat(&st); got != want {
			t.Errorf("mode %v: idOfStat = %+v, idOf = %+v", mode, got, want)
		}
	}
}

// TestDirWriterWriteErrorLeavesNoDescriptor: a new file that cannot be
// written (here: larger than RLIMIT_FSIZE allows, EFBIG) fails the write
// with the error, and leaves no descriptor open (a mount it leaked into
// could not be unmounted).
func TestDirWriterWriteErrorLeavesNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(bigPayload(3, 100, "v1"), opts(0o644)); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(bigPayload(3, 8192, "v2"), opts(0o644))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Write = %v, want EFBIG", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after the failed write, %d before", after, before)
	}
	assertSet(t, dir, bigPayload(3, 100, "v1"), 0o644)
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

package render

import (
	"errors"
	"io/fs"
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

// TestFlatDirLstatMatchesOs: what a flatDir's lstat reports (its mode,
// size, mtime, identity and owner) is what os.Lstat reports for the same
// entry, for a regular file with special bits, a directory and a link:
// records made through either compare equal.
func TestFlatDirLstatMatchesOs(t *testing.T) {
	dir := t.TempDir()
	gen := "..2024_01_02_03_04_05.1"
	g := filepath.Join(dir, gen)
	if err := os.Mkdir(g, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g, "f"), []byte("data"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(g, "f"), 0o2750); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(g, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(g, "l")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fd, err := openFlat(root, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.close()
	for _, name := range []string{"f", "d", "l"} {
		got, err := fd.lstat(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.Lstat(filepath.Join(g, name))
		if err != nil {
			t.Fatal(err)
		}
		gid, _ := idOf(got)
		wid, _ := idOf(want)
		gu, gg, _ := fileOwner(got)
		wu, wg, _ := fileOwner(want)
		if got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || gid != wid || gu != wu || gg != wg || got.IsDir() != want.IsDir() {
			t.Errorf("%s: flatDir lstat %v %d %v %+v, os.Lstat %v %d %v %+v", name, got.Mode(), got.Size(), got.ModTime(), gid, want.Mode(), want.Size(), want.ModTime(), wid)
		}
	}
	if _, err := fd.lstat("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lstat of a missing name: %v, want ErrNotExist", err)
	}
	fi, same, err := fd.sameFile("l", []byte("data"), opts(0o2750))
	if err != nil || same || fi != nil {
		t.Errorf("sameFile through a link = %v, %v, %v; want not the file (not followed)", fi, same, err)
	}
}

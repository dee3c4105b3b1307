package render

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// poolEntries lists PoolDir of dir with each entry's inode and link
// count (nil when there is no PoolDir).
func poolEntries(t *testing.T, dir string) map[string]syscall.Stat_t {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, PoolDir))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]syscall.Stat_t{}
	for _, e := range entries {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, PoolDir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = st
	}
	return out
}

// assertPoolFresh checks that PoolDir of dir holds exactly n files, each
// empty, regular, mode 0600 or the payload's, and linked nowhere else.
func assertPoolFresh(t *testing.T, dir string, n int) {
	t.Helper()
	pool := poolEntries(t, dir)
	if len(pool) != n {
		t.Fatalf("%s holds %d entries, want %d", PoolDir, len(pool), n)
	}
	for name, st := range pool {
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != 0 || st.Nlink != 1 {
			t.Errorf("%s/%s: mode %o, size %d, %d links: want an empty regular file linked nowhere else", PoolDir, name, st.Mode, st.Size, st.Nlink)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, PoolDir)); err == nil && fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("%s: mode %v, want drwx------", PoolDir, fi.Mode())
	}
}

// inodeOf is the inode number of path (not followed).
func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestDirWriterTakesPooledFiles(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	one, two := bigPayload(20, 1024, "one"), bigPayload(20, 1024, "two")
	if _, err := w.Write(one, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	assertPoolFresh(t, dir, 20)
	pooled := map[uint64]bool{}
	for _, st := range poolEntries(t, dir) {
		pooled[st.Ino] = true
	}
	if _, err := w.Write(two, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	assertSet(t, dir, two, 0o644)
	cur, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name := range two {
		if ino := inodeOf(t, filepath.Join(cur, name)); !pooled[ino] {
			t.Errorf("%s: inode %d was not one of the pool's: the stage created it", name, ino)
		}
	}
	// The pool's names of the files taken go with the next Refill, which
	// makes as many new ones.
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	assertPoolFresh(t, dir, 20)
	for _, st := range poolEntries(t, dir) {
		if pooled[st.Ino] {
			t.Errorf("inode %d is in the pool again after a stage took it", st.Ino)
		}
	}
	// Dropping the pool names changed the ctimes of the current files:
	// the writer's own change, not drift.
	if ok, err := w.MatchesCurrent(two, opts(0o644)); err != nil || !ok {
		t.Fatalf("MatchesCurrent after Refill = %v, %v", ok, err)
	}
	if ok, err := w.Matches(two, opts(0o644)); err != nil || !ok {
		t.Fatalf("Matches with %s present = %v, %v", PoolDir, ok, err)
	}
}

// TestDirWriterPoolModeAndOwner: a pool made for one mode serves a stage
// with another (and with an owner set): every file gets exactly the
// stage's mode, and the record the stage keeps is what lstat shows.
func TestDirWriterPoolModeAndOwner(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(bigPayload(5, 100, "a"), opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	for i, o := range []FileOptions{opts(0o600), {Mode: 0o755, UID: os.Getuid(), GID: os.Getgid()}, opts(0o640)} {
		files := bigPayload(5, 100, string(rune('b'+i)))
		if _, err := w.Write(files, o); err != nil {
			t.Fatal(err)
		}
		assertSet(t, dir, files, o.Mode)
		cur, err := CurrentPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, fr := range w.rec.files {
			fi, err := os.Lstat(filepath.Join(cur, name))
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := idOf(fi); id != fr.id {
				t.Errorf("write %d: %s: recorded %+v, lstat shows %+v", i, name, fr.id, id)
			}
		}
		if err := w.Refill(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirWriterPoolNotAsLeft: a pooled file that is not the empty file
// Refill made (written to, replaced by a link, removed) is not used: the
// stage creates that file instead, and the set is exactly the payload.
func TestDirWriterPoolNotAsLeft(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(bigPayload(4, 64, "a"), opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(poolEntries(t, dir)))
	if len(names) != 4 {
		t.Fatalf("pool %v, want 4 files", names)
	}
	p := func(i int) string { return filepath.Join(dir, PoolDir, names[i]) }
	// Longer than any payload file: a stage that wrote into it would
	// leave a tail.
	if err := os.WriteFile(p(0), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p(1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", p(1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p(2)); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Link(p(3), elsewhere); err != nil {
		t.Fatal(err)
	}
	files := bigPayload(4, 64, "b")
	if _, err := w.Write(files, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	// Not written into either: the stage looks before it writes.
	for _, f := range []struct {
		path string
		size int64
	}{{p(0), 4096}, {elsewhere, 0}} {
		if fi, err := os.Stat(f.path); err != nil || fi.Size() != f.size {
			t.Errorf("%s: %v, %v: a stage wrote into a pooled name it then refused", f.path, fi, err)
		}
		if b, err := os.ReadFile(f.path); err == nil && bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) {
			t.Errorf("%s holds payload bytes: a stage wrote into a pooled name it then refused", f.path)
		}
	}
	assertSet(t, dir, files, 0o644)
	cur, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(cur, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Nlink != 1 {
			t.Errorf("%s has %d links: a pooled file not as Refill left it was used", name, st.Nlink)
		}
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	assertPoolFresh(t, dir, 4)
}

// TestDirWriterPoolEmptiedAtStart: what an earlier process left in
// PoolDir (a file a crash left linked into the current generation, a
// stray file) is removed by the first Refill of a new DirWriter, never
// taken, and the current set is untouched.
func TestDirWriterPoolEmptiedAtStart(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	files := bigPayload(3, 64, "a")
	if _, err := w.Write(files, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	cur, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	// As a crash between a stage and the Refill after it leaves it.
	if err := os.Link(filepath.Join(cur, "item-000.conf"), filepath.Join(dir, PoolDir, "p999")); err != nil {
		t.Fatal(err)
	}
	w2 := NewDirWriter(dir)
	next := bigPayload(3, 64, "b")
	if _, err := w2.Write(next, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, PoolDir, "p999")); err != nil {
		t.Fatalf("the first write of a new DirWriter touched the old pool: %v", err)
	}
	if err := w2.Refill(); err != nil {
		t.Fatal(err)
	}
	assertPoolFresh(t, dir, 3)
	if _, err := os.Lstat(filepath.Join(dir, PoolDir, "p999")); !os.IsNotExist(err) {
		t.Fatalf("an earlier process's pool file survived the first Refill: %v", err)
	}
	assertSet(t, dir, next, 0o644)
}

// TestDirWriterPoolBounded: whatever the sets written, PoolDir never
// holds more files than the last stage wrote (after its Refill), at most
// maxPool.
func TestDirWriterPoolBounded(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	for i, c := range []struct {
		n    int  // files, all changed
		same bool // the previous set again: nothing staged
		want int  // pool after the Refill
	}{{30, false, 30}, {3, false, 3}, {300, false, maxPool}, {1, false, 1}, {1, true, 1}, {12, false, 12}} {
		tag := string(rune('a' + i))
		if c.same {
			tag = string(rune('a' + i - 1))
		}
		if _, err := w.Write(bigPayload(c.n, 16, tag), opts(0o644)); err != nil {
			t.Fatal(err)
		}
		if err := w.Refill(); err != nil {
			t.Fatal(err)
		}
		assertPoolFresh(t, dir, c.want)
	}
}

// TestDirWriterPoolReplacedByLink: a link in place of PoolDir is never
// followed: the stage creates its files, and Refill replaces the link by
// a pool directory of its own, creating nothing through it.
func TestDirWriterPoolReplacedByLink(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(bigPayload(3, 16, "a"), opts(0o644)); err != nil {
		t.Fatal(err)
	}
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, PoolDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(dir, PoolDir)); err != nil {
		t.Fatal(err)
	}
	files := bigPayload(3, 16, "b")
	if _, err := w.Write(files, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	assertSet(t, dir, files, 0o644)
	if err := w.Refill(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, PoolDir)); err != nil || !fi.IsDir() {
		t.Fatalf("%s after Refill: %v, %v; want a directory", PoolDir, fi, err)
	}
	assertPoolFresh(t, dir, 3)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			t.Fatalf("Refill created %s through the link", e.Name())
		}
	}
	files = bigPayload(3, 16, "c")
	if _, err := w.Write(files, opts(0o644)); err != nil {
		t.Fatal(err)
	}
	assertSet(t, dir, files, 0o644)
}

// TestCreateEmpty: the pool's file maker creates an empty regular file
// with the mode asked (less the umask), exclusively, never through a
// symbolic link, by mknodat and by the exclusive open it falls back to.
func TestCreateEmpty(t *testing.T) {
	for _, noMknod := range []bool{false, true} {
		dir := t.TempDir()
		d, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dfd := int(d.Fd())
		fallback := noMknod
		if err := createEmpty(dfd, "a", 0o640, &fallback); err != nil {
			t.Fatalf("noMknod=%v: createEmpty: %v", noMknod, err)
		}
		if fallback != noMknod {
			t.Errorf("noMknod=%v: the fallback switched to %v on a file system that takes mknodat", noMknod, fallback)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, "a"), &st); err != nil {
			t.Fatal(err)
		}
		umask := syscall.Umask(0)
		syscall.Umask(umask)
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != 0 || st.Nlink != 1 || st.Mode&0o7777 != 0o640&^uint32(umask) {
			t.Errorf("noMknod=%v: mode %o, size %d, %d links: want an empty regular file, mode %o", noMknod, st.Mode, st.Size, st.Nlink, 0o640&^umask)
		}
		if err := createEmpty(dfd, "a", 0o640, &fallback); err != syscall.EEXIST {
			t.Errorf("noMknod=%v: a second createEmpty of a name = %v, want EEXIST", noMknod, err)
		}
		// A dangling symbolic link is not followed: its target is not made.
		if err := os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := createEmpty(dfd, "link", 0o640, &fallback); err != syscall.EEXIST {
			t.Errorf("noMknod=%v: createEmpty over a symbolic link = %v, want EEXIST", noMknod, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "target")); !os.IsNotExist(err) {
			t.Errorf("noMknod=%v: createEmpty followed a symbolic link: %v", noMknod, err)
		}
	}
}

//go:build unix

package render

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Payloads with paths (config trees): the generation directory holds the
// tree, each top-level name is one link to ..data/<name>, one ..data
// switch swaps every sub-directory at once.

// assertTree checks that dir shows exactly want: read through ..data once
// (ReadCurrent), through the top-level links (each a link to
// ..data/<top>), with one generation directory whose sub-directories
// have dirMode.
func assertTree(t *testing.T, dir string, want map[string][]byte, dirMode os.FileMode) {
	t.Helper()
	got, err := ReadCurrent(dir)
	if err != nil {
		t.Fatalf("ReadCurrent: %v", err)
	}
	if !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("ReadCurrent = %q, want %q", got, want)
	}
	tops := slices.Sorted(maps.Keys(topNames(want)))
	if names := topLevel(t, dir); !slices.Equal(names, tops) {
		t.Errorf("top-level entries = %v, want %v", names, tops)
	}
	for _, top := range tops {
		if target, err := os.Readlink(filepath.Join(dir, top)); err != nil || target != filepath.Join(DataLink, top) {
			t.Errorf("%s -> %q (%v), want %s/%s", top, target, err, DataLink, top)
		}
	}
	for name, data := range want {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != string(data) {
			t.Errorf("%s through the links = %q, %v", name, b, err)
		}
	}
	cur, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	for d := range payloadDirs(want) {
		fi, err := os.Lstat(filepath.Join(cur, d))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != dirMode {
			t.Errorf("sub-directory %s: %v %v, want a directory of mode %v", d, fi.Mode(), err, dirMode)
		}
	}
	if gens := generationDirs(t, dir); len(gens) != 1 {
		t.Errorf("generation dirs = %v, want one", gens)
	}
}

func treeOne() map[string][]byte {
	return payload("app.json", "{}", "conf.d/a.conf", "a", "conf.d/sub/b.conf", "b", "conf.d/sub/deep/c.conf", "c",
		"other/x", "x", "k1", "file", "k2/f", "in a directory")
}

// treeTwo moves a file between sub-directories, removes a sub-directory,
// and trades a file and a directory (k1, k2) at the top level and below.
func treeTwo() map[string][]byte {
	return payload("app.json", "{}", "conf.d/a.conf", "a2", "other/b.conf", "b", "other/x", "x",
		"k1/f", "a directory now", "k2", "a file now", "conf.d/sub", "a file where a directory was")
}

// TestDirWriterTree: a tree is written and swapped as a whole; the
// unchanged files, in every sub-directory, are hard links to the inodes of
// the previous generation (not rewritten, not read), a moved file is
// written anew; a reader holding the old ..data sees the old tree whole
// within the grace period; Matches sees no difference after a write and
// sees an edit of a nested file.
func TestDirWriterTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w := NewDirWriter(dir)
	w.SetGrace(time.Hour)
	if _, err := w.Write(treeOne(), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, treeOne(), 0o755)
	before := inodes(t, dir, payload("app.json", "", "conf.d/a.conf", "", "other/x", ""))
	// Settle the records (racily clean until then), as settled does:
	// mtimes in the past, then one pass that reads and records each file.
	for name := range treeOne() {
		if err := os.Chtimes(filepath.Join(dir, name), past, past); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := w.Matches(treeOne(), opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches = %v, %v", ok, err)
	}
	old, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	reads := contentReads.Load()
	if changed, err := w.Write(treeTwo(), opts(0o640)); err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if n := contentReads.Load() - reads; n != 0 {
		t.Errorf("%d files read to compare a settled tree", n)
	}
	after := inodes(t, dir, payload("app.json", "", "other/x", ""))
	if after["app.json"] != before["app.json"] || after["other/x"] != before["other/x"] {
		t.Errorf("unchanged files rewritten: %v -> %v", before, after)
	}
	if ino, _ := inode(t, filepath.Join(dir, "conf.d/a.conf")); ino == before["conf.d/a.conf"] {
		t.Error("a changed file kept its inode")
	}
	// The reader that resolved ..data before the swap: the old tree, whole.
	got, err := readGeneration(old)
	if err != nil || !maps.EqualFunc(got, treeOne(), func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("the resolved old tree: %v, %v", got, err)
	}
	w.SetGrace(time.Nanosecond)
	if _, err := w.Sweep(); err != nil {
		t.Fatal(err)
	}
	w.SetGrace(0)
	assertTree(t, dir, treeTwo(), 0o755)

	// Drift in a nested file: seen, repaired.
	mustWrite(t, filepath.Join(dir, "other/b.conf"), "edited", 0o640)
	if ok, err := w.Matches(treeTwo(), opts(0o640)); err != nil || ok {
		t.Fatalf("Matches after a nested edit = %v, %v", ok, err)
	}
	if changed, err := w.Write(treeTwo(), opts(0o640)); err != nil || !changed {
		t.Fatalf("repair = %v, %v", changed, err)
	}
	assertTree(t, dir, treeTwo(), 0o755)
	// A flat set again: the sub-directories and their links go.
	if _, err := w.Write(payload("only", "o"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, payload("only", "o"), 0o755)
}

// TestDirWriterTreeDirMode: sub-directories get DirMode (and the files'
// owner); another DirMode, or a sub-directory whose mode was changed, is
// a difference Matches sees and Write repairs.
func TestDirWriterTreeDirMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w := NewDirWriter(dir)
	o := opts(0o640)
	o.DirMode = 0o750
	if _, err := w.Write(treeOne(), o); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, treeOne(), 0o750)
	if ok, err := w.Matches(treeOne(), opts(0o640)); err != nil || ok {
		t.Fatalf("Matches with another directory mode = %v, %v", ok, err)
	}
	cur, _ := CurrentPath(dir)
	if err := os.Chmod(filepath.Join(cur, "conf.d/sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Matches(treeOne(), o); err != nil || ok {
		t.Fatalf("Matches after a chmod of a sub-directory = %v, %v", ok, err)
	}
	if _, err := w.Write(treeOne(), o); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, treeOne(), 0o750)
	bad := opts(0o640)
	bad.DirMode = 0o555
	if _, err := w.Write(treeOne(), bad); err == nil || !strings.Contains(err.Error(), "rwx for the owner") {
		t.Fatalf("DirMode 0555: %v", err)
	}
}

// TestDirWriterTreeNeverFollowsLinks: links planted in the current
// generation where a sub-directory or a nested file should be (by
// whoever may write there: the files' owner owns the sub-directories)
// are never followed: Matches sees a difference, the next Write makes a
// new generation of real files and directories, and nothing outside the
// managed directory is read or written.
func TestDirWriterTreeNeverFollowsLinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	outside := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(treeOne(), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	cur, _ := CurrentPath(dir)
	// A directory replaced by a link to a look-alike outside.
	mustMkdir(t, filepath.Join(outside, "sub", "deep"))
	mustWrite(t, filepath.Join(outside, "sub", "b.conf"), "b", 0o640)
	mustWrite(t, filepath.Join(outside, "sub", "deep", "c.conf"), "c", 0o640)
	if err := os.RemoveAll(filepath.Join(cur, "conf.d/sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(cur, "conf.d/sub")); err != nil {
		t.Fatal(err)
	}
	// A nested file replaced by a link to a file outside.
	secret := filepath.Join(outside, "secret")
	mustWrite(t, secret, "x", 0o600)
	if err := os.Remove(filepath.Join(cur, "other/x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cur, "other/x")); err != nil {
		t.Fatal(err)
	}
	snapshotOutside := func() map[string]string {
		out := map[string]string{}
		_ = filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
			if err == nil {
				fi, _ := d.Info()
				out[p] = fi.ModTime().String() + fi.Mode().String()
			}
			return nil
		})
		return out
	}
	outsideBefore := snapshotOutside()
	if ok, err := w.Matches(treeOne(), opts(0o640)); err != nil || ok {
		t.Fatalf("Matches with planted links = %v, %v", ok, err)
	}
	if changed, err := w.Write(treeOne(), opts(0o640)); err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	assertTree(t, dir, treeOne(), 0o755)
	cur, _ = CurrentPath(dir)
	for _, p := range []string{"conf.d/sub", "conf.d/sub/b.conf", "other/x"} {
		if fi, err := os.Lstat(filepath.Join(cur, p)); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s in the new generation: %v %v", p, fi.Mode(), err)
		}
	}
	if !maps.Equal(outsideBefore, snapshotOutside()) {
		t.Error("something outside the managed directory changed")
	}
}

// TestDirWriterTreeForeignTopLevel: a top-level name of the tree taken by
// anything but the writer's own link (a real directory someone made) is
// refused, as for a flat name: nothing is deleted.
func TestDirWriterTreeForeignTopLevel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	mustMkdir(t, filepath.Join(dir, "conf.d"))
	mustWrite(t, filepath.Join(dir, "conf.d", "mine"), "keep", 0o640)
	w := NewDirWriter(dir)
	if _, err := w.Write(treeOne(), opts(0o640)); !errors.Is(err, ErrNotManaged) {
		t.Fatalf("Write over a foreign directory: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "conf.d", "mine")); err != nil || string(b) != "keep" {
		t.Fatalf("foreign file: %q %v", b, err)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

//go:build linux

package render

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigPayload is n files of size bytes each, file i holding content tag.
func bigPayload(n, size int, tag string) map[string][]byte {
	m := make(map[string][]byte, n)
	for i := range n {
		name := fmt.Sprintf("item-%03d.conf", i)
		m[name] = []byte(strings.Repeat(fmt.Sprintf("%s %s\n", name, tag), size)[:size])
	}
	return m
}

// settled writes files and leaves dir as after a write long ago: every
// file's mtime is past racyWindow and the writer has verified it since, so
// its records vouch for every file.
func settled(t *testing.T, files map[string][]byte) (string, *DirWriter) {
	t.Helper()
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if err := os.Chtimes(filepath.Join(dir, name), past, past); err != nil {
			t.Fatal(err)
		}
	}
	// Chtimes changed every identity: this pass reads each file once and
	// records it as trusted.
	if ok, err := w.Matches(files, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches after settling = %v, %v", ok, err)
	}
	return dir, w
}

// TestDirWriterRewritesOnlyChangedFiles: a new set that differs from the
// current one in one file of 50 writes that file only; the other 49 are
// hard links to the same inodes, and none of them is read.
func TestDirWriterRewritesOnlyChangedFiles(t *testing.T) {
	files := bigPayload(50, 4096, "v1")
	dir, w := settled(t, files)
	before := inodes(t, dir, files)
	gen1, _ := CurrentPath(dir)

	next := make(map[string][]byte, len(files))
	for k, v := range files {
		next[k] = v
	}
	next["item-007.conf"] = []byte("changed\n")
	reads := contentReads.Load()
	if changed, err := w.Write(next, opts(0o640)); err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if n := contentReads.Load() - reads; n != 0 {
		t.Errorf("Write read %d files, want 0", n)
	}
	assertSet(t, dir, next, 0o640)
	if gen2, _ := CurrentPath(dir); gen2 == gen1 {
		t.Fatal("no new generation directory")
	}
	after := inodes(t, dir, next)
	for name := range next {
		if name == "item-007.conf" {
			if after[name] == before[name] {
				t.Errorf("%s: the changed file kept its inode", name)
			}
		} else if after[name] != before[name] {
			t.Errorf("%s: unchanged file rewritten (inode %d -> %d)", name, before[name], after[name])
		}
	}

	// The drift check that follows (the watcher sees our own writes)
	// writes nothing and reads at most the file just written, whose
	// mtime is too recent to vouch for it.
	reads = contentReads.Load()
	gen2, _ := CurrentPath(dir)
	if ok, err := w.Matches(next, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches = %v, %v", ok, err)
	}
	if n := contentReads.Load() - reads; n > 1 {
		t.Errorf("Matches read %d files, want at most 1", n)
	}
	if gen3, _ := CurrentPath(dir); gen3 != gen2 || len(generationDirs(t, dir)) != 1 {
		t.Error("Matches changed the directory")
	}
	// An identical set writes nothing either.
	if changed, err := w.Write(next, opts(0o640)); err != nil || changed {
		t.Fatalf("identical Write = %v, %v", changed, err)
	}
	if gen3, _ := CurrentPath(dir); gen3 != gen2 {
		t.Error("identical Write swapped the set")
	}
}

// TestDirWriterMatchesFindsEdits: every kind of edit of an unchanged,
// trusted file is found without a read of the others, and Write repairs
// it.
func TestDirWriterMatchesFindsEdits(t *testing.T) {
	edits := map[string]func(t *testing.T, path string){
		"rewrite in place, same size": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("x", 4096)), 0o640); err != nil {
				t.Fatal(err)
			}
		},
		"rewrite in place, same size, mtime put back": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("y", 4096)), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, past, past); err != nil {
				t.Fatal(err)
			}
		},
		"chmod": func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by rename inside the set": func(t *testing.T, path string) {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				t.Fatal(err)
			}
			tmp := real + ".new"
			if err := os.WriteFile(tmp, []byte(strings.Repeat("z", 4096)), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(tmp, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, real); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			files := bigPayload(20, 4096, "v1")
			dir, w := settled(t, files)
			edit(t, filepath.Join(dir, "item-003.conf"))
			reads := contentReads.Load()
			if ok, err := w.Matches(files, opts(0o640)); err != nil || ok {
				t.Fatalf("Matches after the edit = %v, %v; want drift", ok, err)
			}
			if n := contentReads.Load() - reads; n > 1 {
				t.Errorf("Matches read %d files, want at most the edited one", n)
			}
			repaired(t, dir, w, files, true)
		})
	}
}

// TestDirWriterEditBetweenStageAndCommit: an unchanged file is linked into
// the staged set, so editing it in place before Commit edits the staged
// copy too. The record still holds the verified identity: the edit is
// found as drift after the swap.
func TestDirWriterEditBetweenStageAndCommit(t *testing.T) {
	files := bigPayload(10, 512, "v1")
	dir, w := settled(t, files)
	next := bigPayload(10, 512, "v1")
	next["item-000.conf"] = []byte("new\n")
	s, err := w.Stage(next, opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "item-005.conf"), []byte("edited by hand\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Commit(); err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	if ok, err := w.Matches(next, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches = %v, %v; want the edit found", ok, err)
	}
	if _, err := w.Write(next, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	assertSet(t, dir, next, 0o640)
}

// TestDirWriterAbortKeepsRecords: aborting a staged set unlinks its files,
// which changes the current files' ctime; the records follow, so the next
// check still reads nothing.
func TestDirWriterAbortKeepsRecords(t *testing.T) {
	files := bigPayload(20, 1024, "v1")
	dir, w := settled(t, files)
	next := bigPayload(20, 1024, "v1")
	next["item-001.conf"] = []byte("rejected by the check\n")
	s, err := w.StageIfChanged(next, opts(0o640))
	if err != nil || s == nil {
		t.Fatalf("StageIfChanged = %v, %v", s, err)
	}
	s.Abort()
	reads := contentReads.Load()
	if ok, err := w.Matches(files, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches = %v, %v", ok, err)
	}
	if n := contentReads.Load() - reads; n != 0 {
		t.Errorf("Matches after Abort read %d files, want 0", n)
	}
	if s, err := w.StageIfChanged(files, opts(0o640)); err != nil || s != nil {
		t.Fatalf("StageIfChanged of the current set = %v, %v; want nil, nil", s, err)
	}
	assertSet(t, dir, files, 0o640)
}

// TestDirWriterMatchesLinks: a missing or extra top-level link is drift;
// Matches reports it and writes nothing.
func TestDirWriterMatchesLinks(t *testing.T) {
	files := payload("a", "1", "b", "2")
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if ok, err := w.Matches(files, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches before any write = %v, %v", ok, err)
	}
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Matches(files, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches with a link missing = %v, %v", ok, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); err == nil {
		t.Fatal("Matches restored the link")
	}
	s, err := w.StageIfChanged(files, opts(0o640))
	if err != nil || s == nil {
		t.Fatalf("StageIfChanged = %v, %v; want the link to restore", s, err)
	}
	if changed, err := s.Commit(); err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	assertSet(t, dir, files, 0o640)
	if err := os.Symlink(filepath.Join(DataLink, "gone"), filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Matches(files, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches with an extra link = %v, %v", ok, err)
	}
}

func TestRacyWindow(t *testing.T) {
	fine := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if got := racyWindow(fine); got != 100*time.Millisecond {
		t.Errorf("nanosecond mtime: %v", got)
	}
	for _, coarse := range []time.Time{fine.Truncate(time.Second), fine.Truncate(10 * time.Millisecond)} {
		if got := racyWindow(coarse); got != 3*time.Second {
			t.Errorf("mtime %v: %v, want 3s", coarse, got)
		}
	}
}

// TestDirMatchesCurrent: MatchesCurrent catches a file of the current
// generation changed in place (through its top-level link, as an operator
// would edit it), in a sub-directory too, and a file added to it; it
// leaves the top-level links alone (the caller watched the managed
// directory all along), which Matches does not.
func TestDirMatchesCurrent(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	files := payload("a", "1", "b", "2", "sub/c", "3")
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want bool) {
		t.Helper()
		if ok, err := w.MatchesCurrent(files, opts(0o640)); err != nil || ok != want {
			t.Fatalf("%s: MatchesCurrent = %v, %v; want %v", what, ok, err, want)
		}
	}
	check("as written", true)
	for _, name := range []string{"a", "sub/c"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		check(name+" edited in place", false)
		if err := os.WriteFile(p, files[name], 0o640); err != nil {
			t.Fatal(err)
		}
		check(name+" restored", true)
	}
	cur, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(cur, "extra")
	if err := os.WriteFile(extra, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	check("a file added to the generation", false)
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	check("a top-level link removed", true)
	if ok, err := w.Matches(files, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches after a link removed = %v, %v; want false", ok, err)
	}
}

// TestDirWriterAllChangedReadsNothing: a set written moments ago (its
// records too recent to vouch for the files) replaced by a set in which
// every file changed is written without reading any file of the current
// set back: what was written is not the new payload, so the read could
// only find a match that an edit made in the same timestamp tick.
func TestDirWriterAllChangedReadsNothing(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	v1, v2 := bigPayload(20, 1024, "v1"), bigPayload(20, 1024, "v2")
	if _, err := w.Write(v1, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	reads := contentReads.Load()
	if changed, err := w.Write(v2, opts(0o640)); err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if n := contentReads.Load() - reads; n != 0 {
		t.Errorf("Write read %d files of the set it replaced, want 0", n)
	}
	assertSet(t, dir, v2, 0o640)
	// What was just written still gets read where the payload is what
	// the record says (a drift check right after the write).
	reads = contentReads.Load()
	if ok, err := w.Matches(v2, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches = %v, %v", ok, err)
	}
	if n := contentReads.Load() - reads; n != int64(len(v2)) {
		t.Errorf("Matches read %d files, want %d (records too recent to vouch)", n, len(v2))
	}
}

// TestDirWriterEditToNewPayloadKept: a file of the current set edited
// (its identity changed) to hold exactly the next payload's content is
// still recognised and linked into the next set, not written again;
// edited to something else it is replaced.
func TestDirWriterEditToNewPayloadKept(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	v1 := bigPayload(3, 100, "v1")
	if _, err := w.Write(v1, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	v2 := bigPayload(3, 100, "v2")
	gen, _ := CurrentPath(dir)
	edited := filepath.Join(gen, "item-001.conf")
	if err := os.WriteFile(edited, v2["item-001.conf"], 0o640); err != nil {
		t.Fatal(err)
	}
	// A later mtime: the edit changes the identity whatever the clock's tick.
	if err := os.Chtimes(edited, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	before, _ := inode(t, edited)
	if _, err := w.Write(v2, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	assertSet(t, dir, v2, 0o640)
	after := inodes(t, dir, v2)
	if after["item-001.conf"] != before {
		t.Errorf("the file edited to the new content was written again (inode %d -> %d), want it linked", before, after["item-001.conf"])
	}
}

// fsClockPast waits until the file system dir is on stamps a new ctime
// later than t (Unix ns): an edit made from then on cannot be mistaken
// for one of the writer's own links or unlinks, which ended by t.
func fsClockPast(t *testing.T, dir string, t0 int64) {
	t.Helper()
	probe := filepath.Join(dir, "..probe")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(probe)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := idOf(fi)
		if err := os.Remove(probe); err != nil {
			t.Fatal(err)
		}
		if id.ctime > t0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file system's clock did not pass %d in 30 s", t0)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDirWriterOwnCtimeBounded: the writer no longer lstats a kept file
// after linking it, nor the current set after removing a previous
// generation; the next lstat accepts the ctime those calls gave the inode
// (fileRecord.ownBy), and nothing later. An edit in place of a kept file
// of the new set that puts its mtime back (same inode, size, mode, owner
// and mtime: only its ctime tells) is still found after such a write, as
// an edit between the writer's own lstats was before.
func TestDirWriterOwnCtimeBounded(t *testing.T) {
	for _, grace := range []time.Duration{0, time.Nanosecond} {
		t.Run(fmt.Sprintf("grace=%v", grace), func(t *testing.T) {
			files := bigPayload(20, 1024, "v1")
			dir, w := settled(t, files)
			w.SetGrace(grace)
			w.SetOwnerSweeps(true)
			next := bigPayload(20, 1024, "v1")
			next["item-000.conf"] = []byte("new\n")
			if changed, err := w.Write(next, opts(0o640)); err != nil || !changed {
				t.Fatalf("Write = %v, %v", changed, err)
			}
			if _, err := w.Sweep(); err != nil { // removes the previous generation (grace 1 ns)
				t.Fatal(err)
			}
			// The writer's own ctimes are accepted without a read.
			reads := contentReads.Load()
			if ok, err := w.MatchesCurrent(next, opts(0o640)); err != nil || !ok {
				t.Fatalf("MatchesCurrent after the write = %v, %v", ok, err)
			}
			if n := contentReads.Load() - reads; n > 1 {
				t.Errorf("MatchesCurrent read %d files, want at most the one just written", n)
			}
			fsClockPast(t, dir, time.Now().UnixNano())
			path := filepath.Join(dir, "item-005.conf")
			fi, err := os.Stat(path) // the file, through its link
			if err != nil {
				t.Fatal(err)
			}
			mtime := fi.ModTime()
			if err := os.WriteFile(path, []byte(strings.Repeat("x", 1024)), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if ok, err := w.MatchesCurrent(next, opts(0o640)); err != nil || ok {
				t.Fatalf("MatchesCurrent after an edit that put the mtime back = %v, %v; want drift", ok, err)
			}
			if changed, err := w.Write(next, opts(0o640)); err != nil || !changed {
				t.Fatalf("repairing Write = %v, %v", changed, err)
			}
			if _, err := w.Sweep(); err != nil {
				t.Fatal(err)
			}
			assertSet(t, dir, next, 0o640)
		})
	}
}

// TestDirWriterReplacedBeforeLinkFound: a kept file replaced in the
// current set (a new inode renamed over it) after the comparison and
// before the link puts the replacement into the staged set, which the
// writer no longer lstats after the link: the next comparison of the new
// set (the agent's post-apply check) finds it, and a write repairs it.
func TestDirWriterReplacedBeforeLinkFound(t *testing.T) {
	files := bigPayload(20, 1024, "v1")
	dir, w := settled(t, files)
	w.beforeLink = func(name string) {
		if name != "item-005.conf" {
			return
		}
		real, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(real+".new", []byte(strings.Repeat("z", 1024)), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(real+".new", 0o640); err != nil {
			t.Fatal(err)
		}
		// The old file's mtime too: only the inode tells them apart.
		fi, err := os.Stat(real)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(real+".new", fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(real+".new", real); err != nil {
			t.Fatal(err)
		}
	}
	next := bigPayload(20, 1024, "v1")
	next["item-000.conf"] = []byte("new\n")
	if _, err := w.Write(next, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	w.beforeLink = nil
	got, err := ReadCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	holds := maps.EqualFunc(got, next, bytes.Equal)
	ok, err := w.MatchesCurrent(next, opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	if ok != holds {
		t.Fatalf("MatchesCurrent = %v, but the new set holds the payload: %v", ok, holds)
	}
	if ok, err := w.Matches(next, opts(0o640)); err != nil || ok != holds {
		t.Fatalf("Matches = %v, %v; the new set holds the payload: %v", ok, err, holds)
	}
	repaired(t, dir, w, next, false)
}

// repaired writes files over drift in dir and checks that the write
// succeeded (and changed something, when mustChange), that dir then holds
// files and that w finds no drift.
func repaired(t *testing.T, dir string, w *DirWriter, files map[string][]byte, mustChange bool) {
	t.Helper()
	if changed, err := w.Write(files, opts(0o640)); err != nil || (mustChange && !changed) {
		t.Fatalf("repairing Write = %v, %v", changed, err)
	}
	assertSet(t, dir, files, 0o640)
	if ok, err := w.Matches(files, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches after the repair = %v, %v", ok, err)
	}
}

// TestDirWriterGenFileBecomesLink: a file of the current generation
// replaced by a symbolic link to a file outside the directory that holds
// exactly the payload is drift, never followed: the comparison (a flat
// set's, through the generation directory's bare descriptor) reports it,
// the write replaces the link with a regular file, and the file outside
// is left as it was.
func TestDirWriterGenFileBecomesLink(t *testing.T) {
	files := bigPayload(5, 512, "v1")
	dir, w := settled(t, files)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, files["item-002.conf"], 0o640); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "item-002.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, real); err != nil {
		t.Fatal(err)
	}
	for _, check := range []func(map[string][]byte, FileOptions) (bool, error){w.MatchesCurrent, w.Matches} {
		if ok, err := check(files, opts(0o640)); err != nil || ok {
			t.Fatalf("check with a link in the set = %v, %v; want drift", ok, err)
		}
	}
	if changed, err := w.Write(files, opts(0o640)); err != nil || !changed {
		t.Fatalf("repairing Write = %v, %v", changed, err)
	}
	assertSet(t, dir, files, 0o640)
	gen, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(gen, "item-002.conf")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("item-002.conf after the repair: %v, %v; want a regular file", fi, err)
	}
	if got, err := os.ReadFile(outside); err != nil || string(got) != string(files["item-002.conf"]) {
		t.Fatalf("the file outside changed: %q, %v", got, err)
	}
}

// TestDirWriterWatchedLinksTrusted: with SetLinksWatched, a write reads
// no top-level link a check found ours before and the listing shows with
// the same inode number; Matches reads every one, and a link found not to
// be ours is read (and refused) by the next write. Off, every write reads
// every link.
func TestDirWriterWatchedLinksTrusted(t *testing.T) {
	files := bigPayload(20, 64, "v1")
	dir := t.TempDir()
	w := NewDirWriter(dir)
	w.SetLinksWatched(true)
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	reads := w.linkReads
	if ok, err := w.Matches(files, opts(0o640)); err != nil || !ok {
		t.Fatalf("Matches = %v, %v", ok, err)
	}
	if n := w.linkReads - reads; n != len(files) {
		t.Errorf("Matches read %d links, want %d", n, len(files))
	}
	next := maps.Clone(files)
	next["item-007.conf"] = []byte("changed\n")
	reads = w.linkReads
	if changed, err := w.Write(next, opts(0o640)); err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if n := w.linkReads - reads; n != 0 {
		t.Errorf("watched: Write read %d links, want 0", n)
	}
	assertSet(t, dir, next, 0o640)

	// A foreign link in a payload slot, taking the inode number of the
	// link it replaced (what the file system may give it): a write
	// trusts it and leaves it alone, the outside file untouched.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, next["item-003.conf"], 0o600); err != nil {
		t.Fatal(err)
	}
	slot := filepath.Join(dir, "item-003.conf")
	if err := os.Remove(slot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, slot); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(slot)
	if err != nil {
		t.Fatal(err)
	}
	w.ownLinks["item-003.conf"] = fi.Sys().(*syscall.Stat_t).Ino
	if _, err := w.Write(next, opts(0o640)); err != nil {
		t.Fatalf("Write with a trusted link = %v", err)
	}
	if target, err := os.Readlink(slot); err != nil || target != outside {
		t.Fatalf("the foreign link was changed: %q, %v", target, err)
	}
	// The owner's pass after the event: Matches reads every link and
	// finds it; the next write reads it too and refuses it.
	if ok, err := w.Matches(next, opts(0o640)); err != nil || ok {
		t.Fatalf("Matches with a foreign link = %v, %v; want false", ok, err)
	}
	if _, err := w.Write(next, opts(0o640)); !errors.Is(err, ErrNotManaged) {
		t.Fatalf("Write after Matches = %v, want ErrNotManaged", err)
	}
	if got, err := os.ReadFile(outside); err != nil || !bytes.Equal(got, next["item-003.conf"]) {
		t.Fatalf("outside file = %q, %v", got, err)
	}

	// Not watched: every write reads every link.
	if err := os.Remove(slot); err != nil {
		t.Fatal(err)
	}
	w.SetLinksWatched(false)
	if _, err := w.Write(next, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	next["item-008.conf"] = []byte("changed too\n")
	reads = w.linkReads
	if _, err := w.Write(next, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if n := w.linkReads - reads; n != len(next) {
		t.Errorf("not watched: Write read %d links, want %d", n, len(next))
	}
	assertSet(t, dir, next, 0o640)
}

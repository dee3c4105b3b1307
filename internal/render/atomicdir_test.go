//go:build unix

package render

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func payload(kv ...string) map[string][]byte {
	m := make(map[string][]byte, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

// generationDirs lists the timestamped directories in dir.
func generationDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if isGenerationDir(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// topLevel lists the non-".." entries of dir.
func topLevel(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	return out
}

// assertSet checks that dir shows exactly want, through ..data and through
// the top-level links, with a single generation directory and no leftovers.
func assertSet(t *testing.T, dir string, want map[string][]byte, mode os.FileMode) {
	t.Helper()
	got, err := ReadCurrent(dir)
	if err != nil {
		t.Fatalf("ReadCurrent: %v", err)
	}
	if !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("ReadCurrent = %q, want %q", got, want)
	}
	if names := topLevel(t, dir); !slices.Equal(names, slices.Sorted(maps.Keys(want))) {
		t.Errorf("top-level entries = %v, want %v", names, slices.Sorted(maps.Keys(want)))
	}
	for name, data := range want {
		link := filepath.Join(dir, name)
		target, err := os.Readlink(link)
		if err != nil || target != filepath.Join(DataLink, name) {
			t.Errorf("%s -> %q (%v), want relative link into %s", name, target, err, DataLink)
		}
		b, err := os.ReadFile(link)
		if err != nil || string(b) != string(data) {
			t.Errorf("%s = %q, %v", name, b, err)
		}
		fi, err := os.Stat(link)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s mode = %v, want %v", name, fi.Mode(), mode)
		}
	}
	target, err := os.Readlink(filepath.Join(dir, DataLink))
	if err != nil || filepath.IsAbs(target) {
		t.Errorf("%s -> %q (%v), want a relative link", DataLink, target, err)
	}
	if gens := generationDirs(t, dir); len(gens) != 1 || gens[0] != target {
		t.Errorf("generation dirs = %v, want only %s", gens, target)
	}
	if _, err := os.Lstat(filepath.Join(dir, DataTmpLink)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", DataTmpLink, err)
	}
}

func TestDirWriterSequence(t *testing.T) {
	type step struct {
		name        string
		files       map[string][]byte
		mode        os.FileMode
		wantChanged bool
	}
	steps := []step{
		{"first write", payload("a.conf", "A1", "b.conf", "B1"), 0o640, true},
		{"identical", payload("a.conf", "A1", "b.conf", "B1"), 0o640, false},
		{"content change", payload("a.conf", "A2", "b.conf", "B1"), 0o640, true},
		{"mode change only", payload("a.conf", "A2", "b.conf", "B1"), 0o600, true},
		{"item added", payload("a.conf", "A2", "b.conf", "B1", "c.conf", "C1"), 0o600, true},
		{"item removed", payload("a.conf", "A2", "c.conf", "C1"), 0o600, true},
		{"hidden names allowed", payload(".env", "E", "a.conf", "A2"), 0o600, true},
		{"empty set", payload(), 0o600, true},
		{"empty set again", payload(), 0o600, false},
		{"back", payload("a.conf", "A3"), 0o644, true},
	}
	dir := filepath.Join(t.TempDir(), "out") // created by the writer
	w := NewDirWriter(dir)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			var before string
			if !s.wantChanged {
				before, _ = CurrentPath(dir)
			}
			changed, err := w.Write(s.files, opts(s.mode))
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if changed != s.wantChanged {
				t.Errorf("changed = %v, want %v", changed, s.wantChanged)
			}
			if before != "" {
				if after, _ := CurrentPath(dir); after != before {
					t.Errorf("unchanged write swapped %s -> %s", before, after)
				}
			}
			assertSet(t, dir, s.files, s.mode)
		})
	}
}

func TestDirWriterUnchangedKeepsFiles(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	files := payload("a", "1", "b", "2")
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a")
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	ino1, mt1 := inode(t, path)
	if changed, err := w.Write(payload("a", "1", "b", "2"), opts(0o640)); err != nil || changed {
		t.Fatalf("identical Write = %v, %v", changed, err)
	}
	ino2, mt2 := inode(t, path)
	if ino1 != ino2 || !mt1.Equal(mt2) {
		t.Error("identical Write rewrote the files")
	}
}

func TestDirWriterInvalidNames(t *testing.T) {
	// A path is fine ("a/b"), but not an empty component, a leading or
	// trailing "/", a bad component, nor a file that is also a directory
	// ("ok/x" beside the file "ok").
	for _, name := range []string{"", ".", "..", "..data", "..x", "a//b", "a/", "a/..x/b", "a/./b", "ok/x", "/abs", "../up", "nul\x00", strings.Repeat("n", 256)} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			dir := t.TempDir()
			w := NewDirWriter(dir)
			if _, err := w.Write(payload("ok", "1"), opts(0o640)); err != nil {
				t.Fatal(err)
			}
			_, err := w.Write(payload("ok", "2", name, "x"), opts(0o640))
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("err = %v, want ErrInvalidName", err)
			}
			assertSet(t, dir, payload("ok", "1"), 0o640)
		})
	}
}

func TestDirWriterCleansCrashLeftovers(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte // second write; same as first = unchanged path
	}{
		{"on changed write", payload("a", "2")},
		{"on unchanged write", payload("a", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w := NewDirWriter(dir)
			if _, err := w.Write(payload("a", "1"), opts(0o640)); err != nil {
				t.Fatal(err)
			}
			// A crash between symlink and rename leaves ..data_tmp; one
			// during staging leaves a half-written generation directory.
			orphan := filepath.Join(dir, "..2020_01_02_03_04_05.123456")
			if err := os.Mkdir(orphan, 0o755); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(orphan, "a"), "", 0o640)
			if err := os.Symlink(filepath.Base(orphan), filepath.Join(dir, DataTmpLink)); err != nil {
				t.Fatal(err)
			}
			// Not ours: must survive.
			keep := filepath.Join(dir, "..not-a-generation")
			if err := os.Mkdir(keep, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(tt.files, opts(0o640)); err != nil {
				t.Fatalf("Write after crash: %v", err)
			}
			if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("orphan generation not removed: %v", err)
			}
			if _, err := os.Stat(keep); err != nil {
				t.Errorf("foreign directory removed: %v", err)
			}
			assertSet(t, dir, tt.files, 0o640)
		})
	}
}

func TestDirWriterRepairsMissingLink(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	files := payload("a", "1", "b", "2")
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	// As after a crash between the swap and the link creation.
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	changed, err := w.Write(files, opts(0o640))
	if err != nil || !changed {
		t.Fatalf("Write = %v, %v; want changed (link restored)", changed, err)
	}
	assertSet(t, dir, files, 0o640)
}

func TestDirWriterNotManaged(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"regular file at a payload name", func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "a"), "user data", 0o644)
		}},
		{"foreign symlink at a payload name", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/hostname", filepath.Join(dir, "a")); err != nil {
				t.Fatal(err)
			}
		}},
		{"..data is a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, DataLink), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"..data points elsewhere", func(t *testing.T, dir string) {
			if err := os.Symlink("/tmp", filepath.Join(dir, DataLink)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			before := topLevel(t, dir)
			_, err := NewDirWriter(dir).Write(payload("a", "1"), opts(0o640))
			if !errors.Is(err, ErrNotManaged) {
				t.Fatalf("err = %v, want ErrNotManaged", err)
			}
			if after := topLevel(t, dir); !slices.Equal(before, after) {
				t.Errorf("entries changed: %v -> %v", before, after)
			}
			if gens := generationDirs(t, dir); len(gens) != 0 {
				t.Errorf("generation dirs left: %v", gens)
			}
		})
	}
}

func TestDirWriterKeepsForeignEntries(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "README"), "not ours", 0o644)
	w := NewDirWriter(dir)
	if _, err := w.Write(payload("a", "1"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload("b", "1"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "README")); err != nil || string(b) != "not ours" {
		t.Errorf("foreign file touched: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed item's link still there: %v", err)
	}
}

func TestDirWriterStage(t *testing.T) {
	old := payload("a", "old-a", "b", "old-b")
	next := payload("a", "new-a", "c", "new-c")
	tests := []struct {
		name    string
		checkOK bool
		want    map[string][]byte
	}{
		{"check passes", true, next},
		{"check fails", false, old},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w := NewDirWriter(dir)
			if _, err := w.Write(old, opts(0o640)); err != nil {
				t.Fatal(err)
			}
			s, err := w.Stage(next, opts(0o640))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Abort()
			if !s.Changed() {
				t.Error("Changed() = false")
			}
			// The check command sees the complete new set...
			staged, err := readGeneration(s.Path())
			if err != nil || len(staged) != 2 || string(staged["c"]) != "new-c" {
				t.Errorf("staged dir = %q, %v", staged, err)
			}
			// ...while consumers still see the old one.
			assertSetContent(t, dir, old)
			if tt.checkOK {
				changed, err := s.Commit()
				if err != nil || !changed {
					t.Fatalf("Commit = %v, %v", changed, err)
				}
			} else {
				s.Abort()
				if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("staged dir not removed: %v", err)
				}
			}
			assertSet(t, dir, tt.want, 0o640)
		})
	}
}

func TestDirWriterStageUnchanged(t *testing.T) {
	dir := t.TempDir()
	w := NewDirWriter(dir)
	files := payload("a", "1")
	if _, err := w.Write(files, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	before, _ := CurrentPath(dir)
	s, err := w.Stage(files, opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	if s.Changed() {
		t.Error("Changed() = true for identical set")
	}
	if changed, err := s.Commit(); err != nil || changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	if after, _ := CurrentPath(dir); after != before {
		t.Error("identical staged set was swapped in")
	}
	if _, err := s.Commit(); !errors.Is(err, ErrAlreadyDone) {
		t.Errorf("second Commit: %v", err)
	}
	assertSet(t, dir, files, 0o640)
}

func assertSetContent(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	got, err := ReadCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("current set = %q, want %q", got, want)
	}
}

func TestReadCurrentNoData(t *testing.T) {
	if _, err := ReadCurrent(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

// TestDirWriterConcurrentReaders swaps 200 generations while readers
// resolve ..data once per read; every set they see must be complete and
// from a single generation.
func TestDirWriterConcurrentReaders(t *testing.T) {
	const generations = 200
	names := []string{"a.conf", "b.conf", "c.conf", "d.conf", "e.conf"}
	gen := func(g int) map[string][]byte {
		m := make(map[string][]byte, len(names))
		for i, n := range names {
			// Varying sizes so a torn read would also show as a size mix.
			m[n] = []byte(fmt.Sprintf("generation=%d\n%s", g, strings.Repeat("x", (g*7+i*13)%300)))
		}
		return m
	}
	dir := t.TempDir()
	w := NewDirWriter(dir)
	if _, err := w.Write(gen(0), opts(0o644)); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	reads := make([]int, 2)
	errs := make(chan error, len(reads))
	for r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := -1
			for {
				select {
				case <-done:
					return
				default:
				}
				set, err := ReadCurrent(dir)
				if err != nil {
					errs <- err
					return
				}
				if len(set) != len(names) {
					errs <- fmt.Errorf("incomplete set: %d files", len(set))
					return
				}
				g := -1
				for name, data := range set {
					var n int
					if _, err := fmt.Sscanf(string(data), "generation=%d", &n); err != nil {
						errs <- fmt.Errorf("%s: unparsable content", name)
						return
					}
					if g == -1 {
						g = n
					} else if n != g {
						errs <- fmt.Errorf("mixed set: generations %d and %d", g, n)
						return
					}
				}
				if g < last {
					errs <- fmt.Errorf("went back from generation %d to %d", last, g)
					return
				}
				last = g
				reads[r]++
				// Let the writer run on a busy 2-core machine; readers
				// still overlap every swap many times.
				runtime.Gosched()
			}
		}()
	}
	for g := 1; g <= generations; g++ {
		if changed, err := w.Write(gen(g), opts(0o644)); err != nil || !changed {
			close(done)
			wg.Wait()
			t.Fatalf("generation %d: changed=%v err=%v", g, changed, err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("reads per reader: %v", reads)
	assertSet(t, dir, gen(generations), 0o644)
}

package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/render"
)

// TestDriftOwnRenameIsNoDrift: the rename that puts a file or template
// target's output into place, told to the watcher beforehand (expect), asks
// for no repair pass, while an edit of that file afterwards, and a change
// of another file of the directory, still do. Before expect, every apply
// of a template target cost a pass a debounce after it, a wake-up of the
// whole agent of its own.
func TestDriftOwnRenameIsNoDrift(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "out.conf")
	opts := render.FileOptions{Mode: 0o644, UID: -1, GID: -1}
	var mu sync.Mutex
	var passed []string
	d, err := newDriftWatcherFunc(slog.New(slog.DiscardHandler), func(name string) {
		mu.Lock()
		passed = append(passed, filepath.Base(name))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if added, fresh := d.watch([]string{dir}); !added || !fresh[dir] {
		t.Fatal("a new watch was not reported")
	}
	if added, fresh := d.watch([]string{dir}); added || len(fresh) != 0 {
		t.Fatal("an unchanged watch set was reported as new")
	}
	// waitPass waits for the pass that a change of marker asks for:
	// inotify delivers events in order, so every event before it has been
	// looked at by then.
	waitPass := func(marker string) []string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, marker), []byte(marker), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.events():
		case <-time.After(time.Minute):
			t.Fatalf("no pass after %s changed", marker)
		}
		mu.Lock()
		defer mu.Unlock()
		got := slices.Compact(slices.Clone(passed))
		passed = passed[:0]
		return got
	}

	for i, data := range []string{"one\n", "two\n", "three\n"} {
		d.expect(dest, render.DigestOf([]byte(data)), opts)
		if _, err := render.WriteFile(dest, []byte(data), opts); err != nil {
			t.Fatal(err)
		}
		if got := waitPass("marker"); !slices.Equal(got, []string{"marker"}) {
			t.Fatalf("write %d: passes asked by %v, want only the marker's", i, got)
		}
	}

	// An edit of the output after its rename is drift.
	if err := os.WriteFile(dest, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := waitPass("marker"); !slices.Contains(got, "out.conf") {
		t.Fatalf("an edit of the output asked for no pass: %v", got)
	}
	// So is a rename into place of something else than expected, and a
	// mode that is not the target's.
	if _, err := render.WriteFile(dest, []byte("foreign\n"), opts); err != nil {
		t.Fatal(err)
	}
	if got := waitPass("marker"); !slices.Contains(got, "out.conf") {
		t.Fatalf("a foreign rename asked for no pass: %v", got)
	}
	d.expect(dest, render.DigestOf([]byte("three\n")), opts)
	if _, err := render.WriteFile(dest, []byte("three\n"), render.FileOptions{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	if got := waitPass("marker"); !slices.Contains(got, "out.conf") {
		t.Fatalf("the expected content with another mode asked for no pass: %v", got)
	}
	// Removing it is drift.
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if got := waitPass("marker"); !slices.Contains(got, "out.conf") {
		t.Fatalf("removing the output asked for no pass: %v", got)
	}
}

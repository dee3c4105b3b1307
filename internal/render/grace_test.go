package render

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestDirWriterGracePeriod: with a grace period the directory a swap
// replaced is kept, complete, for readers that resolved ..data before the
// swap; Sweep removes it once the grace period is over (and says when the
// next one ends); a new DirWriter (an agent restarted) keeps a leftover
// within the grace period counted from the last swap and removes it
// afterwards; with no grace period it goes during the swap, as before.
func TestDirWriterGracePeriod(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w := NewDirWriter(dir)
	w.SetGrace(time.Hour)
	one := payload("a", "1", "b", "1", "same", "s")
	if _, err := w.Write(one, opts(0o640)); err != nil {
		t.Fatal(err)
	}
	resolved, err := CurrentPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload("a", "2", "same", "s"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	got, err := readGeneration(resolved)
	if err != nil || len(got) != 3 || string(got["a"]) != "1" || string(got["b"]) != "1" {
		t.Fatalf("the resolved set after the swap: %v, %v", got, err)
	}
	if next, err := w.Sweep(); err != nil || next <= 0 {
		t.Fatalf("Sweep within the grace period = %v, %v", next, err)
	}
	if len(generationDirs(t, dir)) != 2 {
		t.Fatalf("generation dirs %v, want the current and the previous", generationDirs(t, dir))
	}

	// Restart: a new writer does not know the leftover; it keeps it (the
	// last swap was just now) and the grace period's end removes it.
	w = NewDirWriter(dir)
	w.SetGrace(time.Hour)
	if _, err := w.Write(payload("a", "2", "same", "s"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(resolved); err != nil {
		t.Fatalf("leftover removed within its grace period: %v", err)
	}
	w.SetGrace(time.Nanosecond)
	if next, err := w.Sweep(); err != nil || next != 0 {
		t.Fatalf("Sweep after the grace period = %v, %v", next, err)
	}
	if _, err := os.Stat(resolved); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("previous directory not removed after its grace period: %v", err)
	}
	files, err := ReadCurrent(dir)
	if err != nil || len(files) != 2 || string(files["a"]) != "2" {
		t.Fatalf("current set: %v, %v", files, err)
	}

	// No grace period: removed during the swap.
	w.SetGrace(0)
	cur, _ := CurrentPath(dir)
	if _, err := w.Write(payload("a", "3"), opts(0o640)); err != nil {
		t.Fatal(err)
	}
	if gens := generationDirs(t, dir); len(gens) != 1 || slices.Contains(gens, filepath.Base(cur)) {
		t.Fatalf("generation dirs %v after a swap without grace period", gens)
	}
}

// TestTransientErrorClass: the errnos of a full or failing filesystem are
// the transient class (errors.Is ErrTransient, errors.As
// *TransientError, the errno still visible); others are not.
func TestTransientErrorClass(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO} {
		err := classify(&os.PathError{Op: "write", Path: "/x", Err: errno})
		var te *TransientError
		if !errors.Is(err, ErrTransient) || !errors.As(err, &te) || !errors.Is(err, errno) || !IsTransient(err) {
			t.Errorf("%v: not the transient class: %#v", errno, err)
		}
		if err.Error() != "write /x: "+errno.Error() {
			t.Errorf("message changed: %q", err)
		}
	}
	for _, err := range []error{&os.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, ErrNotManaged, nil} {
		if got := classify(err); errors.Is(got, ErrTransient) || IsTransient(got) {
			t.Errorf("%v classified as transient", err)
		}
	}
}

package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProbeInodes checks the inode-creation probe: it times each of its n
// creations and leaves its files in place (their removal would be recent
// frees the measured processes step over), named after its tag, so that
// a second probe in the same directory creates files of its own; where it
// cannot create, it fails and removes what it made.
func TestProbeInodes(t *testing.T) {
	dir := t.TempDir()
	names := func() []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range ents {
			ns = append(ns, e.Name())
		}
		return ns
	}
	p, err := probeInodes(dir, "before", 25)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 25 || p.Create.N != 25 || p.firstIno == 0 {
		t.Errorf("probe of 25 files: N %d, %d creations timed, first inode %d", p.N, p.Create.N, p.firstIno)
	}
	if p.Create.P50 <= 0 || p.Create.P90 < p.Create.P50 || p.Create.Max < p.Create.P90 || p.Total < p.Create.Max {
		t.Errorf("probe times out of order: %+v", p)
	}
	if got := names(); len(got) != 25 || !slices.Contains(got, "before-0") || !slices.Contains(got, "before-24") {
		t.Errorf("after the probe the directory holds %v, want before-0 … before-24", got)
	}
	if _, err := probeInodes(dir, "after", 5); err != nil {
		t.Fatalf("a second probe beside the first: %v", err)
	}
	if n := len(names()); n != 30 {
		t.Errorf("%d files after two probes of 25 and 5, want 30", n)
	}

	// A file of the probe's name already there: the exclusive creation
	// fails, and what the probe made before it is removed.
	if err := os.WriteFile(filepath.Join(dir, "again-3"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := probeInodes(dir, "again", 10); err == nil {
		t.Error("the probe succeeded over a file of its own name")
	}
	if got := names(); len(got) != 31 || slices.Contains(got, "again-0") || !slices.Contains(got, "again-3") {
		t.Errorf("after a failed probe the directory holds %v, want the 30 earlier files and again-3", got)
	}
}

// TestWriteSynced checks what confpush's input writer leaves: a new file
// with the bytes given, and an existing longer file replaced by them
// whole (truncated, as the set's next generation replaces the last), and
// that it fails where it cannot create.
func TestWriteSynced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "item.conf")
	for _, want := range []string{"a longer first content\n", "short\n", ""} {
		if err := writeSynced(p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("file holds %q after writing %q", got, want)
		}
	}
	if err := writeSynced(filepath.Join(dir, "missing", "item.conf"), []byte("x")); err == nil {
		t.Fatal("writeSynced into a missing directory succeeded")
	}
}

// TestPushFirstIn checks the like-for-like pass's order: in every four
// consecutive rounds each program runs first twice (warm-up rounds, with
// negative indexes, included), the measured rounds start with confpush
// first then the floor first (a pass of two measured rounds has each
// program in each position), and rounds six apart (confpush's history GC
// recurs every sixth publish) run in opposite orders, which plain
// alternation would not give.
func TestPushFirstIn(t *testing.T) {
	for start := -8; start < 8; start++ {
		n := 0
		for i := start; i < start+4; i++ {
			if pushFirstIn(i) {
				n++
			}
		}
		if n != 2 {
			t.Errorf("rounds %d–%d: confpush first in %d, want 2", start, start+3, n)
		}
		if pushFirstIn(start) == pushFirstIn(start+6) {
			t.Errorf("rounds %d and %d (six apart) run in the same order", start, start+6)
		}
	}
	if !pushFirstIn(0) || pushFirstIn(1) {
		t.Error("the measured rounds do not start with confpush first, then the floor first")
	}
}

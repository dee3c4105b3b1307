package render

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// streamOf writes data to a stream of dest with the given spill size,
// in pieces of 7 bytes (as a template writes: many small writes).
func streamOf(t *testing.T, dest string, data []byte, spill int, like Digest) *FileStream {
	t.Helper()
	s := newFileStream(dest, DefaultFileOptions(), 0, like, spill)
	for p := data; len(p) > 0; p = p[min(7, len(p)):] {
		if n, err := s.Write(p[:min(7, len(p))]); err != nil || n != min(7, len(p)) {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	return s
}

// TestFileStream: an output below the spill size and one above it stage
// like StageIfChanged: nothing at all (not even a temporary file left)
// when the destination holds it, a fsynced staged file otherwise, with
// the output's Digest; Commit replaces the destination, and its re-check
// of a streamed output (by digest) discards it when the destination
// became identical meanwhile. Abort in the middle of a spilled output
// removes the temporary file.
func TestFileStream(t *testing.T) {
	for _, spill := range []int{1 << 20, 16} {
		dir := t.TempDir()
		dest := filepath.Join(dir, "out.conf")
		data := bytes.Repeat([]byte("0123456789\n"), 50)

		s := streamOf(t, dest, data, spill, Digest{})
		if spilled := len(tempFiles(t, dir)) == 1; spilled != (spill < len(data)) {
			t.Fatalf("spill %d: a temporary file while writing: %v", spill, spilled)
		}
		if d := s.Digest(); !d.Matches(data) {
			t.Fatalf("spill %d: the stream's digest does not match its output", spill)
		}
		sf, err := s.Stage()
		if err != nil || sf == nil || !sf.Changed() {
			t.Fatalf("spill %d: stage of a new output: %v, %v", spill, sf, err)
		}
		if b, err := os.ReadFile(sf.Path()); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("spill %d: the staged file holds %d bytes, %v", spill, len(b), err)
		}
		if changed, err := sf.Commit(); err != nil || !changed {
			t.Fatalf("spill %d: commit: %v, %v", spill, changed, err)
		}
		if b, err := os.ReadFile(dest); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("spill %d: the destination holds %d bytes, %v", spill, len(b), err)
		}

		// The same output: nothing staged, nothing left.
		if sf, err := streamOf(t, dest, data, spill, Digest{}).Stage(); err != nil || sf != nil {
			t.Fatalf("spill %d: stage of the output in place: %v, %v", spill, sf, err)
		}
		if l := tempFiles(t, dir); len(l) != 0 {
			t.Fatalf("spill %d: left %v", spill, l)
		}

		// Another output, and the destination made identical to it before
		// the commit: the commit discards the staged file.
		other := bytes.ToUpper(bytes.Repeat([]byte("abcdefghij\n"), 50))
		sf, err = streamOf(t, dest, other, spill, Digest{}).Stage()
		if err != nil || sf == nil {
			t.Fatalf("spill %d: stage of another output: %v, %v", spill, sf, err)
		}
		if err := os.WriteFile(dest+".x", other, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dest+".x", dest); err != nil {
			t.Fatal(err)
		}
		if changed, err := sf.Commit(); err != nil || changed {
			t.Fatalf("spill %d: commit over an identical destination: %v, %v", spill, changed, err)
		}
		if l := tempFiles(t, dir); len(l) != 0 {
			t.Fatalf("spill %d: left %v", spill, l)
		}

		// Abort in the middle.
		s = streamOf(t, dest, data[:100], spill, Digest{})
		s.Abort()
		if l := tempFiles(t, dir); len(l) != 0 {
			t.Fatalf("spill %d: abort left %v", spill, l)
		}
		if _, err := s.Write([]byte("more")); !errors.Is(err, ErrAlreadyDone) {
			t.Fatalf("spill %d: write after abort: %v", spill, err)
		}
		if sf, err := s.Stage(); sf != nil || !errors.Is(err, ErrAlreadyDone) {
			t.Fatalf("spill %d: stage after abort: %v, %v", spill, sf, err)
		}
	}
}

// TestFileStreamLike: a stream made like a Digest hashes under its seed,
// so the two compare with Equal: equal for the same output, not for
// another; digests under different seeds are never Equal.
func TestFileStreamLike(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "f")
	data := []byte(strings.Repeat("x", 100))
	like := DigestOf(data)
	same := streamOf(t, dest, data, 16, like)
	defer same.Abort()
	other := streamOf(t, dest, append([]byte("y"), data[1:]...), 16, like)
	defer other.Abort()
	fresh := streamOf(t, dest, data, 16, Digest{})
	defer fresh.Abort()
	if !same.Digest().Equal(like) || other.Digest().Equal(like) || fresh.Digest().Equal(like) {
		t.Fatalf("Equal: same %v, other %v, fresh seed %v", same.Digest().Equal(like), other.Digest().Equal(like), fresh.Digest().Equal(like))
	}
	if !fresh.Digest().Matches(data) {
		t.Fatal("a fresh seed's digest does not match its output")
	}
}

// TestFileStreamWriteError: a stream that cannot create its temporary
// file (its directory is missing) fails the write that spills and every
// later call with that error, and leaves nothing behind.
func TestFileStreamWriteError(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "missing", "f")
	s := newFileStream(dest, DefaultFileOptions(), 0, Digest{}, 4)
	if _, err := s.Write([]byte("ab")); err != nil {
		t.Fatalf("a write below the spill: %v", err)
	}
	_, err := s.Write([]byte("cdef"))
	if !errors.Is(err, fs.ErrNotExist) || s.Err() != err {
		t.Fatalf("the write that spills: %v (Err %v)", err, s.Err())
	}
	if _, err2 := s.Write([]byte("g")); err2 != err {
		t.Fatalf("a later write: %v", err2)
	}
	if sf, err2 := s.Stage(); sf != nil || err2 != err {
		t.Fatalf("stage: %v, %v", sf, err2)
	}
	if l := tempFiles(t, dir); len(l) != 0 {
		t.Fatalf("left %v", l)
	}
}

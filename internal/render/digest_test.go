package render

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMatchesDigest: a file matches a Digest only with the same bytes
// (not the same length with other bytes, not a prefix, not more) and the
// requested mode; the zero Digest matches nothing, not even an empty file.
func TestMatchesDigest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	opts := FileOptions{Mode: 0o644, UID: -1, GID: -1}
	data := []byte("some content\n")
	d := DigestOf(data)
	if !d.Matches(data) || d.Matches([]byte("some content!")) || d.Matches(data[:3]) {
		t.Fatal("Digest.Matches wrong")
	}
	if ok, err := MatchesDigest(path, d, opts); err != nil || ok {
		t.Fatalf("missing file: %v, %v", ok, err)
	}
	for _, c := range []struct {
		content string
		mode    os.FileMode
		want    bool
	}{
		{"some content\n", 0o644, true},
		{"some CONTENT\n", 0o644, false}, // same length
		{"some content", 0o644, false},   // shorter
		{"some content\nmore", 0o644, false},
		{"some content\n", 0o600, false}, // mode
	} {
		if err := os.WriteFile(path, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		if ok, err := MatchesDigest(path, d, opts); err != nil || ok != c.want {
			t.Errorf("%q mode %o: %v (%v), want %v", c.content, c.mode, ok, err, c.want)
		}
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := MatchesDigest(path, Digest{}, opts); err != nil || ok {
		t.Fatalf("zero Digest matched an empty file: %v, %v", ok, err)
	}
	if ok, err := MatchesDigest(path, DigestOf(nil), opts); err != nil || !ok {
		t.Fatalf("empty content's Digest: %v, %v", ok, err)
	}
}

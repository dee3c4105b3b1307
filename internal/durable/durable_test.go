package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSyncDirTolerance(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"EINVAL", &os.PathError{Op: "sync", Path: dir, Err: syscall.EINVAL}, true},
		{"EIO", &os.PathError{Op: "sync", Path: dir, Err: syscall.EIO}, false},
		{"ENOSPC", &os.PathError{Op: "sync", Path: dir, Err: syscall.ENOSPC}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := SyncDirWith(dir, func(*os.File) error { return tc.err })
			if tc.ok && err != nil {
				t.Fatalf("tolerated error returned: %v", err)
			}
			if !tc.ok && !errors.Is(err, tc.err.(*os.PathError).Err) {
				t.Fatalf("got %v, want an error wrapping %v", err, tc.err)
			}
		})
	}
	if err := SyncDir(dir); err != nil {
		t.Fatalf("real fsync of a directory: %v", err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, data := range []string{"one", "two, longer"} {
		if err := Replace(path, ".f.tmp-", []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode %v", fi.Mode())
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestWriteTempRemovesOnError(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	if _, err := WriteTemp(dir, ".x", []byte("data"), func(*os.File) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("temporary file left: %v", ents)
	}
}

// TestReplaceAll replaces several files of a directory, more than one
// batch, each with its content and mode, and leaves no temporary file; a
// path it cannot create fails and leaves no temporary file either.
func TestReplaceAll(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var data [][]byte
	for i := range Batch + 3 {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("f%03d", i)))
		data = append(data, []byte(fmt.Sprintf("content %d", i)))
	}
	if err := os.WriteFile(paths[0], []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := func(p string) string { return "." + filepath.Base(p) + ".tmp-" }
	if err := ReplaceAll(paths, data, prefix, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != string(data[i]) {
			t.Fatalf("%s: %q, %v; want %q", p, b, err, data[i])
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", p, fi.Mode(), err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != len(paths) {
		t.Fatalf("%d entries (%v), want %d: a temporary file was left", len(ents), err, len(paths))
	}
	bad := []string{filepath.Join(dir, "f-ok"), filepath.Join(dir, "missing", "f")}
	if err := ReplaceAll(bad, [][]byte{[]byte("a"), []byte("b")}, prefix, 0o600); err == nil {
		t.Fatal("ReplaceAll into a missing directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != len(paths) {
		t.Fatalf("%d entries after a failed ReplaceAll, want %d (nothing left)", len(ents), len(paths))
	}
}

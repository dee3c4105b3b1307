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

// TestSyncClose fsyncs and closes every file, reports each one's error in
// its place (a file already closed cannot be fsynced), and closes the
// others whatever happens.
func TestSyncClose(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	for i := range 5 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x"); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	_ = files[2].Close()
	errs := SyncClose(files)
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Errorf("file %d: error %v", i, err)
		}
	}
	for i, f := range files {
		if _, err := f.Write([]byte("y")); err == nil {
			t.Errorf("file %d is still open", i)
		}
	}
}

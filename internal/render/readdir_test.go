//go:build unix

package render

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadDirInTypes: readDirIn (on Linux: getdents64's d_type, no lstat
// per entry) lists what os.ReadDir lists, with the same types, in name
// order, across more entries than one getdents64 buffer holds.
func TestReadDirInTypes(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		// Long names: 300 of them are several listings' worth.
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file-%03d-%s", i, "padding-padding-padding")), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(sub, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(sub, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sub, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got, err := readDirIn(root, "sub")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("readDirIn listed %d entries, os.ReadDir %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() || got[i].IsDir() != want[i].IsDir() {
			t.Errorf("entry %d: readDirIn %q %v, os.ReadDir %q %v", i, got[i].Name(), got[i].Type(), want[i].Name(), want[i].Type())
		}
	}
	fi, err := got[0].Info()
	if err != nil || fi.Name() != want[0].Name() {
		t.Errorf("Info of %q: %v, %v", got[0].Name(), fi, err)
	}
	if _, err := readDirIn(root, "missing"); !os.IsNotExist(err) {
		t.Errorf("readDirIn of a missing directory: %v, want not exist", err)
	}
}

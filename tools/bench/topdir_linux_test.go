package bench

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpreadSubdirs: where spreadSubdirs says the flag is set, the
// directory carries FS_TOPDIR_FL and a second call says so again; on
// ext4 (this machine's root) it must be able to set it.
func TestSpreadSubdirs(t *testing.T) {
	dir := t.TempDir()
	set := spreadSubdirs(dir)
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, ferr := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if set && (ferr != nil || flags&fsTopdirFL == 0) {
		t.Fatalf("spreadSubdirs said set, flags %#x (%v)", flags, ferr)
	}
	if !set && ferr == nil && flags&fsTopdirFL != 0 {
		t.Fatalf("spreadSubdirs said not set, flags %#x", flags)
	}
	if set && !spreadSubdirs(dir) {
		t.Error("a second call on a flagged directory said not set")
	}
	if _, ext4 := ext4GroupsOf(dir); ext4 && !set {
		t.Error("ext4, and the flag could not be set")
	}
	if spreadSubdirs(filepath.Join(dir, "missing")) {
		t.Error("a missing directory said set")
	}
}

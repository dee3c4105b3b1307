//go:build unix

package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// past is an mtime far enough back that any rewrite is detectable without
// sleeping for the filesystem's timestamp granularity.
var past = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func opts(mode os.FileMode) FileOptions {
	o := DefaultFileOptions()
	o.Mode = mode
	return o
}

func inode(t *testing.T, path string) (ino uint64, mtime time.Time) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime()
}

// inodes is the inode of each of files under dir.
func inodes(t *testing.T, dir string, files map[string][]byte) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for name := range files {
		ino, _ := inode(t, filepath.Join(dir, name))
		out[name] = ino
	}
	return out
}

func mustWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

// tempFiles lists zkconf temporary files left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), tempMarker) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(t *testing.T, dir, dest string) // prepare dest
		data        string
		opts        FileOptions
		wantChanged bool
		wantErr     error  // errors.Is target; nil means success
		wantFile    string // path (relative to dir) that must hold data afterwards
		wantMode    os.FileMode
	}{
		{
			name:        "create new file",
			data:        "hello\n",
			opts:        opts(0o640),
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o640,
		},
		{
			name:        "mode applied regardless of umask",
			data:        "x",
			opts:        opts(0o604),
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o604,
		},
		{
			name:        "replace different content",
			setup:       func(t *testing.T, _, dest string) { mustWrite(t, dest, "old", 0o640) },
			data:        "new",
			opts:        opts(0o640),
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o640,
		},
		{
			name:        "same content different mode",
			setup:       func(t *testing.T, _, dest string) { mustWrite(t, dest, "same", 0o644) },
			data:        "same",
			opts:        opts(0o600),
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o600,
		},
		{
			name:        "identical file untouched",
			setup:       func(t *testing.T, _, dest string) { mustWrite(t, dest, "same", 0o640) },
			data:        "same",
			opts:        opts(0o640),
			wantChanged: false,
			wantFile:    "dest",
			wantMode:    0o640,
		},
		{
			name:        "same size different content",
			setup:       func(t *testing.T, _, dest string) { mustWrite(t, dest, "abcd", 0o640) },
			data:        "abce",
			opts:        opts(0o640),
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o640,
		},
		{
			name:        "explicit own owner",
			data:        "owned",
			opts:        FileOptions{Mode: 0o600, UID: os.Getuid(), GID: os.Getgid()},
			wantChanged: true,
			wantFile:    "dest",
			wantMode:    0o600,
		},
		{
			name: "symlink refused",
			setup: func(t *testing.T, dir, dest string) {
				mustWrite(t, filepath.Join(dir, "target"), "target content", 0o640)
				if err := os.Symlink("target", dest); err != nil {
					t.Fatal(err)
				}
			},
			data:    "new",
			opts:    opts(0o640),
			wantErr: ErrSymlinkDest,
		},
		{
			name: "symlink followed",
			setup: func(t *testing.T, dir, dest string) {
				mustWrite(t, filepath.Join(dir, "target"), "target content", 0o640)
				if err := os.Symlink("target", dest); err != nil {
					t.Fatal(err)
				}
			},
			data:        "new",
			opts:        FileOptions{Mode: 0o640, UID: -1, GID: -1, FollowSymlink: true},
			wantChanged: true,
			wantFile:    "target",
			wantMode:    0o640,
		},
		{
			name: "dangling symlink followed creates target",
			setup: func(t *testing.T, dir, dest string) {
				if err := os.Symlink(filepath.Join(dir, "later"), dest); err != nil {
					t.Fatal(err)
				}
			},
			data:        "created",
			opts:        FileOptions{Mode: 0o600, UID: -1, GID: -1, FollowSymlink: true},
			wantChanged: true,
			wantFile:    "later",
			wantMode:    0o600,
		},
		{
			name: "symlink loop",
			setup: func(t *testing.T, dir, dest string) {
				if err := os.Symlink("dest", dest); err != nil {
					t.Fatal(err)
				}
			},
			data:    "x",
			opts:    FileOptions{Mode: 0o600, UID: -1, GID: -1, FollowSymlink: true},
			wantErr: syscall.ELOOP,
		},
		{
			name:    "directory destination",
			setup:   func(t *testing.T, _, dest string) { os.Mkdir(dest, 0o755) },
			data:    "x",
			opts:    opts(0o640),
			wantErr: ErrNotRegular,
		},
		{
			name:    "missing parent directory",
			setup:   func(t *testing.T, dir, dest string) { os.Remove(dir) },
			data:    "x",
			opts:    opts(0o640),
			wantErr: os.ErrNotExist,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(dir, "dest")
			if tt.setup != nil {
				tt.setup(t, dir, dest)
			}
			var before os.FileInfo
			if fi, err := os.Lstat(dest); err == nil {
				before = fi
				_ = os.Chtimes(dest, past, past) // follows symlinks; fine
			}
			changed, err := WriteFile(dest, []byte(tt.data), tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if changed {
					t.Error("changed = true on error")
				}
				if before != nil {
					after, err := os.Lstat(dest)
					if err != nil || after.Mode() != before.Mode() {
						t.Errorf("destination altered on error: %v", err)
					}
				}
				if _, err := os.Stat(dir); err == nil {
					if left := tempFiles(t, dir); len(left) > 0 {
						t.Errorf("temporary files left: %v", left)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			path := filepath.Join(dir, tt.wantFile)
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tt.data {
				t.Errorf("content = %q, %v; want %q", got, err, tt.data)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != tt.wantMode {
				t.Errorf("mode = %v, want regular %v", fi.Mode(), tt.wantMode)
			}
			if tt.opts.FollowSymlink {
				if fi, err := os.Lstat(dest); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("symlink at dest was not kept: %v", err)
				}
			}
			if !tt.wantChanged && !fi.ModTime().Equal(past) {
				t.Errorf("unchanged file was rewritten: mtime %v", fi.ModTime())
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestWriteFileUnchangedKeepsInode(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "f")
	o := opts(0o640)
	if changed, err := WriteFile(dest, []byte("v1"), o); err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	if err := os.Chtimes(dest, past, past); err != nil {
		t.Fatal(err)
	}
	ino1, mt1 := inode(t, dest)
	for range 3 {
		if changed, err := WriteFile(dest, []byte("v1"), o); err != nil || changed {
			t.Fatalf("rewrite: changed=%v err=%v", changed, err)
		}
	}
	ino2, mt2 := inode(t, dest)
	if ino1 != ino2 || !mt1.Equal(mt2) {
		t.Errorf("identical write touched the file: inode %d->%d mtime %v->%v", ino1, ino2, mt1, mt2)
	}
	if changed, err := WriteFile(dest, []byte("v2"), o); err != nil || !changed {
		t.Fatalf("changed write: %v %v", changed, err)
	}
	if ino3, _ := inode(t, dest); ino3 == ino1 {
		t.Error("changed write reused the inode: not an atomic replace")
	}
}

func TestWriteFileChown(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dest := filepath.Join(t.TempDir(), "f")
	o := FileOptions{Mode: 0o640, UID: 4242, GID: 4343}
	if _, err := WriteFile(dest, []byte("x"), o); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dest)
	if uid, gid, _ := fileOwner(fi); uid != 4242 || gid != 4343 {
		t.Errorf("owner = %d:%d", uid, gid)
	}
	if changed, err := WriteFile(dest, []byte("x"), o); err != nil || changed {
		t.Errorf("same owner rewrite: %v %v", changed, err)
	}
	o.GID = 4444
	if changed, err := WriteFile(dest, []byte("x"), o); err != nil || !changed {
		t.Errorf("group change not applied: %v %v", changed, err)
	}
}

func TestWriteFileInvalidOptions(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "f")
	for _, o := range []FileOptions{
		{Mode: os.ModeDir | 0o755, UID: -1, GID: -1},
		{Mode: 0o640, UID: -2, GID: -1},
	} {
		if _, err := WriteFile(dest, []byte("x"), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestStage(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "old", 0o640)

	s, err := Stage(dest, []byte("new"), opts(0o600))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	base := filepath.Base(s.Path())
	if filepath.Dir(s.Path()) != dir || !strings.HasPrefix(base, ".") || !strings.Contains(base, ".zkconf-tmp") {
		t.Errorf("staged path %q: want a hidden .zkconf-tmp file beside the destination", s.Path())
	}
	if got, _ := os.ReadFile(s.Path()); string(got) != "new" {
		t.Errorf("staged content = %q", got)
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("staged mode = %v, want final mode before commit", fi.Mode())
	}
	if got, _ := os.ReadFile(dest); string(got) != "old" {
		t.Errorf("destination changed before commit: %q", got)
	}
	if !s.Changed() {
		t.Error("Changed() = false")
	}
	changed, err := s.Commit()
	if err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	if got, _ := os.ReadFile(dest); string(got) != "new" {
		t.Errorf("after commit = %q", got)
	}
	if _, err := s.Commit(); !errors.Is(err, ErrAlreadyDone) {
		t.Errorf("second Commit: %v", err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestStageAbortLeavesOld(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "old", 0o640)
	s, err := Stage(dest, []byte("bad"), opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	s.Abort() // e.g. the check command failed
	s.Abort() // idempotent
	if got, _ := os.ReadFile(dest); string(got) != "old" {
		t.Errorf("destination = %q after abort", got)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staged file still there: %v", err)
	}
	if _, err := s.Commit(); !errors.Is(err, ErrAlreadyDone) {
		t.Errorf("Commit after Abort: %v", err)
	}
}

func TestStageUnchanged(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "same", 0o640)
	_ = os.Chtimes(dest, past, past)
	s, err := Stage(dest, []byte("same"), opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	if s.Changed() {
		t.Error("Changed() = true for identical content")
	}
	if changed, err := s.Commit(); err != nil || changed {
		t.Errorf("Commit = %v, %v", changed, err)
	}
	if _, mt := inode(t, dest); !mt.Equal(past) {
		t.Error("identical staged commit rewrote the file")
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestStageDestBecomesSymlink(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "old", 0o640)
	s, err := Stage(dest, []byte("new"), opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	mustWrite(t, filepath.Join(dir, "elsewhere"), "other", 0o640)
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", dest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(); !errors.Is(err, ErrSymlinkDest) {
		t.Fatalf("Commit: %v, want ErrSymlinkDest", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "elsewhere")); string(got) != "other" {
		t.Error("symlink target was overwritten")
	}
}

func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "x", 0o640)
	for _, n := range []string{".app.conf.zkconf-tmp1", ".app.conf.zkconf-tmp22", ".other.zkconf-tmp3", "app.conf.bak"} {
		mustWrite(t, filepath.Join(dir, n), "partial", 0o600)
	}
	n, err := RemoveStaleTemps(dest, false)
	if err != nil || n != 2 {
		t.Fatalf("RemoveStaleTemps = %d, %v; want 2", n, err)
	}
	for _, keep := range []string{"app.conf", ".other.zkconf-tmp3", "app.conf.bak"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
}

// TestStageCommitAfterDestChanged: Commit skips its second read of a
// destination only while it is the very file Stage found different. A
// destination replaced since Stage by one that already holds the staged
// content is left alone (changed false); one edited in place since Stage
// is replaced by the staged content.
func TestStageCommitAfterDestChanged(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "app.conf")
	mustWrite(t, dest, "old", 0o640)
	s, err := Stage(dest, []byte("new"), opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	mustWrite(t, other, "new", 0o640)
	if err := os.Rename(other, dest); err != nil {
		t.Fatal(err)
	}
	ino, _ := inode(t, dest)
	if changed, err := s.Commit(); err != nil || changed {
		t.Fatalf("Commit over a destination replaced by the staged content = %v, %v; want false", changed, err)
	}
	if got, _ := inode(t, dest); got != ino {
		t.Error("the replaced destination was replaced again")
	}

	mustWrite(t, dest, "old", 0o640)
	s, err = Stage(dest, []byte("new"), opts(0o640))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(dest, past, past) // an edit in place: same inode, new ctime
	if changed, err := s.Commit(); err != nil || !changed {
		t.Fatalf("Commit over a destination edited in place = %v, %v; want true", changed, err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "new" {
		t.Fatalf("destination = %q, %v; want the staged content", b, err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

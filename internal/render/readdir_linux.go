package render

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/zkconf/zkconf/internal/durable"
)

// readDirIn lists the directory name of root, sorted by name.
//
// A directory opened in an os.Root lists with an lstat of every entry
// (os cannot stat lazily by path there), and DirWriter lists the managed
// directory and the current generation at every write and every drift
// check: with a few dozen entries that was most of its system calls. The
// entry types come from getdents64's d_type instead; a filesystem that
// does not fill it in (DT_UNKNOWN) gets the lstat, in root, for that
// entry only.
func readDirIn(root *os.Root, name string) ([]fs.DirEntry, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|durable.NoPoll, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDirFile(f, root, name)
}

// readDirFile is readDirIn of f, the directory name of root opened.
func readDirFile(f *os.File, root *os.Root, name string) ([]fs.DirEntry, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	// Room for about 50 entries of a set's names per call; a listing
	// that does not fit takes more calls, not a bigger buffer per
	// listing (six listings of a publish would be 48 KiB of garbage at
	// os's 8 KiB).
	buf := make([]byte, 2048)
	var out []fs.DirEntry
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.ReadDirent(int(fd), buf)
			return true // a directory is never waited on
		}); err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: name, Err: err}
		}
		if errors.Is(rerr, syscall.EINTR) {
			continue
		}
		if rerr != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: name, Err: rerr}
		}
		if n <= 0 {
			break
		}
		if out, err = appendDirents(out, buf[:n], root, name); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// appendDirents appends the entries of b, getdents64 records
// (linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name), to out.
func appendDirents(out []fs.DirEntry, b []byte, root *os.Root, dir string) ([]fs.DirEntry, error) {
	const nameOff = 19 // 8 + 8 + 2 + 1
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		ino, typ, raw := binary.NativeEndian.Uint64(b[0:8]), b[18], b[nameOff:reclen]
		b = b[reclen:]
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		name := string(raw)
		if ino == 0 || name == "." || name == ".." {
			continue
		}
		mode, known := direntMode(typ)
		if !known {
			fi, err := root.Lstat(path.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing
			}
			if err != nil {
				return nil, err
			}
			mode = fi.Mode().Type()
		}
		out = append(out, dirEntry{name: name, typ: mode, ino: ino, root: root, path: path.Join(dir, name)})
	}
	return out, nil
}

// direntMode is the file type of a d_type, and false for DT_UNKNOWN.
func direntMode(typ byte) (fs.FileMode, bool) {
	switch typ {
	case syscall.DT_REG:
		return 0, true
	case syscall.DT_DIR:
		return fs.ModeDir, true
	case syscall.DT_LNK:
		return fs.ModeSymlink, true
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe, true
	case syscall.DT_SOCK:
		return fs.ModeSocket, true
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case syscall.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// dirEntry is an entry readDirIn listed; Info lstats it in its root (which
// must still be open).
type dirEntry struct {
	name, path string
	typ        fs.FileMode
	ino        uint64 // d_ino
	root       *os.Root
}

// entryIno is the inode number the listing gave e (0: unknown).
func entryIno(e fs.DirEntry) uint64 {
	if d, ok := e.(dirEntry); ok {
		return d.ino
	}
	return 0
}

func (e dirEntry) Name() string               { return e.name }
func (e dirEntry) IsDir() bool                { return e.typ.IsDir() }
func (e dirEntry) Type() fs.FileMode          { return e.typ }
func (e dirEntry) Info() (fs.FileInfo, error) { return e.root.Lstat(e.path) }

package render

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zkconf/zkconf/internal/durable"
)

// flatDir is a generation directory of a flat set opened as one bare
// descriptor: listed, each file lstat'ed and read relative to it. Through
// an os.Root (whose descriptor os does not hand out) a comparison opened
// the directory twice (the root, then "." to list it) and each file read
// as an *os.File (an epoll_ctl that regular files always fail, and the
// allocation); names are single components, opened O_NOFOLLOW, so
// nothing is reached outside the directory.
type flatDir struct {
	f    *os.File
	fd   int
	root *os.Root // the managed directory, for readDirFile's rare lstat
	name string   // gen's name in root
}

// openFlat opens the generation directory gen of root as a flatDir.
func openFlat(root *os.Root, gen string) (*flatDir, error) {
	f, err := root.OpenFile(gen, os.O_RDONLY|durable.NoPoll|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	d := &flatDir{f: f, fd: -1, root: root, name: gen}
	rc, err := f.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { d.fd = int(fd) })
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return d, nil
}

func (d *flatDir) close() { _ = d.f.Close() }

// list lists the directory, sorted by name.
func (d *flatDir) list() ([]fs.DirEntry, error) {
	return readDirFile(d.f, d.root, d.name)
}

// lstat is lstat of name in the directory.
func (d *flatDir) lstat(name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := durable.IgnoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path.Join(d.name, name), Err: err}
	}
	return statInfo{name: name, st: st}, nil
}

// sameFile is sameFileInfo for the file name of the directory, read
// through a bare descriptor. A name that is a symbolic link by now
// (ELOOP) is not the file.
func (d *flatDir) sameFile(name string, data []byte, opts FileOptions) (fs.FileInfo, bool, error) {
	var fd int
	err := durable.IgnoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		return err
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: path.Join(d.name, name), Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := durable.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, false, &fs.PathError{Op: "stat", Path: path.Join(d.name, name), Err: err}
	}
	fi := statInfo{name: name, st: st}
	if !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) || !attrsMatch(fi, opts) {
		return fi, false, nil
	}
	contentReads.Add(1)
	same, err := sameContent(fdReader(fd), data)
	return fi, same, err
}

// fdReader reads a bare descriptor.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	var n int
	err := durable.IgnoringEINTR(func() (err error) {
		n, err = unix.Read(int(r), b)
		return err
	})
	if err != nil {
		return 0, err
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// statInfo is an fs.FileInfo of a unix.Stat_t, as os.Lstat reports it
// (Sys is a *syscall.Stat_t, which idOf and fileOwner read).
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) Mode() fs.FileMode {
	m := fileMode(s.st.Mode)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any {
	st := s.st
	return &syscall.Stat_t{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid,
		Rdev: st.Rdev, Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atim: syscall.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec},
		Mtim: syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		Ctim: syscall.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec},
	}
}

package render

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zkconf/zkconf/internal/durable"
)

// Refill prepares the next write, off its path: it drops the pool names
// of the files the last stage took from PoolDir (the generation holds
// them under their payload names) and creates empty files in PoolDir
// until it holds as many as the last stage wrote (at most 256), which the
// next stage then takes instead of creating its files. Creating a file
// allocates an inode, and on ext4 that is most of a stage's CPU when
// many files were removed recently (its allocator skips the inodes freed
// in the last half-minute, one by one); taking a pooled one is a lookup
// and a link.
//
// The first Refill of a DirWriter empties PoolDir of what an earlier
// process (or a crash) left there: such a file may already be part of a
// generation, so it is never taken. A pooled file is taken at most once.
// An error (a full disk, say) leaves the pool as it got: the next write
// creates what the pool lacks, as without one.
//
// The owner of a DirWriter calls Refill after each write, as Sweep; a
// DirWriter that is never refilled creates every file it writes.
func (w *DirWriter) Refill() error {
	p := &w.pool
	if p.ready && len(p.used) == 0 && len(p.free) == p.want {
		return nil
	}
	root, err := w.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if !p.ready {
		if err := root.RemoveAll(PoolDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("render: empty the pool: %w", pathError("remove", filepath.Join(w.dir, PoolDir), err))
		}
		p.free, p.used, p.ready = nil, nil, true
	}
	if p.want == 0 && len(p.used) == 0 {
		return nil
	}
	pool, err := openPool(root, true)
	if err != nil {
		return fmt.Errorf("render: %w", pathError("open", filepath.Join(w.dir, PoolDir), err))
	}
	defer pool.Close()
	rc, err := pool.SyscallConn()
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = w.refillIn(int(fd)) }); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return ferr
}

// refillIn is Refill in PoolDir, open as pfd.
func (w *DirWriter) refillIn(pfd int) error {
	p := &w.pool
	var own map[string]fileRecord // the current generation's files whose ctime the drops change
	keep := p.used[:0]
	var dropErr error
	for _, u := range p.used {
		err := durable.IgnoringEINTR(func() error { return unix.Unlinkat(pfd, u.pool, 0) })
		if err != nil && err != unix.ENOENT {
			keep = append(keep, u) // tried again by the next Refill
			dropErr = &os.PathError{Op: "remove", Path: filepath.Join(w.dir, PoolDir, u.pool), Err: err}
			continue
		}
		if w.rec != nil && w.rec.name == u.gen {
			if own == nil {
				own = map[string]fileRecord{}
			}
			own[u.name] = fileRecord{}
		}
	}
	p.used = keep
	if own != nil {
		// The inode lost a link: a new ctime, ours (see fileRecord.ownBy).
		markOwn(w.rec.files, own)
	}
	if dropErr != nil {
		// Names that cannot be dropped are not followed by new ones: the
		// pool stays bounded whatever fails.
		return fmt.Errorf("render: drop a pooled file's name: %w", dropErr)
	}
	// Fewer files wanted than the pool holds (the sets written got
	// smaller): the extra ones go.
	for len(p.free) > p.want {
		name := p.free[len(p.free)-1]
		if err := durable.IgnoringEINTR(func() error { return unix.Unlinkat(pfd, name, 0) }); err != nil && err != unix.ENOENT {
			return fmt.Errorf("render: shrink the pool: %w", &os.PathError{Op: "remove", Path: filepath.Join(w.dir, PoolDir, name), Err: err})
		}
		p.free = p.free[:len(p.free)-1]
	}
	for len(p.free) < p.want {
		name := "p" + strconv.FormatUint(p.seq, 10)
		p.seq++
		err := createEmpty(pfd, name, p.mode, &p.noMknod)
		if err == unix.EEXIST {
			continue // not ours: never taken, removed with the pool by the next process
		}
		if err != nil {
			return fmt.Errorf("render: fill the pool: %w", &os.PathError{Op: "open", Path: filepath.Join(w.dir, PoolDir, name), Err: err})
		}
		p.free = append(p.free, name)
	}
	return nil
}

// createEmpty creates the empty regular file name in the directory dfd
// with permission bits mode (less the umask), exclusively: EEXIST if
// anything, a symbolic link included, is there already. It is one
// mknodat, which creates a regular file as an exclusive open does
// (the kernel's create, never following a link) without opening it: no
// open file to set up, notify and close, per file of a refill (an openat
// and a close were two of a changed file's system calls). Where mknodat
// is refused for a reason an open would not have (a system call filter:
// EPERM, ENOSYS), *noMknod is set and the file, and every later one, is
// made by an exclusive open and a close instead.
func createEmpty(dfd int, name string, mode uint32, noMknod *bool) error {
	if !*noMknod {
		err := durable.IgnoringEINTR(func() error { return unix.Mknodat(dfd, name, unix.S_IFREG|mode, 0) })
		if err != unix.EPERM && err != unix.ENOSYS {
			return err
		}
		*noMknod = true
	}
	var fd int
	err := durable.IgnoringEINTR(func() (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		return err
	})
	if err != nil {
		return err
	}
	_ = unix.Close(fd) // nothing was written: the file is made
	return nil
}

// openPool opens PoolDir of root (creating it, mode 0700, with create)
// and returns it open, or an error if it is not a directory of its own:
// never a link followed to another directory of root.
func openPool(root *os.Root, create bool) (*os.File, error) {
	fi, err := root.Lstat(PoolDir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := root.Mkdir(PoolDir, 0o700); err != nil {
			return nil, err
		}
		// Mode 0700 exactly: no set-group-ID bit inherited from dir, so
		// that a pooled file gets the group a file created in a
		// generation directory gets.
		if err := root.Chmod(PoolDir, 0o700); err != nil {
			return nil, err
		}
		fi, err = root.Lstat(PoolDir)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("not a directory: %w", ErrNotManaged)
	}
	f, err := root.OpenFile(PoolDir, os.O_RDONLY|durable.NoPoll|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		_ = f.Close()
		return nil, fmt.Errorf("replaced while opened: %w", ErrNotManaged)
	}
	return f, nil
}

// takePooled is createAt with the pool's next file (d.names[0]) instead
// of a new one: it opens it, writes data, gives it opts' owner and mode
// and links it into dfd as name; the file is not yet fsynced. ok is false
// when the pooled file is not the empty file Refill made (missing, or not
// alone in its inode): nothing is then left under name, and the caller
// creates the file.
func takePooled(d *poolDraw, dfd int, name, path string, data []byte, opts FileOptions) (_ int, id fileID, ok bool, err error) {
	pname := d.names[0]
	d.names = d.names[1:]
	// Taken from here on, whatever happens: its name is dropped by the
	// next Refill.
	d.taken = append(d.taken, poolUse{pool: pname, name: name})
	var fd int
	err = durable.IgnoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, pname, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, id, false, nil
	}
	// Still the empty file Refill made, alone in its inode, before a byte
	// goes in: the pool is 0700, but whatever put another inode under a
	// pool name (a hard link to a file elsewhere, say) must not have it
	// written over; such a name is passed by, as a missing one is.
	var pre unix.Stat_t
	if err := durable.IgnoringEINTR(func() error { return unix.Fstat(fd, &pre) }); err != nil ||
		pre.Mode&unix.S_IFMT != unix.S_IFREG || pre.Nlink != 1 || pre.Size != 0 {
		_ = unix.Close(fd)
		return -1, id, false, nil
	}
	linked := false
	defer func() {
		if err != nil || !ok {
			_ = unix.Close(fd)
			if linked {
				_ = unix.Unlinkat(dfd, name, 0)
			}
		}
	}()
	if err := writeAllFD(fd, data, path); err != nil {
		return -1, id, false, err
	}
	perm := uint32(opts.Mode.Perm())
	if opts.UID >= 0 || opts.GID >= 0 {
		if err := durable.IgnoringEINTR(func() error { return unix.Fchown(fd, opts.UID, opts.GID) }); err != nil {
			return -1, id, false, &os.PathError{Op: "chown", Path: path, Err: err}
		}
	}
	// Linked now, before its fsync: the generation directory's fsync
	// runs beside the files' and must find every entry. Nothing of the
	// generation is visible before the swap, which follows every fsync.
	if err := durable.IgnoringEINTR(func() error { return unix.Linkat(d.fd, pname, dfd, name, 0) }); err != nil {
		return -1, id, false, &os.PathError{Op: "link", Path: path, Err: err}
	}
	linked = true
	var st unix.Stat_t
	for try := 0; ; try++ {
		if err := durable.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
			return -1, id, false, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		// Ours alone (the pool's name and the generation's), holding
		// exactly data: written from offset 0, a file that held more
		// would be longer.
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 2 || st.Size != int64(len(data)) {
			return -1, id, false, nil
		}
		if st.Mode&0o7777 == perm || try > 0 {
			break
		}
		// The pool was made for another mode, or the owner was just set.
		if err := durable.IgnoringEINTR(func() error { return unix.Fchmod(fd, perm) }); err != nil {
			return -1, id, false, &os.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	return fd, idOfStat(&st), true, nil
}

// writeAllFD writes data to fd (path names it in errors).
func writeAllFD(fd int, data []byte, path string) error {
	for b := data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		if n == 0 {
			return &os.PathError{Op: "write", Path: path, Err: io.ErrShortWrite}
		}
		b = b[n:]
	}
	return nil
}

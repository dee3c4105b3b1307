package render

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/zkconf/zkconf/internal/durable"
)

// bareCreate reports whether writeBatch may write with opts through bare
// descriptors (createAt): not for setuid, setgid or sticky files, whose
// bits need os's conversion and must follow the chown that clears them.
func bareCreate(opts FileOptions) bool { return opts.Mode == opts.Mode.Perm() }

// writeBatchAt is writeBatch's creation and fsync of the files names in
// the directory dir (open; its path is dirPath) through bare descriptors:
// per file an openat, a write, an fstat, an fsync and a close (and a
// fchown or fchmod only where the owner is set or the umask took bits of
// the mode), where an *os.File adds the runtime's refused registration
// with the network poller, and its allocation. It returns each file's
// identity as fstat saw it after its last change. withDir: dir itself is
// fsynced with the files through the descriptor already open
// (durable.SyncCloseFDsDir: one more request of their AIO submission, not
// an open by path and a goroutine of its own). pool, when not nil, hands
// out pooled files (Refill): each file takes one while there are any
// (takePooled), and is created only when the pool is out, or its file is
// not as Refill left it.
func writeBatchAt(dir *os.File, dirPath string, names []string, files map[string][]byte, opts FileOptions, withDir bool, pool *poolDraw) (ids []fileID, err error) {
	fds := make([]int, 0, len(names))
	paths := make([]string, len(names))
	ids = make([]fileID, len(names))
	defer func() {
		if err != nil {
			for _, fd := range fds {
				_ = unix.Close(fd)
			}
		}
	}()
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	cerr := rc.Control(func(dfd uintptr) {
		for i, name := range names {
			paths[i] = filepath.Join(dirPath, name)
			fd, ok := -1, false
			if pool != nil && len(pool.names) > 0 {
				fd, ids[i], ok, err = takePooled(pool, int(dfd), name, paths[i], files[name], opts)
			}
			if !ok && err == nil {
				fd, ids[i], err = createAt(int(dfd), name, paths[i], files[name], opts)
			}
			if err != nil {
				return
			}
			fds = append(fds, fd)
		}
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	var errs []error
	if withDir {
		var dirErr error
		cerr := rc.Control(func(dfd uintptr) {
			errs, dirErr = durable.SyncCloseFDsDir(fds, paths, int(dfd), dirPath)
		})
		if cerr != nil {
			return nil, fmt.Errorf("render: %w", cerr) // fds closed by the deferred call
		}
		fds = nil // closed, whatever happened
		if dirErr != nil {
			return nil, fmt.Errorf("render: %w", dirErr)
		}
	} else {
		errs = durable.SyncCloseFDs(fds, paths)
		fds = nil // closed, whatever happened
	}
	for _, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("render: %w", e)
		}
	}
	return ids, nil
}

// createAt creates the file name of the directory dfd exclusively
// (never through a symbolic link) with data, opts' owner and mode, and
// returns it open, not yet fsynced, with its identity. Without an owner
// to set, the file is created with its final mode, so the fchmod is
// needed only when the umask took some of its bits; with one, it is
// created 0600 and chowned before the mode is set (as createNew).
func createAt(dfd int, name, path string, data []byte, opts FileOptions) (_ int, id fileID, err error) {
	perm := uint32(opts.Mode.Perm())
	chown := opts.UID >= 0 || opts.GID >= 0
	mode := perm
	if chown {
		mode = 0o600
	}
	var fd int
	err = durable.IgnoringEINTR(func() (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		return err
	})
	if err != nil {
		return -1, id, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer func() {
		if err != nil {
			_ = unix.Close(fd) // fd, not the result: every error returns -1
		}
	}()
	if err := writeAllFD(fd, data, path); err != nil {
		return -1, id, err
	}
	if chown {
		if err := durable.IgnoringEINTR(func() error { return unix.Fchown(fd, opts.UID, opts.GID) }); err != nil {
			return -1, id, &os.PathError{Op: "chown", Path: path, Err: err}
		}
	}
	var st unix.Stat_t
	for try := 0; ; try++ {
		if chown || try > 0 {
			if err := durable.IgnoringEINTR(func() error { return unix.Fchmod(fd, perm) }); err != nil {
				return -1, id, &os.PathError{Op: "chmod", Path: path, Err: err}
			}
		}
		if err := durable.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
			return -1, id, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if st.Mode&0o7777 == perm || try > 0 {
			break // with chown, the fchmod set it (or a later check reports it)
		}
	}
	return fd, idOfStat(&st), nil
}

// idOfStat is idOf for a regular file's stat as unix.Fstat returns it:
// the identity os.Lstat's FileInfo gives the same file.
func idOfStat(st *unix.Stat_t) fileID {
	return fileID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		mode: fileMode(st.Mode),
		uid:  st.Uid, gid: st.Gid,
		mtime: int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec),
		ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
	}
}

// fileMode is the mode os.Lstat reports for a regular file of unix mode m.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

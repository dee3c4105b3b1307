// Package durable is the one home of zkconf's crash-safe file replacement:
// a file is written to a temporary file in the destination's directory,
// fsynced, renamed over the destination, and the directory is fsynced.
//
// The order is what makes it safe against a crash at any instant (SIGKILL,
// or power loss): the temporary file lives in the same directory so the
// rename stays within one filesystem and is atomic (readers see the old
// inode or the new one, never a partial file); the file is fsynced before
// the rename so that the rename cannot expose a file whose data blocks were
// never written; the directory is fsynced after it so that the rename
// itself survives a power loss.
//
// # Directory fsync policy
//
// An fsync(2) of a directory that fails with EINVAL is not an error: Linux
// returns EINVAL when the filesystem does not support syncing that file
// (some FUSE and network filesystems do this for directories). Nothing more
// can be done there to make a rename durable, and failing would mean a host
// on such a filesystem can never persist anything, even though the rename
// itself succeeded and is visible. Every other error of a directory fsync
// (EIO, ENOSPC, ...) is returned. The fsync of a FILE never tolerates
// anything: its data must be on disk before the rename exposes it.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// WriteTemp creates a temporary file in dir whose name starts with prefix
// (followed by random digits), writes data to it, calls prepare (when not
// nil) to set its mode or owner before it can become visible, fsyncs and
// closes it, and returns its path. On any error nothing is left behind.
//
// The file is created with mode 0600; prepare sets the final mode.
func WriteTemp(dir, prefix string, data []byte, prepare func(*os.File) error) (path string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	defer root.Close()
	name, err := WriteTempIn(root, dir, prefix, data, prepare)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// WriteTempIn is WriteTemp in the directory root holds open (dir names it
// in messages): the file is created by name in that directory (O_EXCL,
// which never follows a symbolic link), so no link swapped in for the
// directory or one of its parents can redirect it. It returns the file's
// name in root.
func WriteTempIn(root *os.Root, dir, prefix string, data []byte, prepare func(*os.File) error) (_ string, err error) {
	f, name, err := CreateTempIn(root, dir, prefix)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, name)
	defer func() {
		if err != nil {
			_ = f.Close() // may already be closed; the error is irrelevant then
			_ = root.Remove(name)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if prepare != nil {
		if err := prepare(f); err != nil {
			return "", err
		}
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", tmp, err)
	}
	return name, nil
}

// CreateTempIn creates an empty temporary file (mode 0600) named prefix +
// random digits in the directory root holds open (dir on disk, for
// messages), for a caller that writes it piece by piece: it writes,
// fsyncs and closes the file itself, or removes it.
func CreateTempIn(root *os.Root, dir, prefix string) (f *os.File, name string, err error) {
	for try := 0; ; try++ {
		name = prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err = root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|NoPoll, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		break
	}
	if err != nil {
		return nil, "", fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	return f, name, nil
}

// Replace atomically replaces path with data (mode perm), using a
// temporary file named prefix+random digits in path's directory, but does
// not fsync the directory: the caller calls SyncDir afterwards (once for
// several files replaced in one directory). Only then is the new content
// sure to survive a crash.
func Replace(path, prefix string, data []byte, perm os.FileMode) error {
	tmp, err := WriteTemp(filepath.Dir(path), prefix, data, func(f *os.File) error { return f.Chmod(perm) })
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename into place: %w", err)
	}
	return nil
}

// SyncDir fsyncs a directory so that renames, creations and removals in it
// survive a power loss. EINVAL from the fsync is tolerated (see the package
// documentation).
func SyncDir(dir string) error {
	return SyncDirWith(dir, nil)
}

// SyncDirWith is SyncDir with fsync called in place of the directory's
// fsync(2) (nil means the real one). It exists so that tests can simulate
// a filesystem that refuses directory fsyncs; the tolerance policy applies
// to what fsync returns.
func SyncDirWith(dir string, fsync func(*os.File) error) error {
	d, err := os.OpenFile(dir, os.O_RDONLY|NoPoll, 0)
	if err != nil {
		return fmt.Errorf("open directory for fsync: %w", err)
	}
	return syncClose(d, dir, fsync)
}

// SyncDirIn is SyncDir for the directory name inside root ("." for root
// itself), opened without leaving root; dir names it in messages.
func SyncDirIn(root *os.Root, name, dir string) error {
	d, err := root.OpenFile(name, os.O_RDONLY|NoPoll, 0)
	if err != nil {
		return fmt.Errorf("open directory for fsync: %w", err)
	}
	return syncClose(d, dir, nil)
}

// syncClose fsyncs (with fsync, nil for the real one) and closes the
// directory d, tolerating EINVAL.
func syncClose(d *os.File, dir string, fsync func(*os.File) error) error {
	defer d.Close()
	if fsync == nil {
		fsync = (*os.File).Sync
	}
	if err := fsync(d); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Batch is how many files callers of SyncClose hold open at once, at
// most.
const Batch = 64

// syncWorkers bounds the fsyncs in flight at once.
const syncWorkers = 16

// SyncClose fsyncs and closes every file of files, several at once, and
// returns each one's error (nil when its data is durable). Every file is
// closed whatever happens. Issued together, the fsyncs of files written
// just before wait for the disk once, not once each: a journalling
// filesystem commits them together, and without a journal the device
// gets their writes queued at once (measured in docs/bench/latency.md).
func SyncClose(files []*os.File) []error {
	errs := make([]error, len(files))
	sem := make(chan struct{}, syncWorkers)
	var wg sync.WaitGroup
	for i, f := range files {
		if f == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f.Sync(); err != nil {
				errs[i] = fmt.Errorf("fsync %s: %w", f.Name(), err)
			}
			if err := f.Close(); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("close %s: %w", f.Name(), err)
			}
		})
	}
	wg.Wait()
	return errs
}

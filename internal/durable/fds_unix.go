//go:build unix

package durable

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// SyncCloseFDs is SyncClose for files held as bare descriptors (fds;
// names, the same length, name them in messages): each is fsynced and
// closed, several at once, and each one's error returned (nil when its
// data is durable). Every descriptor is closed whatever happens. A
// caller that writes many new files through bare descriptors spares the
// *os.File around each (its allocation, its cleanup, and the runtime's
// attempt to register it with the network poller).
func SyncCloseFDs(fds []int, names []string) []error {
	if errs, ok := syncAIO(fds); ok {
		for i, fd := range fds {
			if errs[i] != nil {
				errs[i] = fmt.Errorf("fsync %s: %w", names[i], errs[i])
			}
			if err := syscall.Close(fd); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("close %s: %w", names[i], err)
			}
		}
		return errs
	}
	errs := make([]error, len(fds))
	sem := make(chan struct{}, syncWorkers)
	var wg sync.WaitGroup
	for i, fd := range fds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := IgnoringEINTR(func() error { return syscall.Fsync(fd) }); err != nil {
				errs[i] = fmt.Errorf("fsync %s: %w", names[i], err)
			}
			// close(2) is not retried on EINTR: on Linux the descriptor
			// is released whatever it returns.
			if err := syscall.Close(fd); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("close %s: %w", names[i], err)
			}
		})
	}
	wg.Wait()
	return errs
}

// IgnoringEINTR calls f, a system call, until it returns anything but
// EINTR (as package os does around its own), and returns that.
func IgnoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

// SyncCloseFDsDir is SyncCloseFDs that also fsyncs dirFD, the directory
// that holds the files (dirName names it in messages), which the caller
// keeps open: it is fsynced, not closed. Where the kernel offers AIO the
// directory goes in the files' own submission, so files and directory
// wait for the disk once, without a thread, a second open of the
// directory or a system call of their own; elsewhere it is fsynced beside
// the files. dirErr is the directory's fsync error; EINVAL (a file system
// that cannot fsync a directory) is tolerated, as SyncDir does.
func SyncCloseFDsDir(fds []int, names []string, dirFD int, dirName string) (errs []error, dirErr error) {
	all := make([]int, len(fds), len(fds)+1)
	copy(all, fds)
	all = append(all, dirFD)
	aioErrs, ok := syncAIO(all)
	if !ok {
		done := make(chan error, 1)
		go func() { done <- IgnoringEINTR(func() error { return syscall.Fsync(dirFD) }) }()
		errs = SyncCloseFDs(fds, names)
		return errs, dirSyncErr(<-done, dirName)
	}
	errs = aioErrs[:len(fds)]
	for i, fd := range fds {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("fsync %s: %w", names[i], errs[i])
		}
		if err := syscall.Close(fd); err != nil && errs[i] == nil {
			errs[i] = fmt.Errorf("close %s: %w", names[i], err)
		}
	}
	return errs, dirSyncErr(aioErrs[len(fds)], dirName)
}

// dirSyncErr is a directory's fsync error as SyncCloseFDsDir reports it:
// nil for EINVAL.
func dirSyncErr(err error, dir string) error {
	if err == nil || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return fmt.Errorf("fsync directory %s: %w", dir, err)
}

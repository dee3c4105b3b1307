//go:build unix

package durable

import (
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

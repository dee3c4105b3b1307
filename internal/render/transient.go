package render

import (
	"errors"
	"syscall"
)

// ErrTransient matches (errors.Is) every *TransientError: a write that
// failed for a reason of the machine, not of the content, and that may
// succeed unchanged later (a full disk, an exceeded quota, an I/O error).
var ErrTransient = errors.New("transient write error")

// transientErrnos are the errors that say "the filesystem could not take
// this write now": nothing about the content or the destination is wrong,
// and the same write may succeed once an operator (or a log rotation)
// frees space, raises a quota or fixes a device.
var transientErrnos = []syscall.Errno{
	syscall.ENOSPC, // no space left on device (blocks or inodes)
	syscall.EDQUOT, // disk quota exceeded
	syscall.EIO,    // I/O error (failing or reconnecting device)
	syscall.EFBIG,  // file too large for a limit (RLIMIT_FSIZE, quota)
	syscall.ENOMEM, // kernel out of memory for the operation
	syscall.EAGAIN, // resource temporarily unavailable
	syscall.EINTR,  // interrupted system call
	syscall.EBUSY,  // device or resource busy
	syscall.ENFILE, // system-wide open file limit
	syscall.EMFILE, // per-process open file limit
}

// TransientError is a write that failed with one of the errors above. Err
// is the underlying error (an *os.PathError wrapping the errno), so
// errors.Is(err, syscall.ENOSPC) still works, and so does
// errors.Is(err, ErrTransient). The staged temporary file or directory of
// the failed write is already removed, so retrying does not fill the disk
// further.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *TransientError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTransient) true.
func (e *TransientError) Is(target error) bool { return target == ErrTransient }

// IsTransient reports whether err is, or wraps, a transient write error:
// an ErrTransient, or one of the errnos above.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	for _, e := range transientErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// classify wraps a transient err in a *TransientError, leaving any other
// error (and nil) as it is.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrTransient) || !IsTransient(err) {
		return err
	}
	return &TransientError{Err: err}
}

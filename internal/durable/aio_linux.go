//go:build linux && (amd64 || arm64)

package durable

import (
	"syscall"
	"unsafe"
)

// iocb is the kernel's struct iocb (linux/aio_abi.h) on a little-endian
// 64-bit architecture.
type iocb struct {
	data   uint64 // aio_data, returned in the event
	_      uint32 // aio_key
	_      int32  // aio_rw_flags
	opcode uint16 // aio_lio_opcode
	_      int16  // aio_reqprio
	fildes uint32 // aio_fildes
	_      uint64 // aio_buf
	_      uint64 // aio_nbytes
	_      int64  // aio_offset
	_      uint64 // aio_reserved2
	_      uint32 // aio_flags
	_      uint32 // aio_resfd
}

// ioEvent is the kernel's struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

// iocbCmdFsync is IOCB_CMD_FSYNC: an fsync(2) of the descriptor, run by
// the kernel (Linux 4.18 and later).
const iocbCmdFsync = 2

// syncAIO fsyncs every descriptor of fds through one Linux AIO context:
// one io_submit hands the kernel every fsync at once and one io_getevents
// waits for them all. Each is the fsync(2) of that file, its error
// reported as fsync's. With a thread (and a descriptor handed to the
// runtime's scheduler) per fsync in flight, a process on one processor
// wakes several threads around every fsync; here it waits once.
// ok is false, and nothing was fsynced, where the kernel offers no AIO
// (ENOSYS, a seccomp filter, EAGAIN at fs.aio-max-nr): the caller then
// fsyncs the files itself.
func syncAIO(fds []int) (errs []error, ok bool) {
	var ctx uintptr
	// #nosec G103 -- io_setup writes the context's id into ctx, for the duration of the call.
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, uintptr(len(fds)), uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return nil, false
	}
	cbs := make([]iocb, len(fds))
	ptrs := make([]*iocb, len(fds))
	for i, fd := range fds {
		// #nosec G115 -- i is an index and fd a descriptor the caller opened: both non-negative and far below 2^32.
		cbs[i] = iocb{data: uint64(i), opcode: iocbCmdFsync, fildes: uint32(fd)}
		ptrs[i] = &cbs[i]
	}
	submitted := 0
	for submitted < len(ptrs) {
		// #nosec G103 -- io_submit copies the iocbs during the call; the kernel keeps none of this memory.
		n, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, ctx, uintptr(len(ptrs)-submitted), uintptr(unsafe.Pointer(&ptrs[submitted])))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || n == 0 {
			break // the rest are fsynced one by one below
		}
		submitted += int(n)
	}
	if submitted == 0 {
		destroyAIO(ctx)
		return nil, false
	}
	errs = make([]error, len(fds))
	events := make([]ioEvent, submitted)
	got := 0
	for got < submitted {
		// #nosec G103 -- io_getevents writes at most submitted-got events into events[got:], during the call.
		n, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, ctx, uintptr(submitted-got), uintptr(submitted-got), uintptr(unsafe.Pointer(&events[got])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			// Not knowing the results, count every file not reported
			// as failed: the apply fails and is retried. The kernel holds
			// its own reference to each file still in flight.
			for i := range submitted {
				errs[i] = e
			}
			break
		}
		got += int(n)
	}
	destroyAIO(ctx)
	for _, ev := range events[:got] {
		i := int(ev.data) // #nosec G115 -- data is the index syncAIO gave the request, below len(fds).
		if ev.res < 0 {
			errs[i] = syscall.Errno(-ev.res)
		} else {
			errs[i] = nil
		}
	}
	for i := submitted; i < len(fds); i++ {
		errs[i] = IgnoringEINTR(func() error { return syscall.Fsync(fds[i]) })
	}
	return errs, true
}

// destroyAIO releases an AIO context. io_destroy waits for the requests
// in flight (none, once every event was read) and for an RCU grace
// period: a wait of the kernel's, not of the caller's, so it runs
// beside the caller.
func destroyAIO(ctx uintptr) {
	go func() { _, _, _ = syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0) }()
}

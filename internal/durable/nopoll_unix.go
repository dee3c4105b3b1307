//go:build unix

package durable

import "syscall"

// NoPoll is an open flag that keeps the runtime from offering a regular
// file or a directory to the network poller. os opens every file as a
// pollable one unless it was opened non-blocking: it sets O_NONBLOCK
// (two fcntl), asks epoll to watch it (which refuses regular files and
// directories: EPERM) and sets it back to blocking (two more fcntl), five
// system calls an open that a renderer's publish made a few dozen times.
// Opened with O_NONBLOCK, only the refused epoll_ctl is left. O_NONBLOCK
// has no effect on a regular file's or a directory's reads, writes and
// fsyncs (open(2)); on a named pipe swapped in for a file it makes the
// open and reads not wait.
const NoPoll = syscall.O_NONBLOCK

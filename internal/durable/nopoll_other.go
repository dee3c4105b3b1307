//go:build !unix

package durable

// NoPoll is 0 where O_NONBLOCK would change what an open means (on
// Windows it asks for overlapped I/O); see nopoll_unix.go.
const NoPoll = 0

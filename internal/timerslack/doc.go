// Package timerslack raises a long-running process's timer slack, and
// starts child processes with the kernel's default.
//
// A thread's timer slack (prctl(2), PR_SET_TIMERSLACK) is how late the
// kernel may end its sleeps and timeouts, to wake it together with other
// timers: 50 µs by default. The Go runtime's monitor thread (sysmon) sleeps
// 20 µs between polls while any goroutine runs or is in a system call,
// and keeps that pace as long as it finds a processor held by a system
// call to take back, which with one processor is every system call longer
// than one poll: each fsync, and on a virtual machine many file system
// calls. An agent's one-item publish was 200-270 of those sleeps, 17 %
// of its CPU on a loaded host (docs/bench/latency-cpufive-2026-11-27).
// With a slack of a millisecond the monitor polls about once a
// millisecond, and takes back only a processor held for that long.
//
// The monitor thread is started before any of the program's code runs,
// with the slack the process inherited, and a thread can change only its
// own slack (another thread's needs CAP_SYS_NICE), so [Raise] sets the
// slack and executes the program again: every thread of the new image,
// the monitor's first, starts with it.
package timerslack

//go:build unix && !linux

package zktest

import "syscall"

// ChildAttr is the process attributes of a process a test starts: a
// process group of its own when group is set. Only Linux has a
// parent-death signal, so elsewhere a test binary killed outright can
// leave its children running; the suite runs on Linux (the ZooKeeper the
// harness starts is Debian's), this keeps the tests building and vetting
// on other systems.
func ChildAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}

package zktest

import "syscall"

// ChildAttr is the process attributes of a process a test starts: the
// kernel kills it (SIGKILL) when the test process dies, so nothing a test
// started outlives it even when the test binary is killed outright; group
// puts it in a process group of its own as well, so a signal to -pid
// reaches whatever it started (a JVM's children).
func ChildAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGKILL}
}

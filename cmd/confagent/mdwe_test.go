//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// mdweEnv makes this test binary apply the filter of systemd's
// MemoryDenyWriteExecute=yes to itself and exec its arguments.
const mdweEnv = "ZKCONF_TEST_MDWE_EXEC"

func init() {
	if os.Getenv(mdweEnv) == "" {
		return
	}
	runtime.LockOSThread()
	if err := denyWriteExecute(); err != nil {
		os.Stderr.WriteString("mdwe: " + err.Error() + "\n")
		os.Exit(90)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		os.Exit(91)
	}
	env := slicesWithout(os.Environ(), mdweEnv+"=")
	_ = syscall.Exec(path, os.Args[1:], env)
	os.Exit(92)
}

func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// denyWriteExecute installs on the calling thread (and so on the program it
// execs) the seccomp filter systemd 252 installs for
// MemoryDenyWriteExecute=yes (seccomp_memory_deny_write_execute): EPERM for
// mmap with PROT_WRITE|PROT_EXEC, mprotect and pkey_mprotect with
// PROT_EXEC, shmat with SHM_EXEC.
func denyWriteExecute() error {
	const (
		archX8664      = 0xc000003e
		sysPkeyMprotec = 329
		protWrite      = 0x2
		protExec       = 0x4
		shmExec        = 0o100000
		offNr          = 0
		offArch        = 4
		offArg2        = 16 + 2*8 // seccomp_data.args[2], low half
		retAllow       = 0x7fff0000
		retEPERM       = 0x00050000 | uint32(syscall.EPERM)
		ld             = syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS
		jeq            = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		jset           = syscall.BPF_JMP | syscall.BPF_JSET | syscall.BPF_K
		and            = syscall.BPF_ALU | syscall.BPF_AND | syscall.BPF_K
		ret            = syscall.BPF_RET | syscall.BPF_K
	)
	f := []syscall.SockFilter{
		/* 0 */ {Code: ld, K: offArch},
		/* 1 */ {Code: jeq, K: archX8664, Jt: 0, Jf: 6}, // other arch: allow (7)
		/* 2 */ {Code: ld, K: offNr},
		/* 3 */ {Code: jeq, K: syscall.SYS_MMAP, Jt: 4, Jf: 0}, // -> 8
		/* 4 */ {Code: jeq, K: syscall.SYS_MPROTECT, Jt: 7, Jf: 0}, // -> 12
		/* 5 */ {Code: jeq, K: sysPkeyMprotec, Jt: 6, Jf: 0}, // -> 12
		/* 6 */ {Code: jeq, K: syscall.SYS_SHMAT, Jt: 8, Jf: 0}, // -> 15
		/* 7 */ {Code: ret, K: retAllow},
		/* 8 */ {Code: ld, K: offArg2},
		/* 9 */ {Code: and, K: protWrite | protExec},
		/* 10 */ {Code: jeq, K: protWrite | protExec, Jt: 6, Jf: 0}, // -> 17
		/* 11 */ {Code: ret, K: retAllow},
		/* 12 */ {Code: ld, K: offArg2},
		/* 13 */ {Code: jset, K: protExec, Jt: 3, Jf: 0}, // -> 17
		/* 14 */ {Code: ret, K: retAllow},
		/* 15 */ {Code: ld, K: offArg2},
		/* 16 */ {Code: jset, K: shmExec, Jt: 0, Jf: 1}, // -> 17 or 18
		/* 17 */ {Code: ret, K: retEPERM},
		/* 18 */ {Code: ret, K: retAllow},
	}
	prog := syscall.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_SECCOMP, 2 /* SECCOMP_MODE_FILTER */, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return e
	}
	return nil
}

// TestMemoryDenyWriteExecute checks what docs/install.md ("Commands the
// sandbox breaks") and check-config say about MemoryDenyWriteExecute=yes,
// under the same filter systemd installs: a JVM and node do not start,
// node --jitless and CPython do.
func TestMemoryDenyWriteExecute(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), mdweEnv+"=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		args  []string
		works bool
	}{
		{[]string{"python3", "-c", "import json, re; print(json.dumps(re.findall('a+', 'caaat')))"}, true},
		{[]string{"sh", "-c", "echo ok"}, true},
		{[]string{"java", "-version"}, false},
		{[]string{"node", "-e", "console.log(1)"}, false},
		{[]string{"node", "--jitless", "-e", "console.log(1)"}, true},
	} {
		if _, err := exec.LookPath(tc.args[0]); err != nil {
			if tc.args[0] == "java" {
				t.Fatalf("java is missing: ZooKeeper's tests need it anyway (scripts/ensure-zookeeper.sh)")
			}
			t.Logf("%s not installed: not checked", tc.args[0])
			continue
		}
		out, err := run(tc.args...)
		if tc.works != (err == nil) {
			t.Errorf("%q under MemoryDenyWriteExecute: err %v, want works=%v:\n%s", tc.args, err, tc.works, out)
		}
	}
}

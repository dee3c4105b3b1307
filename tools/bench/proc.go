package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on every
// Linux architecture Go supports).
const userHZ = 100

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	cpu time.Duration // utime + stime of every thread, live or exited
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return procStat{cpu: time.Duration(ut+st) * time.Second / userHZ}, nil
}

// procIO is a process's I/O so far, from /proc/<pid>/io: bytes passed to
// read and write calls (any file, socket or pipe) and the number of those
// calls.
type procIO struct {
	rchar, wchar, syscr, syscw int64
}

func readProcIO(pid int) (procIO, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return procIO{}, err
	}
	var io procIO
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "rchar":
			io.rchar = n
		case "wchar":
			io.wchar = n
		case "syscr":
			io.syscr = n
		case "syscw":
			io.syscw = n
		}
	}
	return io, nil
}

func (a procIO) sub(b procIO) procIO {
	return procIO{rchar: a.rchar - b.rchar, wchar: a.wchar - b.wchar, syscr: a.syscr - b.syscr, syscw: a.syscw - b.syscw}
}

// memStatus is a process's memory as /proc/<pid>/status reports it, in
// bytes.
type memStatus struct {
	RSS, HWM, RSSAnon, RSSFile int64
}

func readMemStatus(pid int) (memStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	defer f.Close()
	var m memStatus
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		case "RssAnon":
			dst = &m.RSSAnon
		case "RssFile":
			dst = &m.RSSFile
		default:
			continue
		}
		fs := strings.Fields(v) // "12345 kB"
		if len(fs) == 2 && fs[1] == "kB" {
			n, err := strconv.ParseInt(fs[0], 10, 64)
			if err == nil {
				*dst = n << 10
			}
		}
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return m, sc.Err()
}

// selfCPU is the CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFDLimit raises the soft RLIMIT_NOFILE to at least need (up to the
// hard limit): every follower session holds a socket.
func raiseFDLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	if lim.Max < need {
		return lim.Cur, fmt.Errorf("need %d file descriptors, the hard limit is %d (raise it: ulimit -Hn)", need, lim.Max)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("setrlimit: %w", err)
	}
	return lim.Cur, nil
}

// loadAvg returns the 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// cpuModel returns the CPU model name.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

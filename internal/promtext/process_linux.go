package promtext

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processCollector reads the process_* families from /proc/self at scrape
// time, as client_golang's process collector does on Linux; a family it
// cannot read is left out of that scrape (as the client does).
type processCollector struct {
	pageSize int
	// boot is /proc/stat's btime, read once: it does not change, and
	// /proc/stat grows with the number of CPUs.
	boot    int64
	bootErr error
}

// NewProcessCollector returns process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds and process_start_time_seconds (Linux
// only; elsewhere it exports nothing). The client's
// process_virtual_memory_max_bytes and process_network_*_bytes_total are
// not exported.
func NewProcessCollector() Collector {
	p := processCollector{pageSize: os.Getpagesize()}
	p.boot, p.bootErr = bootTime()
	return p
}

func (processCollector) names() []string {
	return []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
		"process_open_fds", "process_max_fds", "process_start_time_seconds"}
}

// userHZ is the unit of /proc/self/stat's times: USER_HZ is 100 on every
// Linux architecture Go supports (procfs assumes the same).
const userHZ = 100

func (p processCollector) collect(add func(family)) {
	one := func(name, help, typ string, v float64) {
		add(family{name, help, typ, []sample{{value: v}}})
	}
	if st, err := readStat(); err == nil {
		one("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", typeCounter,
			float64(st.utime+st.stime)/userHZ)
		one("process_virtual_memory_bytes", "Virtual memory size in bytes.", typeGauge, float64(st.vsize))
		one("process_resident_memory_bytes", "Resident memory size in bytes.", typeGauge, float64(st.rss*int64(p.pageSize)))
		if p.bootErr == nil {
			one("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", typeGauge,
				float64(p.boot)+float64(st.starttime)/userHZ)
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		// The count includes ReadDir's own descriptor, open while it
		// reads, as the client's (procfs) count does.
		one("process_open_fds", "Number of open file descriptors.", typeGauge, float64(len(ents)))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		one("process_max_fds", "Maximum number of open file descriptors.", typeGauge, float64(lim.Cur))
	}
}

type procStat struct {
	utime, stime, starttime, vsize uint64
	rss                            int64
}

// readStat parses /proc/self/stat (proc(5)): the fields after the
// command name, which is in parentheses and may hold spaces.
func readStat() (procStat, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, fmt.Errorf("reading process stat: %w", err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parsing /proc/self/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("parsing /proc/self/stat: %d fields", len(f))
	}
	var st procStat
	for _, x := range []struct {
		field int
		dst   *uint64
	}{{14, &st.utime}, {15, &st.stime}, {22, &st.starttime}, {23, &st.vsize}} {
		if *x.dst, err = strconv.ParseUint(f[x.field-3], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("parsing /proc/self/stat field %d: %w", x.field, err)
		}
	}
	if st.rss, err = strconv.ParseInt(f[24-3], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("parsing /proc/self/stat field 24: %w", err)
	}
	return st, nil
}

// bootTime is /proc/stat's btime: the boot time in seconds since the epoch.
func bootTime() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing /proc/stat btime: %w", err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no btime in /proc/stat")
}

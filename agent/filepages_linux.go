//go:build linux

package agent

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvDontneed is MADV_DONTNEED (asm-generic/mman-common.h).
const madvDontneed = 4

// releaseFilePages unmaps the pages of the executable's read-only
// mappings (code and read-only data) from the process, and returns how
// many bytes of mappings it released. They stay in the page cache: what
// the process touches again faults back in from there (a minor fault, no
// I/O), and what it touched only while starting (package initialisation,
// configuration, the first apply's set-up) is no longer counted in its
// RSS: about half the binary's pages (docs/confagent.md, "Memory"). The
// writable mapping (initialised data) is left alone: MADV_DONTNEED would
// discard what the program wrote there.
func releaseFilePages() (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, fmt.Errorf("stat /proc/self/exe: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type span struct{ start, end uint64 }
	var spans []span
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset major:minor inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Contains(fields[1], "w") || !sameFile(fields[3], fields[4], st) {
			continue
		}
		bounds := strings.SplitN(fields[0], "-", 2)
		if len(bounds) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(bounds[0], 16, 64)
		end, err2 := strconv.ParseUint(bounds[1], 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		spans = append(spans, span{start, end})
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read /proc/self/maps: %w", err)
	}
	var released int64
	for _, s := range spans {
		// The addresses come from the kernel's own list of this process's
		// mappings, and the advice only drops page table entries of a
		// read-only, file-backed mapping: nothing of the Go heap.
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), madvDontneed); errno != 0 {
			return released, fmt.Errorf("madvise %#x-%#x: %w", s.start, s.end, errno)
		}
		released += int64(s.end - s.start) // #nosec G115 -- a mapping's size
	}
	return released, nil
}

// sameFile reports whether a /proc/self/maps line's device (major:minor,
// hexadecimal) and inode are st's.
func sameFile(dev, inode string, st syscall.Stat_t) bool {
	ino, err := strconv.ParseUint(inode, 10, 64)
	if err != nil || ino != st.Ino {
		return false
	}
	majmin := strings.SplitN(dev, ":", 2)
	if len(majmin) != 2 {
		return false
	}
	major, err1 := strconv.ParseUint(majmin[0], 16, 32)
	minor, err2 := strconv.ParseUint(majmin[1], 16, 32)
	if err1 != nil || err2 != nil {
		return false
	}
	d := st.Dev
	return major == (d>>8)&0xfff|(d>>32)&^0xfff && minor == d&0xff|(d>>12)&^0xff
}

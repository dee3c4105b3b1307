//go:build linux

package agent

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// writtenData is in the executable's writable data mapping (initialised,
// so in the file): TestReleaseFilePages writes it and checks that the
// release did not throw the write away, which MADV_DONTNEED on that
// mapping would (the page would be read from the file again).
var writtenData = [4096]int64{1: 12345}

// TestReleaseFilePages: the executable's read-only mappings lose their
// resident pages (the RSS the binary's code and read-only data add), the
// writable mapping keeps what the program wrote, and the code still runs.
func TestReleaseFilePages(t *testing.T) {
	writtenData[1] = 777
	before := exeRss(t)
	if before.readOnly == 0 {
		t.Fatalf("no resident read-only page of the executable before the release: %+v", before)
	}
	n, err := releaseFilePages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRss(t)
	if n <= 0 {
		t.Fatalf("released %d bytes", n)
	}
	// The test's own code faults a few pages back in between the two
	// reads; what was resident before is gone.
	if after.readOnly >= before.readOnly/2 {
		t.Errorf("read-only pages resident: %d KiB before the release, %d KiB after", before.readOnly, after.readOnly)
	}
	if writtenData[1] != 777 {
		t.Errorf("the writable mapping lost a write: %d", writtenData[1])
	}
	t.Logf("executable's read-only pages: %d KiB resident before, %d KiB after (%d bytes of mappings released)", before.readOnly, after.readOnly, n)
}

type exeResident struct{ readOnly, writable int64 } // KiB

// exeRss sums the Rss of the executable's mappings in /proc/self/smaps.
func exeRss(t *testing.T) exeResident {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r exeResident
	var cur *int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			cur = nil
			if len(fields) >= 6 && sameFile(fields[3], fields[4], st) {
				if strings.Contains(fields[1], "w") {
					cur = &r.writable
				} else {
					cur = &r.readOnly
				}
			}
		case len(fields) == 3 && fields[0] == "Rss:" && cur != nil:
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			*cur += kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

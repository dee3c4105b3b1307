package render

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDirWriterMarksFreeSync: on ext4 without a journal, a DirWriter with
// a grace period marks every file it writes synchronous (FS_SYNC_FL), so
// that removing its generation later leaves clean inode table blocks and
// new files are allocated without ext4's recently-deleted scan; a kept
// file (hard-linked) keeps its mark. Without a grace period (the removal
// is inside the write) and on any other filesystem nothing is marked.
// The test's temporary directory decides which branch is asserted; the
// expectation is derived independently of freeSync, from
// /proc/self/mountinfo (the device's mount options and, through
// /proc/fs/jbd2, its journal).
func TestDirWriterMarksFreeSync(t *testing.T) {
	base := t.TempDir()
	want := ext4WithoutJournal(t, base)
	t.Logf("%s: ext4 without a journal: %v", base, want)
	for _, grace := range []time.Duration{5 * time.Second, 0} {
		dir := filepath.Join(base, "g"+grace.String())
		w := NewDirWriter(dir)
		w.SetGrace(grace)
		if _, err := w.Write(payload("a", "1", "kept", "k"), opts(0o644)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(payload("a", "2", "kept", "k", "new", "n"), opts(0o644)); err != nil {
			t.Fatal(err)
		}
		cur, err := CurrentPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "kept", "new"} {
			f, err := os.Open(filepath.Join(cur, name))
			if err != nil {
				t.Fatal(err)
			}
			got := hasFreeSync(f)
			_ = f.Close()
			if exp := want && grace > 0; got != exp {
				t.Errorf("grace %v: %s marked synchronous = %v, want %v", grace, name, got, exp)
			}
		}
		// The mark is invisible to readers and to the drift check.
		if same, err := w.Matches(payload("a", "2", "kept", "k", "new", "n"), opts(0o644)); err != nil || !same {
			t.Errorf("grace %v: Matches = %v, %v", grace, same, err)
		}
	}
}

// ext4WithoutJournal reports whether dir is on an ext4 mount whose device
// the kernel lists no journal for.
func ext4WithoutJournal(t *testing.T, dir string) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	majmin := strings.Join([]string{itoa(unix.Major(st.Dev)), itoa(unix.Minor(st.Dev))}, ":")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[2] != majmin {
			continue
		}
		sep := 6
		for sep < len(fields) && fields[sep] != "-" {
			sep++
		}
		if sep+2 >= len(fields) || fields[sep+1] != "ext4" {
			return false
		}
		source := filepath.Base(fields[sep+2])
		if _, err := os.Stat("/proc/fs/jbd2"); err != nil {
			return false
		}
		m, _ := filepath.Glob("/proc/fs/jbd2/" + source + "-*")
		return len(m) == 0
	}
	return false
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

package render

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// fsSyncFL is FS_SYNC_FL of <linux/fs.h> (chattr +S).
const fsSyncFL = 0x00000008

// freeSyncMemo remembers freeSync's answer for one device: the journal
// is looked up once, not once a stage.
type freeSyncMemo struct {
	dev       uint64
	known, ok bool
}

// freeSync reports whether the filesystem holding f is ext4 (or ext2/3
// run by the ext4 driver) without a journal, the filesystem on which
// DirWriter marks the files it creates synchronous (markFreeSync).
//
// Without a journal, ext4 does not hand out an inode freed less than
// dirty_expire_centisecs ago (30 s) while its inode table block is still
// dirty: every allocation scans past each of them (recently_deleted), so
// a dir target that replaces 20 or 100 files a publish, and removes each
// generation directory after its grace period, spent a sixth of the
// agent's CPU in that scan, inside the stage phase (perf, issue 27;
// docs/bench/latency-dirstage-2026-11-27). A file marked synchronous has
// its inode written back when it is freed, so its table block is clean
// and the next allocation takes it without the scan.
//
// The journal is looked for where the kernel lists it, /proc/fs/jbd2/
// <device>-<inode>: with a journal (and on every other filesystem) the
// mark would make each removal wait for a journal commit, so it is not
// set.
func (m *freeSyncMemo) freeSync(f *os.File) bool {
	var st unix.Stat_t
	var sfs unix.Statfs_t
	var err error
	if cerr := control(f, func(fd int) {
		if err = unix.Fstat(fd, &st); err == nil {
			err = unix.Fstatfs(fd, &sfs)
		}
	}); cerr != nil || err != nil || sfs.Type != unix.EXT4_SUPER_MAGIC {
		return false
	}
	if !m.known || m.dev != st.Dev {
		m.dev, m.known, m.ok = st.Dev, true, noJournal(st.Dev)
	}
	return m.ok
}

// noJournal reports whether the kernel lists no journal for the block
// device dev (false when that cannot be told).
func noJournal(dev uint64) bool {
	name := blockDevName(unix.Major(dev), unix.Minor(dev))
	if name == "" {
		return false
	}
	if _, err := os.Stat("/proc/fs/jbd2"); err != nil {
		// No listing (procfs not mounted, no jbd2): a journal cannot be
		// ruled out.
		return false
	}
	journals, err := filepath.Glob(filepath.Join("/proc/fs/jbd2", name+"-*"))
	return err == nil && len(journals) == 0
}

// blockDevName is the kernel's name of block device major:minor (as
// /proc/fs/jbd2 uses it), from sysfs; "" if unknown.
func blockDevName(major, minor uint32) string {
	b, err := os.ReadFile("/sys/dev/block/" + strconv.FormatUint(uint64(major), 10) + ":" + strconv.FormatUint(uint64(minor), 10) + "/uevent")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("DEVNAME=")); ok {
			return filepath.Base(string(v))
		}
	}
	return ""
}

// markFreeSync sets the synchronous-update attribute (FS_SYNC_FL,
// chattr +S) on f, best effort: what changes is its removal (see
// freeSync); f's content is written and fsynced as before.
func markFreeSync(f *os.File) {
	_ = control(f, func(fd int) {
		flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
		if err != nil || flags&fsSyncFL != 0 {
			return
		}
		_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsSyncFL))
	})
}

// hasFreeSync reports whether f carries the mark of markFreeSync.
func hasFreeSync(f *os.File) bool {
	var flags uint32
	var err error
	if cerr := control(f, func(fd int) { flags, err = unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS) }); cerr != nil || err != nil {
		return false
	}
	return flags&fsSyncFL != 0
}

// control runs fn with f's descriptor (without Fd's switch to blocking
// mode).
func control(f *os.File, fn func(fd int)) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return c.Control(func(fd uintptr) { fn(int(fd)) })
}

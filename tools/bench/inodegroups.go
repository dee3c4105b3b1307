package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// InodeGroups are the ext4 block groups ((inode − 1) ÷ inodes per group)
// of three inodes a set's publishes depend on, taken after its in-process
// pass: a creation on ext4 without a journal walks the recently freed
// inodes of its own group, so the inode-creation probe speaks for the
// agent's per-item creations where its group is the pool's. -1 where an
// inode was not there (an empty pool).
type InodeGroups struct {
	// Pool is a file of the agent's dir target's pool ("..pool"): where
	// its next per-item creations go.
	Pool int `json:"pool"`
	// Probe is the first file of the after probe.
	Probe int `json:"probe"`
	// Follower is the confd-style follower's file of every item.
	Follower int `json:"follower"`
}

// ext4Groups turns inode numbers of one ext4 file system into its block
// groups.
type ext4Groups struct{ perGroup uint64 }

// ext4GroupsOf returns the groups of the file system holding dir; ok is
// false unless it is ext4 and the kernel says how many groups it has
// (/proc/fs/ext4/<device>/mb_groups: one line per group), the inode
// count (statfs) dividing evenly among them.
func ext4GroupsOf(dir string) (g ext4Groups, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return g, false
	}
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return g, false
	}
	fstype, source := mountOf(mi, devMajor(st.Dev), devMinor(st.Dev))
	_ = mi.Close()
	if fstype != "ext4" || source == "" {
		return g, false
	}
	mb, err := os.Open(filepath.Join("/proc/fs/ext4", filepath.Base(source), "mb_groups"))
	if err != nil {
		return g, false
	}
	n := countGroups(mb)
	_ = mb.Close()
	var fs syscall.Statfs_t
	if n == 0 || syscall.Statfs(dir, &fs) != nil || fs.Files == 0 || fs.Files%uint64(n) != 0 {
		return g, false
	}
	return ext4Groups{perGroup: fs.Files / uint64(n)}, true
}

// of returns the group of inode ino.
func (g ext4Groups) of(ino uint64) int {
	if g.perGroup == 0 || ino == 0 {
		return -1
	}
	return int((ino - 1) / g.perGroup)
}

// ofPath returns the group of the inode at path (not followed), -1 if it
// cannot be stat'ed.
func (g ext4Groups) ofPath(path string) int {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return -1
	}
	return g.of(st.Ino)
}

// inodeGroupsOf returns the groups of a set's inodes (InodeGroups): a
// file of pool, the probe's first file (probeIno), the follower's file.
func (g ext4Groups) inodeGroupsOf(pool string, probeIno uint64, follower string) *InodeGroups {
	ig := &InodeGroups{Pool: -1, Probe: g.of(probeIno), Follower: g.ofPath(follower)}
	if ents, err := os.ReadDir(pool); err == nil && len(ents) > 0 {
		ig.Pool = g.ofPath(filepath.Join(pool, ents[0].Name()))
	}
	return ig
}

// mountOf returns the file system type and source of the mount of device
// major:minor in mountinfo (proc(5)); empty when none is.
func mountOf(mountinfo io.Reader, major, minor uint32) (fstype, source string) {
	want := fmt.Sprintf("%d:%d", major, minor)
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// ID parent major:minor root mount-point options [optional...] - fstype source super-options
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[2] != want {
			continue
		}
		for i := 3; i+2 < len(f); i++ {
			if f[i] == "-" {
				return f[i+1], f[i+2]
			}
		}
	}
	return "", ""
}

// countGroups counts the groups listed in an ext4 mb_groups file: a line
// "#<n> : ..." per group, after a "#group: ..." header.
func countGroups(mbGroups io.Reader) int {
	n := 0
	sc := bufio.NewScanner(mbGroups)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 1 && line[0] == '#' && line[1] >= '0' && line[1] <= '9' {
			n++
		}
	}
	return n
}

// devMajor and devMinor split a Linux dev_t (glibc's encoding).
func devMajor(dev uint64) uint32 { return uint32((dev>>8)&0xfff | (dev>>32)&^0xfff) }
func devMinor(dev uint64) uint32 { return uint32(dev&0xff | (dev>>12)&^0xff) }

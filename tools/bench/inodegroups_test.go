package bench

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMountOf finds a device's mount in mountinfo lines, optional fields
// and all, and nothing for a device not mounted.
func TestMountOf(t *testing.T) {
	mi := strings.Join([]string{
		"22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw",
		"1 0 253:0 / / rw,relatime shared:1 master:2 - ext4 /dev/vda rw,discard",
		"30 1 0:26 / /tmp rw - tmpfs tmpfs rw",
	}, "\n")
	for _, c := range []struct {
		major, minor   uint32
		fstype, source string
	}{{253, 0, "ext4", "/dev/vda"}, {0, 26, "tmpfs", "tmpfs"}, {8, 1, "", ""}} {
		fstype, source := mountOf(strings.NewReader(mi), c.major, c.minor)
		if fstype != c.fstype || source != c.source {
			t.Errorf("%d:%d: %q %q, want %q %q", c.major, c.minor, fstype, source, c.fstype, c.source)
		}
	}
}

// TestCountGroups counts one group per "#<n> :" line of mb_groups, not
// its header.
func TestCountGroups(t *testing.T) {
	mb := "#group: free  frags first [ 2^0   2^1 ]\n#0    : 59    7     1673  [ 5     3 ]\n#1    : 0     0     32768 [ 0     0 ]\n#2    : 1 1 1 [ 1 0 ]\n"
	if n := countGroups(strings.NewReader(mb)); n != 3 {
		t.Errorf("%d groups, want 3", n)
	}
}

// TestDevSplit splits dev_t values, small and large (glibc's makedev).
func TestDevSplit(t *testing.T) {
	for _, c := range []struct {
		dev          uint64
		major, minor uint32
	}{{0xfd00, 253, 0}, {0x801, 8, 1}, {0x1001_0000_3234, 0x1032, 0x100034}} {
		if ma, mi := devMajor(c.dev), devMinor(c.dev); ma != c.major || mi != c.minor {
			t.Errorf("%#x: %d:%d, want %d:%d", c.dev, ma, mi, c.major, c.minor)
		}
	}
}

// TestInodeGroupsOf: a set's groups are its inodes' numbers less one
// over the inodes per group; an empty pool and a missing file are -1.
func TestInodeGroupsOf(t *testing.T) {
	dir := t.TempDir()
	pool, follower := filepath.Join(dir, poolDir), filepath.Join(dir, "all.conf")
	if err := os.Mkdir(pool, 0o700); err != nil {
		t.Fatal(err)
	}
	ino := func(p string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	g := ext4Groups{perGroup: 16}
	if ig := g.inodeGroupsOf(pool, 33, follower); *ig != (InodeGroups{Pool: -1, Probe: 2, Follower: -1}) {
		t.Errorf("empty pool, no follower file: %+v", *ig)
	}
	for _, p := range []string{filepath.Join(pool, "p0"), follower} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := InodeGroups{Pool: int((ino(filepath.Join(pool, "p0")) - 1) / 16), Probe: 0, Follower: int((ino(follower) - 1) / 16)}
	if ig := g.inodeGroupsOf(pool, 1, follower); *ig != want {
		t.Errorf("groups %+v, want %+v", *ig, want)
	}
	// On this machine's file system, when it is ext4, the inode count
	// divides among the kernel's groups and a new file has one.
	if real, ok := ext4GroupsOf(dir); ok {
		if n := real.ofPath(follower); n < 0 || real.perGroup == 0 {
			t.Errorf("ext4: %d inodes per group, the file's group %d", real.perGroup, n)
		}
	}
}

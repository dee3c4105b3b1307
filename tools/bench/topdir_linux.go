package bench

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsTopdirFL is FS_TOPDIR_FL (linux/fs.h; chattr's "T"): ext4's Orlov
// allocator places each subdirectory of a directory carrying it as it
// places a directory of the file system's root, in a block group of its
// own choosing (one with fewer directories and more free inodes than the
// average), instead of beside its parent.
const fsTopdirFL = 0x00020000

// spreadSubdirs sets FS_TOPDIR_FL on dir, so that each directory made in
// it lands in a block group of its own (fsTopdirFL). It reports whether
// the flag is set; file systems without it (tmpfs) say no, which is fine.
func spreadSubdirs(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	if flags&fsTopdirFL != 0 {
		return true
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL)) == nil
}

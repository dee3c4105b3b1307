package render

import (
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// openat2 and its resolve flag (linux/openat2.h; one number on every
// architecture).
const (
	sysOpenat2        = 437
	resolveNoSymlinks = 0x04
	atFDCWD           = -100 // AT_FDCWD: dir is absolute anyway
)

// openHow is struct open_how.
type openHow struct {
	flags, mode, resolve uint64
}

// openDirFast opens dir (absolute and clean) when no component of it is a
// symbolic link, in one openat2(RESOLVE_NO_SYMLINKS) instead of a walk of
// a few system calls per component, and returns an os.Root on it. The
// os.Root is opened by name (it cannot be made from a descriptor) and
// kept only if it is the very directory openat2 reached without a link:
// writing into that directory is writing where dir led without links,
// even if the path has changed since. ok is false when this does not
// apply (a link on the way, a missing component, a kernel before 5.6, a
// race): openDir walks then.
func openDirFast(dir string) (root *os.Root, ok bool) {
	st, ok := statNoLinks(dir)
	if !ok {
		return nil, false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false
	}
	fi, err := root.Stat(".")
	if rst, isStat := sysStat(fi); err != nil || !isStat || rst.Dev != st.Dev || rst.Ino != st.Ino {
		_ = root.Close()
		return nil, false
	}
	return root, true
}

// statNoLinks is fstat of dir (absolute and clean) opened with
// openat2(RESOLVE_NO_SYMLINKS): what dir leads to through no symbolic
// link. ok is false when that fails (a link on the way, a missing
// component, a kernel before 5.6).
func statNoLinks(dir string) (st syscall.Stat_t, ok bool) {
	p, err := syscall.BytePtrFromString(dir)
	if err != nil {
		return st, false
	}
	how := openHow{flags: syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_CLOEXEC, resolve: resolveNoSymlinks}
	cwd := atFDCWD
	// #nosec G103 -- the path and struct open_how passed to openat2, which reads them during the call only
	r, _, errno := syscall.Syscall6(sysOpenat2, uintptr(cwd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if errno != 0 {
		return st, false
	}
	fd := int(r)
	defer func() { _ = syscall.Close(fd) }()
	return st, syscall.Fstat(fd, &st) == nil
}

// sysStat is fi's stat_t.
func sysStat(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// stillLeadsTo reports whether dir, opened again without following any
// symbolic link (openat2 RESOLVE_NO_SYMLINKS), is the directory root holds
// open: a Commit's check that no link was swapped into dir's path since
// Stage, in four system calls rather than openDir's and sameDir's nine.
// known is false when this cannot tell (a link on the way, which openDir
// must judge; a kernel without openat2): the caller opens dir then.
func stillLeadsTo(dir string, root *os.Root) (same, known bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, false
	}
	st, ok := statNoLinks(abs)
	if !ok {
		return false, false
	}
	fi, err := root.Stat(".")
	rst, isStat := sysStat(fi)
	if err != nil || !isStat {
		return false, false
	}
	return rst.Dev == st.Dev && rst.Ino == st.Ino, true
}

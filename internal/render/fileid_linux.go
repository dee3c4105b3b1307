package render

import (
	"io/fs"
	"syscall"
)

// idOf returns the identity of the file fi describes (see fileID).
func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{
		// The conversions are for 32-bit architectures, where some of
		// these fields are narrower.
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mode: fi.Mode(),
		uid: st.Uid, gid: st.Gid, mtime: fi.ModTime().UnixNano(),
		ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
	}, true
}

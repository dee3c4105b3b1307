//go:build unix

package render

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the numeric owner and group recorded in fi.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

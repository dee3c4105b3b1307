//go:build !unix

package render

import "io/fs"

// fileOwner reports ok=false: ownership is not comparable on this platform,
// so a file with a requested owner is always considered different.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

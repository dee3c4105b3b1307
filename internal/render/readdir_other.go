//go:build !linux

package render

import (
	"io/fs"
	"os"
)

// readDirIn lists the directory name of root, sorted by name.
func readDirIn(root *os.Root, name string) ([]fs.DirEntry, error) {
	return fs.ReadDir(root.FS(), name)
}

// entryIno is the inode number the listing gave e: unknown (0) here, so
// every link is read (DirWriter.SetLinksWatched).
func entryIno(fs.DirEntry) uint64 { return 0 }

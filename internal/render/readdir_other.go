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

//go:build !linux

package render

import (
	"errors"
	"io/fs"
	"os"
)

// flatDir is Linux's bare-descriptor generation directory; elsewhere
// matchSet goes through an os.Root (openFlat fails).
type flatDir struct{}

func openFlat(*os.Root, string) (*flatDir, error) { return nil, errors.ErrUnsupported }

func (*flatDir) close() {}

func (*flatDir) list() ([]fs.DirEntry, error) { return nil, errors.ErrUnsupported }

func (*flatDir) lstat(string) (fs.FileInfo, error) { return nil, errors.ErrUnsupported }

func (*flatDir) sameFile(string, []byte, FileOptions) (fs.FileInfo, bool, error) {
	return nil, false, errors.ErrUnsupported
}

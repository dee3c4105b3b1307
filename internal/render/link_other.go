//go:build !linux

package render

import (
	"errors"
	"os"
)

// linkAt is not available here: the caller links through its os.Root.
func linkAt(from, to *os.File, name string) error { return errors.ErrUnsupported }

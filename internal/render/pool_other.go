//go:build !linux

package render

import "os"

// Refill does nothing here: files are written through *os.File (see
// bareCreate), and every one is created.
func (w *DirWriter) Refill() error { return nil }

// openPool is not used where bareCreate is false.
func openPool(*os.Root, bool) (*os.File, error) { return nil, os.ErrInvalid }

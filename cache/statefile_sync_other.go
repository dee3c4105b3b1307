//go:build !linux

package cache

import (
	"fmt"
	"os"
)

// datasyncClose makes f's data durable (fsync(2): fdatasync is Linux's)
// and closes it.
func datasyncClose(f *os.File) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil && cerr != nil {
		return fmt.Errorf("close %s: %w", f.Name(), cerr)
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

// writeVecAt writes bufs, one after the other, to f at off (one write
// per buffer: pwritev(2) is used on Linux).
func writeVecAt(f *os.File, bufs [][]byte, off int64) error {
	for _, b := range bufs {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}

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

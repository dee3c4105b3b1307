package cache

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// datasyncClose makes f's data durable with fdatasync(2) and closes it.
// For an append that is enough: fdatasync flushes the metadata needed to
// read the data back, the file's size among them (what an append, or a
// truncation, changes), and leaves out only what is never read (mtime).
func datasyncClose(f *os.File) error {
	var err error
	rc, cerr := f.SyscallConn()
	if cerr == nil {
		cerr = rc.Control(func(fd uintptr) { err = unix.Fdatasync(int(fd)) })
	}
	if cerr != nil {
		err = cerr
	}
	cerr = f.Close()
	if err == nil && cerr != nil {
		return fmt.Errorf("close %s: %w", f.Name(), cerr)
	}
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

package render

import (
	"os"

	"golang.org/x/sys/unix"
)

// linkAt hard-links the file name of directory from to the same name in
// directory to (linkat without AT_SYMLINK_FOLLOW: a symlink is linked,
// never followed).
func linkAt(from, to *os.File, name string) error {
	fc, err := from.SyscallConn()
	if err != nil {
		return err
	}
	tc, err := to.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	err = fc.Control(func(ffd uintptr) {
		err := tc.Control(func(tfd uintptr) {
			lerr = unix.Linkat(int(ffd), name, int(tfd), name, 0)
		})
		if err != nil {
			lerr = err
		}
	})
	if err != nil {
		return err
	}
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: name, New: name, Err: lerr}
	}
	return nil
}

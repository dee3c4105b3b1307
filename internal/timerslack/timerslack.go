package timerslack

import (
	"os/exec"
	"time"
)

// Default is the kernel's timer slack of a thread whose parent did not
// choose another (prctl(2)).
const Default = 50 * time.Microsecond

// Run starts cmd as Start does and waits for it.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

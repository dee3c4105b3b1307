package agent

import (
	"context"

	"github.com/zkconf/zkconf/internal/targets"
)

// CommandError is a check or reload command that failed, timed out or could
// not start.
type CommandError struct {
	Kind     string // "check" or "reload"
	Target   string
	ExitCode int // -1 when it did not exit normally
	TimedOut bool
	Output   string // the tail of combined stdout and stderr
	Err      error
}

func (e *CommandError) Error() string { return e.message(true) }

func (e *CommandError) Unwrap() error { return e.Err }

// runCommand runs c (targets.Command.Run) and returns its failure as a
// *CommandError.
func runCommand(ctx context.Context, c targets.Command) (string, error) {
	out, err := c.Run(ctx)
	if ce, ok := err.(*targets.CommandError); ok {
		return out, (*CommandError)(ce)
	}
	return out, err
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/textdiff"
)

// dryRun connects without registering a status node or persisting
// anything, renders the live generation in memory and prints a unified
// diff against what is on disk.
func dryRun(ctx context.Context, f flags, opts agent.Options, stdout, stderr io.Writer) int {
	opts.NoPersist = true
	opts.AgentID = ""
	d, err := agent.NewDaemon(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	snap, changes, err := d.Plan(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "confagent: %v\n", err)
		return exitError
	}
	if len(changes) == 0 {
		fmt.Fprintf(stdout, "generation %d: nothing would change\n", snap.Generation())
		return exitOK
	}
	fmt.Fprintf(stdout, "generation %d: %d file(s) would change\n", snap.Generation(), len(changes))
	for _, c := range changes {
		old, nw := "a"+c.Path, "b"+c.Path
		if c.Old == nil {
			old = "/dev/null"
		}
		if c.New == nil {
			nw = "/dev/null"
		}
		fmt.Fprintf(stdout, "target %s:\n%s", c.Target, textdiff.Unified(old, nw, c.Old, c.New))
	}
	return exitOK
}

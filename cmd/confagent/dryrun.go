package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/textdiff"
)

// dryRun connects without registering a status node or persisting
// anything, renders the live generation in memory and prints a unified
// diff against what is on disk, then (unless --no-check) runs the check
// commands of the targets that would change.
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
	if f.noCheck {
		return exitOK
	}
	return dryRunChecks(ctx, d, snap, changes, stdout, stderr)
}

// dryRunChecks runs the check commands of the targets that would change
// against their would-be output, in a private temporary directory (a dry
// run writes nothing beside the destinations), and reports each: exit 1
// when one fails.
func dryRunChecks(ctx context.Context, d *agent.Daemon, snap agent.Snapshot, changes []agent.Change, stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "confagent-dry-run-")
	if err != nil {
		fmt.Fprintf(stderr, "confagent: check commands: %v\n", err)
		return exitError
	}
	defer os.RemoveAll(dir)
	results, err := d.Renderer().CheckPlan(ctx, snap, changes, dir)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "check %s: FAILED: %v\n", r.Target, r.Err)
			continue
		}
		fmt.Fprintf(stdout, "check %s: ok\n", r.Target)
	}
	if err != nil {
		fmt.Fprintf(stderr, "confagent: check commands: %v\n", err)
		return exitError
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "confagent: %d check command(s) failed: generation %d would be rejected (nothing was applied)\n", failed, snap.Generation())
		return exitError
	}
	return exitOK
}

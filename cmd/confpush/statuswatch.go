package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/zkclient"
)

// clearScreen moves the cursor home and clears the terminal (ANSI), as
// watch(1) and kubectl get --watch on a terminal redraw in place.
const clearScreen = "\x1b[H\x1b[2J"

// checkWatchFlags refuses what --watch cannot honour, before connecting.
func (a *app) checkWatchFlags() error {
	if a.v.GetBool("watch") && (a.v.GetInt64("wait-generation") > 0 || a.v.GetBool("fail-on-error")) {
		return usagef("--watch cannot be combined with --wait-generation or --fail-on-error")
	}
	return nil
}

// watchStatus prints the status at start and again at every change of the
// fleet, seen through ZooKeeper watches: redrawn in place on a terminal, a
// new table (or with --json one JSON object per line) per change
// otherwise. It runs until SIGINT or SIGTERM.
func (a *app) watchStatus(cmd *cobra.Command, cl *zkclient.Client) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tty := isTerminal(a.stdout)
	p := a.paths()
	first := true
	f, err := a.fleetOf(cl)
	if err != nil {
		return err
	}
	err = f.Changes(ctx, func() error {
		obj, text, _, err := a.statusReport(ctx, cl)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		switch {
		case a.json():
			obj["ok"] = true
			obj["time"] = time.Now().UTC().Format(time.RFC3339)
			line, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			b.Write(append(line, '\n'))
		case tty:
			b.WriteString(clearScreen)
			fmt.Fprintf(&b, "confpush status --watch: %s, updated %s (Ctrl-C to stop)\n\n", p.Root, time.Now().Format(time.TimeOnly))
			text(&b)
		default:
			if !first {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "--- %s\n", time.Now().UTC().Format(time.RFC3339))
			text(&b)
		}
		first = false
		_, err = a.stdout.Write(b.Bytes())
		return err
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted: the normal end of a watch
	}
	return err
}

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
)

func (a *app) forgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "forget AGENT...",
		Short: "Remove agents from the registry, so that rollouts stop waiting for them",
		Long: `Delete the registry node of each AGENT (the agent ids 'confpush status'
lists): a host that was removed for good stops being expected by
'publish --wait --all' and 'status --wait-generation --all', and is no longer
shown as gone. All agents are checked first: an unknown one is an error and
nothing is deleted.

An agent that is still running registers again on its next session or
refresh. An agent whose identity the access policy names stays expected:
remove the identity with 'confpush init' (without it) as well.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.context(cmd)
			defer cancel()
			cl, err := a.dial(ctx)
			if err != nil {
				return err
			}
			defer cl.Conn().Close()
			f, err := a.fleetOf(cl)
			if err != nil {
				return err
			}
			done, err := f.Forget(ctx, args)
			var unknown *fleet.UnknownAgentsError
			if errors.As(err, &unknown) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			var ids, running, named []string
			for _, fg := range done {
				ids = append(ids, fg.ID)
				if fg.Running {
					running = append(running, fg.ID+" is still running: it registers again on its next session or refresh")
				}
				if fg.Named {
					named = append(named, fg.ID+" stays expected: the access policy names its identity (confpush init without it)")
				}
			}
			notes := append(running, named...)
			obj := map[string]any{"root": a.paths().Root, "forgotten": ids, "notes": append([]string{}, notes...)}
			a.emit(obj, func(w io.Writer) {
				fmt.Fprintf(w, "forgot %s\n", strings.Join(ids, ", "))
				for _, n := range notes {
					fmt.Fprintf(w, "  note: %s\n", n)
				}
			})
			return nil
		},
	}
}

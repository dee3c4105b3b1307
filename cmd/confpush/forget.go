package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/zkclient"
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
			conn := cl.Conn()
			defer conn.Close()
			p := a.paths()
			f, err := a.fleetOf(cl)
			if err != nil {
				return err
			}
			agents, err := f.List(ctx)
			if err != nil {
				return err
			}
			var unknown []string
			var ops []any
			ids := slices.Compact(slices.Sorted(slices.Values(args)))
			for _, id := range ids {
				ok, st, err := conn.Exists(p.AgentNode(id))
				if err != nil {
					return fmt.Errorf("read the registry node of %s: %w", id, err)
				}
				if !ok {
					unknown = append(unknown, id)
					continue
				}
				ops = append(ops, &zk.DeleteRequest{Path: p.AgentNode(id), Version: st.Version})
			}
			if len(unknown) > 0 {
				return usagef("not registered under %s: %s; nothing forgotten ('confpush status' lists the agents)",
					p.Agents(), strings.Join(unknown, ", "))
			}
			if res, err := conn.Multi(ops...); err != nil {
				if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
					return fmt.Errorf("a registry node changed meanwhile (an agent registering again?); nothing forgotten, retry: %w", err)
				}
				return zkclient.ExplainMulti(err, ops, res)
			}
			var notes []string
			for _, id := range ids {
				i := slices.IndexFunc(agents, func(ag fleet.Agent) bool { return ag.ID == id })
				if i < 0 {
					continue
				}
				if agents[i].Trusted() {
					notes = append(notes, id+" is still running: it registers again on its next session or refresh")
				}
			}
			for _, id := range ids {
				if i := slices.IndexFunc(agents, func(ag fleet.Agent) bool { return ag.ID == id }); i >= 0 && agents[i].Named {
					notes = append(notes, id+" stays expected: the access policy names its identity (confpush init without it)")
				}
			}
			obj := map[string]any{"root": p.Root, "forgotten": ids, "notes": append([]string{}, notes...)}
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

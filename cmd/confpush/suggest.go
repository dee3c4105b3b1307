package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// suggestionDistance is how far (Levenshtein) a mistyped command may be
// from the one suggested; a prefix is always suggested.
const suggestionDistance = 2

// strictSubcommands makes every command that groups subcommands (the
// root, rollout) refuse an unknown one as a usage error (exit 2) naming
// the nearest commands. cobra suggests only through its legacy argument
// check, which runs for a root without an Args validator (the root's is
// NoArgs), and a command without Run prints its help and exits 0 for any
// argument: `confpush rollout statsu` in a monitoring script was a
// silent success. A group given no subcommand prints its help (not with
// --json: one object) and fails as the root does.
func (a *app) strictSubcommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// cobra's own commands (completion, help) keep cobra's rules.
		if !c.HasSubCommands() || c.Name() == "completion" || c.Name() == "help" {
			return
		}
		c.SuggestionsMinimumDistance = suggestionDistance
		c.Args = unknownSubcommand
		if !c.Runnable() {
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				if !a.json() {
					_ = cmd.Help()
				}
				return usagef("%s needs a command: %s", cmd.CommandPath(), strings.Join(subcommandNames(cmd), ", "))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand is the Args check of a command group: no argument but
// a known subcommand (which cobra has already dispatched to).
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		for i := range s {
			s[i] = strconv.Quote(cmd.CommandPath() + " " + s[i])
		}
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg)
}

// subcommandNames lists a group's available subcommands.
func subcommandNames(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, c.Name())
		}
	}
	return out
}

// generationAsFlag is the Args check of rollback: no arguments, and a lone
// generation number (`confpush rollback 7`) gets the command it meant.
func generationAsFlag(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		if _, err := strconv.ParseInt(args[0], 10, 64); err == nil {
			return usagef("%s takes the generation as a flag: %s --to %s", cmd.Name(), cmd.CommandPath(), args[0])
		}
	}
	return cobra.NoArgs(cmd, args)
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/publish"
)

// validateFlags adds --validate and --no-validate. Syntax validation is on
// by default: an item whose name says its format (.json, .yaml/.yml,
// .toml) must parse with the agents' template helpers' parser and limits
// (internal/itemformat, through publish.Validate's Syntax option), so a
// set that publishes is one every agent can read. --validate stays
// accepted (it states the default); --no-validate wins over it, so a
// script can add it to a command line that has --validate.
func validateFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("validate", true, "check that .json, .yaml/.yml and .toml items parse (the default; see --no-validate)")
	f.Bool("no-validate", false, "do not parse .json, .yaml/.yml and .toml items (wins over --validate)")
}

// validating reports whether items are checked for syntax: --validate
// (default true) and not --no-validate.
func (a *app) validating() bool {
	return a.v.GetBool("validate") && !a.v.GetBool("no-validate")
}

// syntaxProblems lists what validation would refuse in items (nil when
// validation is off or nothing is wrong). diff reports these as warnings.
func (a *app) syntaxProblems(items map[string][]byte) []string {
	if !a.validating() {
		return nil
	}
	err := publish.Validate(items, publish.ValidateOptions{AllowEmpty: true, Syntax: true})
	if err == nil {
		return nil
	}
	if probs := problems(err); len(probs) > 0 {
		return probs
	}
	return []string{err.Error()}
}

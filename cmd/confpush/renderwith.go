package main

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/internal/offline"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/publish"
)

// renderWithFlag is publish's --render-with.
func renderWithFlag(cmd *cobra.Command) {
	cmd.Flags().StringArray("render-with", nil, "refuse the set unless every target of this agent configuration renders from it, before anything is written (repeatable; as 'confagent render')")
}

// renderWith renders items with the targets of every agent configuration
// given with --render-with, as the agents would render them as a
// generation (package offline: the agent's code, no check commands), and
// returns every failure, each naming the configuration and the target.
// The outputs go to a temporary directory, removed afterwards.
func (a *app) renderWith(cmd *cobra.Command, items map[string][]byte) error {
	paths := a.stringList(cmd, "render-with")
	if len(paths) == 0 || items == nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "confpush-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var errs []error
	for i, path := range paths {
		r, err := offline.Load(path)
		if err != nil {
			errs = append(errs, usagef("--render-with %s: %v", path, err))
			continue
		}
		res, err := r.Render(cmd.Context(), items, filepath.Join(dir, strconv.Itoa(i)), nil, false)
		if err != nil {
			errs = append(errs, usagef("--render-with %s: %v", path, err))
			continue
		}
		for _, e := range offline.Failures(res) {
			errs = append(errs, &publish.InputError{Path: "--render-with " + path, Err: e})
		}
	}
	return errlist.Join(errs...)
}

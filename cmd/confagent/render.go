package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/internal/offline"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/publish"
)

type renderFlags struct {
	from    string
	out     string
	targets []string
	check   bool
	flatten bool
}

// renderCommand is `confagent render`: the offline render of a local set.
func renderCommand(f *flags, stdout, stderr io.Writer, code *int) *cobra.Command {
	var rf renderFlags
	cmd := &cobra.Command{
		Use:   "render --from DIR",
		Short: "Render every target from a local directory of items, as if it were a generation (no ZooKeeper)",
		Long: `render reads DIR as confpush publish would (the same names, sizes and
syntax checks) and renders the configuration's targets from it as the agent
renders a generation (the same code: templates, missing_key, file and dir
targets), without ZooKeeper and never at the destinations: the outputs go
below --out (a new temporary directory by default), one sub-directory per
target, and the paths are printed. With --check every rendered target's check
command runs against its output, as before an apply. The template helpers see
generation 0, this machine's hostname and environment and the configuration's
labels. Owners, credentials and other host settings are not checked (use
check-config on the host).

Exit codes: 0 every target rendered (and passed its check), 1 a target
failed (each is named), 2 bad input (DIR, --out, --target), 3 invalid
configuration.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			*code = renderOffline(cmd.Context(), f, rf, stdout, stderr)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&rf.from, "from", "", "directory of items to render (read as confpush publish reads it)")
	fl.StringVar(&rf.out, "out", "", "directory for the outputs, new or empty (default: a new temporary directory)")
	fl.StringArrayVar(&rf.targets, "target", nil, "render only this target (repeatable)")
	fl.BoolVar(&rf.check, "check", false, "run each rendered target's check command against its output")
	fl.BoolVar(&rf.flatten, "flatten", false, "name the files of sub-directories dir_file instead of by their path dir/file (as confpush publish --flatten)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func renderOffline(ctx context.Context, f *flags, rf renderFlags, stdout, stderr io.Writer) int {
	items, err := publish.LoadDir(rf.from, publish.LoadOptions{Flatten: rf.flatten})
	vErr := publish.Validate(items, publish.ValidateOptions{AllowEmpty: true, Syntax: true})
	if err := errlist.Join(err, vErr); err != nil {
		// LoadDir's problems name the path, Validate's the item.
		fmt.Fprintf(stderr, "confagent render: %v\n", err)
		return exitUsage
	}
	r, err := offline.Load(f.config)
	if err != nil {
		printConfigErr(stderr, f.config, err)
		return exitConfig
	}
	out, err := renderDir(rf.out)
	if err != nil {
		fmt.Fprintf(stderr, "confagent render: --out: %v\n", err)
		return exitUsage
	}
	results, err := r.Render(ctx, items, out, rf.targets, rf.check)
	if err != nil {
		if rf.out == "" {
			_ = os.RemoveAll(out) // nothing was rendered into it
		}
		fmt.Fprintf(stderr, "confagent render: --target: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "rendered %d item(s) from %s as generation %d into %s (no destination was written)\n", len(items), rf.from, offline.Generation, out)
	var failed []string
	for _, res := range results {
		switch {
		case res.Err != nil:
			fmt.Fprintf(stdout, "target %s: FAILED: %v\n", res.Target, res.Err)
		default:
			fmt.Fprintf(stdout, "target %s: %s\n", res.Target, res.Path)
		}
		if res.Checked {
			if res.CheckErr != nil {
				fmt.Fprintf(stdout, "check %s: FAILED: %v\n", res.Target, res.CheckErr)
			} else {
				fmt.Fprintf(stdout, "check %s: ok\n", res.Target)
			}
		}
		if res.Err != nil || res.CheckErr != nil {
			failed = append(failed, res.Target)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "confagent render: %d target(s) failed: %s (a generation of this set would be rejected)\n", len(failed), strings.Join(failed, ", "))
		return exitError
	}
	return exitOK
}

// renderDir returns the directory for render's outputs: a new temporary
// one, or dir when it does not exist (it is created) or is empty, so that
// a render never overwrites files.
func renderDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "confagent-render-")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return dir, os.MkdirAll(dir, 0o700)
	case err != nil:
		return "", err
	case len(entries) > 0:
		return "", fmt.Errorf("%s is not empty (render writes only into a new or empty directory)", dir)
	}
	return dir, nil
}

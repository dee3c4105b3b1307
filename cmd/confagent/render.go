package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/internal/offline"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/targets"
	"github.com/zkconf/zkconf/publish"
)

type renderFlags struct {
	from    []string
	out     string
	targets []string
	check   bool
	flatten bool
}

// renderCommand is `confagent render`: the offline render of a local set.
func renderCommand(f *flags, stdout, stderr io.Writer, code *int) *cobra.Command {
	var rf renderFlags
	cmd := &cobra.Command{
		Use:   "render --from DIR | --from ROOT=DIR ...",
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

A configuration that follows several roots (roots:) takes one set per root,
--from ROOT=DIR for each root the rendered targets read: each target renders
its own root's set, and a template that reads other roots reads theirs.

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
	fl.StringArrayVar(&rf.from, "from", nil, "directory of items to render (read as confpush publish reads it); with several roots ROOT=DIR, once per root")
	fl.StringVar(&rf.out, "out", "", "directory for the outputs, new or empty (default: a new temporary directory)")
	fl.StringArrayVar(&rf.targets, "target", nil, "render only this target (repeatable)")
	fl.BoolVar(&rf.check, "check", false, "run each rendered target's check command against its output")
	fl.BoolVar(&rf.flatten, "flatten", false, "name the files of sub-directories dir_file instead of by their path dir/file (as confpush publish --flatten)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func renderOffline(ctx context.Context, f *flags, rf renderFlags, stdout, stderr io.Writer) int {
	r, cfgErr := offline.Load(f.config)
	if cfgErr == nil && r.Several() {
		return renderRoots(ctx, r, rf, stdout, stderr)
	}
	if len(rf.from) != 1 {
		fmt.Fprintf(stderr, "confagent render: --from: give one directory (--from ROOT=DIR once per root only for a configuration with several roots)\n")
		return exitUsage
	}
	items, err := publish.LoadDir(rf.from[0], publish.LoadOptions{Flatten: rf.flatten})
	vErr := publish.Validate(items, publish.ValidateOptions{AllowEmpty: true, Syntax: true})
	if err := errlist.Join(err, vErr); err != nil {
		// LoadDir's problems name the path, Validate's the item.
		fmt.Fprintf(stderr, "confagent render: %v\n", err)
		return exitUsage
	}
	if cfgErr != nil {
		printConfigErr(stderr, f.config, cfgErr)
		return exitConfig
	}
	return renderInto(rf, len(items), rf.from[0], stdout, stderr,
		func(out string) ([]targets.Rendered, error) { return r.Render(ctx, items, out, rf.targets, rf.check) })
}

// renderRoots renders a configuration that follows several roots: one
// --from ROOT=DIR per root its (selected) targets read. Every problem of
// the flags and the sets is reported at once, before anything renders.
func renderRoots(ctx context.Context, r *offline.Renderer, rf renderFlags, stdout, stderr io.Writer) int {
	var errs []error
	known := make([]string, 0, len(r.Config.Roots))
	for _, root := range r.Config.Roots {
		known = append(known, root.Name)
	}
	sets := map[string]map[string][]byte{}
	total := 0
	for _, v := range rf.from {
		name, dir, ok := strings.Cut(v, "=")
		name = strings.ToLower(name)
		switch {
		case !ok || name == "" || dir == "":
			errs = append(errs, fmt.Errorf("--from %s: the configuration follows several roots (%s): give each one's set as --from ROOT=DIR", v, strings.Join(known, ", ")))
			continue
		case !slices.Contains(known, name):
			errs = append(errs, fmt.Errorf("--from %s: no root %q in the configuration (roots: %s)", v, name, strings.Join(known, ", ")))
			continue
		case sets[name] != nil:
			errs = append(errs, fmt.Errorf("--from %s: root %s given twice", v, name))
			continue
		}
		items, err := publish.LoadDir(dir, publish.LoadOptions{Flatten: rf.flatten})
		vErr := publish.Validate(items, publish.ValidateOptions{AllowEmpty: true, Syntax: true})
		if err := errlist.Join(err, vErr); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", name, err))
			continue
		}
		sets[name] = items
		total += len(items)
	}
	var missing []string
	for _, name := range r.RootsNeeded(rf.targets) {
		if _, ok := sets[name]; !ok && !slices.ContainsFunc(rf.from, func(v string) bool { return strings.HasPrefix(strings.ToLower(v), name+"=") }) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("--from: no set of root(s) %s, which the targets rendered read: add --from ROOT=DIR for each (or render fewer with --target)", strings.Join(missing, ", ")))
	}
	if err := errlist.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "confagent render: %v\n", err)
		return exitUsage
	}
	return renderInto(rf, total, strings.Join(rf.from, " "), stdout, stderr,
		func(out string) ([]targets.Rendered, error) {
			return r.RenderRoots(ctx, sets, out, rf.targets, rf.check)
		})
}

// renderInto renders (through render) into --out and reports every
// target; from names what was read.
func renderInto(rf renderFlags, n int, from string, stdout, stderr io.Writer,
	render func(out string) ([]targets.Rendered, error)) int {
	out, err := renderDir(rf.out)
	if err != nil {
		fmt.Fprintf(stderr, "confagent render: --out: %v\n", err)
		return exitUsage
	}
	results, err := render(out)
	if err != nil {
		if rf.out == "" {
			_ = os.RemoveAll(out) // nothing was rendered into it
		}
		fmt.Fprintf(stderr, "confagent render: --target: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "rendered %d item(s) from %s as generation %d into %s (no destination was written)\n", n, from, offline.Generation, out)
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

package targets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/template"
)

// WriteForCheck writes t's output for snap below dir and returns what a
// check command examines: the file (named like the destination) or, for a
// dir target, the directory holding the files. files and output are the
// target's selection and single output from snap (the caller's, which
// know its views and account for its renders).
func (t *Target) WriteForCheck(snap Snapshot, dir string, files func() map[string][]byte, output func() ([]byte, error)) (string, error) {
	// A set missing is an error here, not a target waiting for its root
	// as in the daemon (the selection would render nothing).
	if _, err := View(snap, t.Spec.Name, t.Spec.Root, t.Spec.Roots); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if t.Spec.Kind == KindDir {
		for name, b := range files() {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				return "", err
			}
		}
		return dir, nil
	}
	b, err := output()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.Base(t.Spec.Dest))
	return path, os.WriteFile(path, b, 0o600)
}

// Rendered is one target rendered by RenderTo (agent.Rendered's fields).
type Rendered struct {
	Target   string
	Path     string
	Err      error
	Checked  bool
	CheckErr error
}

// RenderTo renders snap for the targets of ts named (every target when
// names is empty) below dir, one sub-directory per target named after it,
// write(i, sub) writing ts[i]'s output (WriteForCheck); with check, every
// target that rendered has its check command run against its output. The
// results are in ts's order; a name that is no target is an error, before
// anything is written. agent.Renderer.RenderTo documents the rest.
func RenderTo(ctx context.Context, ts []*Target, snap Snapshot, dir string, names []string, check bool, write func(i int, dir string) (string, error)) ([]Rendered, error) {
	var known []string
	for _, t := range ts {
		known = append(known, t.Spec.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("no target named %q (targets: %s)", n, strings.Join(known, ", "))
		}
	}
	var out []Rendered
	for i, t := range ts {
		if len(names) > 0 && !slices.Contains(names, t.Spec.Name) {
			continue
		}
		res := Rendered{Target: t.Spec.Name}
		res.Path, res.Err = write(i, filepath.Join(dir, t.Spec.Name))
		if res.Err != nil {
			res.Path = ""
		} else if check && t.Spec.Check != "" {
			res.Checked = true
			_, res.CheckErr = t.CheckCommand(res.Path, snap.Generation()).Run(ctx)
		}
		out = append(out, res)
	}
	return out, nil
}

// Offline is a configuration's targets compiled to render without an
// agent: what confagent render and confpush publish --render-with run.
type Offline struct {
	targets []*Target
	host    template.Host
}

// CompileOffline compiles specs, every problem reported at once; the
// templates see this host's name and environment and labels
// (HostLabels adds the host name).
func CompileOffline(specs []Spec, labels map[string]string) (*Offline, error) {
	var errs []error
	o := &Offline{host: LocalHost()}
	for _, s := range specs {
		t, err := Compile(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.targets = append(o.targets, t)
	}
	if err := errlist.Join(errs...); err != nil {
		return nil, err
	}
	o.host.Labels = HostLabels(labels)
	return o, nil
}

// RenderTo is RenderTo over o's targets, each rendering from its view of
// snap (View).
func (o *Offline) RenderTo(ctx context.Context, snap Snapshot, dir string, names []string, check bool) ([]Rendered, error) {
	return RenderTo(ctx, o.targets, snap, dir, names, check, func(i int, dir string) (string, error) {
		t := o.targets[i]
		return t.WriteForCheck(snap, dir, func() map[string][]byte {
			view, err := View(snap, t.Spec.Name, t.Spec.Root, t.Spec.Roots)
			if err != nil {
				return nil
			}
			return t.Select(view)
		}, func() ([]byte, error) {
			view, err := View(snap, t.Spec.Name, t.Spec.Root, t.Spec.Roots)
			if err != nil {
				return nil, err
			}
			return t.Output(context.Background(), view, func(ctx context.Context, s template.Snapshot) ([]byte, error) {
				return t.Template.ExecuteContext(ctx, s, o.host)
			})
		})
	})
}

package agent

import (
	"context"
	"fmt"

	"github.com/zkconf/zkconf/internal/targets"
)

// Rendered is one target rendered by RenderTo.
type Rendered struct {
	Target string
	// Path is what was written: the file (named like the destination's
	// file), or for a dir target the directory holding its files; empty
	// when the render failed.
	Path string
	// Err is why the target did not render (its output is not written).
	Err error
	// Checked is true when the target's check command ran, and CheckErr
	// its failure (a *CommandError), nil when it passed.
	Checked  bool
	CheckErr error
}

// RenderTo renders snap for the targets named (every target when names is
// empty) below dir, one sub-directory per target named after it, with the
// code Apply renders with, but never at the destinations: confagent render
// and confpush publish --render-with. With check, every target that
// rendered has its check command run against its output, as Apply runs it
// against the staged output ({{.src}} and $ZKCONF_STAGED name it). Files
// are written 0600, without the targets' mode or owner. The results are in
// configuration order; a name that is no target is an error, before
// anything is written.
func (r *Renderer) RenderTo(ctx context.Context, snap Snapshot, dir string, names []string, check bool) ([]Rendered, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := make([]*targets.Target, len(r.targets))
	for i, t := range r.targets {
		cs[i] = t.c
	}
	res, err := targets.RenderTo(ctx, cs, snap, dir, names, check, func(i int, dir string) (string, error) {
		return r.targets[i].writeForCheck(snap, dir)
	})
	if err != nil {
		return nil, err
	}
	var out []Rendered
	for _, x := range res {
		out = append(out, Rendered{Target: x.Target, Path: x.Path, Err: x.Err, Checked: x.Checked, CheckErr: publicError(x.CheckErr)})
	}
	return out, nil
}

// publicError is err with the failures package targets reports as its
// own types (*targets.CommandError, *targets.MissingRootError, returned
// as they are) converted to this package's.
func publicError(err error) error {
	switch e := err.(type) {
	case *targets.CommandError:
		return (*CommandError)(e)
	case *targets.MissingRootError:
		return (*MissingRootError)(e)
	}
	return err
}

// SetLabels makes labels what template targets' label and labels helpers
// report (HostLabels adds the host name as the daemon does).
func (r *Renderer) SetLabels(labels map[string]string) { r.setLabels(labels) }

// HostLabels returns labels plus "hostname" (this host's name) unless set:
// the labels an agent reports and its templates read.
func HostLabels(labels map[string]string) map[string]string { return targets.HostLabels(labels) }

// NewSnapshot returns a Snapshot of items as generation generation (no
// zxid, publish id or publish time): a set that is not in ZooKeeper, for
// RenderTo. The map is not copied: do not change it afterwards.
func NewSnapshot(generation int64, items map[string][]byte) Snapshot {
	return targets.NewSnapshot(generation, items)
}

// NewRootsSnapshot returns the sets of several roots (root name → items)
// as one Snapshot of generation generation, for RenderTo with a
// configuration that follows several roots: each target renders its own
// root's set (TargetSpec.Root), and a template that reads other roots
// (TargetSpec.Roots) reads theirs. A target one of whose roots has no set
// fails to render, naming the root (*MissingRootError). The maps are not
// copied: do not change them afterwards.
func NewRootsSnapshot(generation int64, roots map[string]map[string][]byte) Snapshot {
	return targets.NewRootsSnapshot(generation, roots)
}

// MissingRootError is a target's render from NewRootsSnapshot sets that
// lack one of the target's roots.
type MissingRootError struct {
	Target, Root string
}

func (e *MissingRootError) Error() string {
	return fmt.Sprintf("target %q reads root %q, and no set of that root was given", e.Target, e.Root)
}

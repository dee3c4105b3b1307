package agent

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkconf/zkconf/internal/template"
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
	var known []string
	for _, t := range r.targets {
		known = append(known, t.spec.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("no target named %q (targets: %s)", n, strings.Join(known, ", "))
		}
	}
	var out []Rendered
	for _, t := range r.targets {
		if len(names) > 0 && !slices.Contains(names, t.spec.Name) {
			continue
		}
		res := Rendered{Target: t.spec.Name}
		res.Path, res.Err = t.writeForCheck(snap, filepath.Join(dir, t.spec.Name))
		if res.Err != nil {
			res.Path = ""
		} else if check && t.spec.Check != "" {
			res.Checked = true
			_, res.CheckErr = command{kind: "check", target: t.spec.Name, script: t.spec.Check, staged: res.Path,
				dest: t.spec.Dest, generation: snap.Generation(), timeout: t.spec.Timeout}.run(ctx)
		}
		out = append(out, res)
	}
	return out, nil
}

// SetLabels makes labels what template targets' label and labels helpers
// report (HostLabels adds the host name as the daemon does).
func (r *Renderer) SetLabels(labels map[string]string) { r.setLabels(labels) }

// HostLabels returns labels plus "hostname" (this host's name) unless set:
// the labels an agent reports and its templates read.
func HostLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	if _, ok := out[HostnameLabel]; !ok {
		if h, err := os.Hostname(); err == nil {
			out[HostnameLabel] = h
		}
	}
	return out
}

// NewSnapshot returns a Snapshot of items as generation generation (no
// zxid, publish id or publish time): a set that is not in ZooKeeper, for
// RenderTo. The map is not copied: do not change it afterwards.
func NewSnapshot(generation int64, items map[string][]byte) Snapshot {
	return staticSnapshot{gen: generation, items: items}
}

type staticSnapshot struct {
	gen   int64
	items map[string][]byte
}

func (s staticSnapshot) Generation() int64 { return s.gen }
func (s staticSnapshot) Names() []string   { return slices.Collect(maps.Keys(s.items)) }
func (s staticSnapshot) Get(name string) ([]byte, bool) {
	b, ok := s.items[name]
	return b, ok
}
func (s staticSnapshot) Zxid() int64            { return 0 }
func (s staticSnapshot) PublishID() string      { return "" }
func (s staticSnapshot) PublishedAt() time.Time { return time.Time{} }

// NewRootsSnapshot returns the sets of several roots (root name → items)
// as one Snapshot of generation generation, for RenderTo with a
// configuration that follows several roots: each target renders its own
// root's set (TargetSpec.Root), and a template that reads other roots
// (TargetSpec.Roots) reads theirs. A target one of whose roots has no set
// fails to render, naming the root (*MissingRootError). The maps are not
// copied: do not change them afterwards.
func NewRootsSnapshot(generation int64, roots map[string]map[string][]byte) Snapshot {
	s := staticRoots{gen: generation, roots: make(map[string]staticSnapshot, len(roots))}
	for name, items := range roots {
		s.roots[name] = staticSnapshot{gen: generation, items: items}
	}
	return s
}

// MissingRootError is a target's render from NewRootsSnapshot sets that
// lack one of the target's roots.
type MissingRootError struct {
	Target, Root string
}

func (e *MissingRootError) Error() string {
	return fmt.Sprintf("target %q reads root %q, and no set of that root was given", e.Target, e.Root)
}

// staticRoots is NewRootsSnapshot's: it reads no root itself, every
// target reads its view (viewFor).
type staticRoots struct {
	gen   int64
	roots map[string]staticSnapshot
}

func (s staticRoots) Generation() int64         { return s.gen }
func (s staticRoots) Names() []string           { return nil }
func (s staticRoots) Get(string) ([]byte, bool) { return nil, false }
func (s staticRoots) Zxid() int64               { return 0 }
func (s staticRoots) PublishID() string         { return "" }
func (s staticRoots) PublishedAt() time.Time    { return time.Time{} }

// Root returns the set of a root the target lists.
func (v staticRootsView) Root(name string) (template.Snapshot, bool) {
	o, ok := v.others[name]
	return o, ok
}

// staticRootsView is what a template that reads several roots renders of
// NewRootsSnapshot's sets: its own root's, and the others it lists.
type staticRootsView struct {
	staticSnapshot
	others map[string]template.Snapshot
}

// view returns what target spec renders of s.
func (s staticRoots) view(spec TargetSpec) (Snapshot, error) {
	own, ok := s.roots[spec.Root]
	if !ok {
		return nil, &MissingRootError{Target: spec.Name, Root: spec.Root}
	}
	if len(spec.Roots) == 0 {
		return own, nil
	}
	v := staticRootsView{staticSnapshot: own, others: make(map[string]template.Snapshot, len(spec.Roots))}
	for _, r := range spec.Roots {
		o, ok := s.roots[r]
		if !ok {
			return nil, &MissingRootError{Target: spec.Name, Root: r}
		}
		v.others[r] = o
	}
	return v, nil
}

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

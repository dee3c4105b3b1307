// Package targets is what rendering a target needs apart from applying
// it: the target spec, its compiled template (zkconf's Go templates or
// confd's), the selection of a dir target's items, the static snapshots an
// offline render reads, the write of a target's output for a check, and
// the check and reload command runner.
//
// Package agent wraps it (its Renderer applies, watches and repairs;
// its TargetSpec, CommandError, Snapshot and Rendered stay its own), and
// cmd/internal/offline renders with it alone, so that confpush publish
// --render-with renders exactly as the agent does without linking the
// agent's daemon, metrics and cache.
package targets

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zkconf/zkconf/internal/template"
)

// Target kinds.
const (
	KindFile     = "file"     // one item to one file
	KindDir      = "dir"      // items (all, or those matching globs) to a directory, swapped as a whole
	KindTemplate = "template" // a Go text/template rendered from the snapshot to one file
)

// HostnameLabel is the label an agent sets to its host name unless the
// configuration sets it (HostLabels).
const HostnameLabel = "hostname"

// Spec is one output, as configured: agent.TargetSpec's fields (see its
// documentation), converted field by field.
type Spec struct {
	Name, Kind, Dest, Item string
	Items                  []string
	Prefix                 string
	DirMode                os.FileMode
	Template, TemplatePath string
	MissingKey             string
	Mode                   os.FileMode
	UID, GID               int
	Check, Reload          string
	Timeout                time.Duration
	FollowSymlink          bool
	Grace                  time.Duration
	RenderTimeout          time.Duration
	RenderSteps            int64
	Syntax                 string
	Confd                  Confd
	Root                   string
	Roots                  []string
}

// Confd is agent.ConfdResource: which keys a confd template sees.
type Confd struct {
	Root, Prefix string
	Keys         []string
}

// TemplateRenderer is a compiled template target: zkconf's templates
// (*template.Template) and confd's.
type TemplateRenderer interface {
	ExecuteContext(ctx context.Context, snap template.Snapshot, host template.Host) ([]byte, error)
	// ExecuteTo is ExecuteContext writing the output to w as it is made
	// (template.Template.ExecuteTo): an error of w's own is returned as
	// it is.
	ExecuteTo(ctx context.Context, w io.Writer, snap template.Snapshot, host template.Host) error
	Limits() template.Limits
}

// Target is a Spec compiled for rendering.
type Target struct {
	Spec Spec
	// Template is a template target's compiled template, nil for the
	// other kinds.
	Template TemplateRenderer
}

// Compile compiles spec; the error names the target.
func Compile(spec Spec) (*Target, error) {
	t := &Target{Spec: spec}
	switch spec.Kind {
	case KindTemplate:
		if spec.Syntax != "" && spec.Syntax != SyntaxGo {
			tm, err := compileSyntax(spec)
			if err != nil {
				return nil, fmt.Errorf("target %q: %w", spec.Name, err)
			}
			t.Template = tm
			break
		}
		tm, err := template.ParseWith(spec.Name, spec.Template, template.Options{
			Limits:     template.Limits{Timeout: spec.RenderTimeout, MaxSteps: spec.RenderSteps},
			MissingKey: template.MissingKey(spec.MissingKey),
		})
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", spec.Name, err)
		}
		t.Template = tm
	case KindDir, KindFile:
	default:
		return nil, fmt.Errorf("target %q: unknown type %q", spec.Name, spec.Kind)
	}
	return t, nil
}

// Select returns the files a dir target renders from view (the target's
// view of the snapshot, View): the items below its Prefix, by their path
// below it, that its globs select.
func (t *Target) Select(view template.Snapshot) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range view.Names() {
		rel, ok := strings.CutPrefix(name, t.Spec.Prefix)
		if !ok {
			continue
		}
		if len(t.Spec.Items) > 0 && !slices.ContainsFunc(t.Spec.Items, func(p string) bool {
			ok, _ := path.Match(p, rel)
			return ok
		}) {
			continue
		}
		b, _ := view.Get(name)
		out[rel] = b
	}
	return out
}

// Output renders a file or template target's content from view (the
// target's view of the snapshot), exec running the template: the
// caller's accounting goes around it. ctx interrupts a template's render
// (template.ErrInterrupted).
func (t *Target) Output(ctx context.Context, view template.Snapshot, exec func(context.Context, template.Snapshot) ([]byte, error)) ([]byte, error) {
	switch t.Spec.Kind {
	case KindFile:
		b, ok := view.Get(t.Spec.Item)
		if !ok {
			return nil, fmt.Errorf("item %q is not in generation %d", t.Spec.Item, view.Generation())
		}
		return b, nil
	case KindTemplate:
		return exec(ctx, view)
	}
	return nil, fmt.Errorf("target %q renders no single file", t.Spec.Name)
}

// LocalHost returns the facts template targets see about this host: its
// name and its environment. Labels are the caller's (HostLabels).
func LocalHost() template.Host {
	h, _ := os.Hostname()
	return template.Host{Hostname: h, LookupEnv: os.LookupEnv}
}

// HostLabels returns labels plus HostnameLabel (this host's name) unless
// set: the labels an agent reports and its templates read.
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

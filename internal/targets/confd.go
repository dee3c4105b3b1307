package targets

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	texttemplate "text/template"

	"github.com/zkconf/zkconf/internal/confd"
	"github.com/zkconf/zkconf/internal/template"
)

// Template syntaxes (Spec.Syntax; agent.SyntaxGo and agent.SyntaxConfd
// document them).
const (
	SyntaxGo    = "go"
	SyntaxConfd = "confd"
)

// compileSyntax compiles a template target of a syntax other than zkconf's.
func compileSyntax(spec Spec) (TemplateRenderer, error) {
	if spec.Syntax != SyntaxConfd {
		return nil, fmt.Errorf("unknown template syntax %q: want %s or %s", spec.Syntax, SyntaxGo, SyntaxConfd)
	}
	// confd names a template after its src file: error messages say
	// "template: nginx.conf.tmpl:3:9: ..." under both.
	name := spec.Name
	if spec.TemplatePath != "" {
		name = filepath.Base(spec.TemplatePath)
	}
	t, err := confd.Parse(name, spec.Template, confd.FuncMap(confd.NewStore(nil), confd.Host{}))
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	limits := template.Limits{Timeout: spec.RenderTimeout, MaxSteps: spec.RenderSteps}
	return &confdTemplate{
		res:  confd.Resource{Prefix: spec.Confd.Prefix, Keys: slices.Clone(spec.Confd.Keys)},
		root: spec.Confd.Root,
		tmpl: template.NewForeign(t, limits, confd.SafeError),
	}, nil
}

// confdTemplate renders a confd template: each render builds the key
// tree from the snapshot, takes the resource's view of it, and executes
// the template with confd's functions over that view under the render
// budget.
type confdTemplate struct {
	res  confd.Resource
	root string
	tmpl *template.Foreign
}

func (c *confdTemplate) Limits() template.Limits { return c.tmpl.Limits() }

// ExecuteContext renders the template from snap; host gives getenv its
// variables (fileExists asks the file system: confd.StatExists).
func (c *confdTemplate) ExecuteContext(ctx context.Context, snap template.Snapshot, host template.Host) ([]byte, error) {
	funcs, err := c.funcs(snap, host)
	if err != nil {
		return nil, err
	}
	return c.tmpl.ExecuteContext(ctx, funcs, nil)
}

// ExecuteTo is ExecuteContext writing the output to w as it is made.
func (c *confdTemplate) ExecuteTo(ctx context.Context, w io.Writer, snap template.Snapshot, host template.Host) error {
	funcs, err := c.funcs(snap, host)
	if err != nil {
		return err
	}
	return c.tmpl.ExecuteTo(ctx, w, funcs, nil)
}

// funcs returns confd's functions over the resource's view of snap.
func (c *confdTemplate) funcs(snap template.Snapshot, host template.Host) (texttemplate.FuncMap, error) {
	view, err := c.res.View("", keyTree(snap, c.root))
	if err != nil {
		// The message names the resource's key and a path under the
		// root: configuration, not content.
		return nil, &template.Error{Template: c.tmpl.Name(), Msg: "template " + c.tmpl.Name() + ": " + err.Error(), Err: err}
	}
	h := confd.Host{FileExists: confd.StatExists}
	if host.LookupEnv != nil {
		h.Getenv = func(k string) string { v, _ := host.LookupEnv(k); return v }
	}
	return confd.FuncMap(confd.NewStore(view), h), nil
}

// keyTree returns snap as confd's ZooKeeper backend sees the root at
// path root: every item at root + "/" + its name, with its content as
// the value. An item name with slashes (a path in a config tree) is a
// nested key: "database/host" is root + "/database/host", and
// "/database" a directory that ls and lsdir list. Names are taken as they
// are, never cleaned, so two items never share a key.
func keyTree(snap template.Snapshot, root string) map[string]string {
	base := strings.TrimSuffix(root, "/")
	names := snap.Names()
	tree := make(map[string]string, len(names))
	for _, name := range names {
		b, _ := snap.Get(name)
		tree[base+"/"+name] = string(b)
	}
	return tree
}

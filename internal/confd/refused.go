package confd

import (
	"fmt"
	"sort"
	"text/template"
	"text/template/parse"

	"github.com/zkconf/zkconf/internal/errlist"
)

// A confd function zkconf refuses makes the output depend on something
// other than the generation and the host: the file would change without a
// publish, differ from host to host for the same facts, and be rewritten,
// with its reload, at resyncs, drift repairs and restarts. docs/confagent.md
// ("confd templates") gives the decision and its reasons.
const (
	refusedClock = "the clock changes the output at every render, so every resync, drift repair and restart " +
		"would rewrite the file and run its reload; zkconf alternative: publish the value as a key " +
		"(a release date, a version) and read it with getv"
	refusedDNS = "a DNS answer changes the output without a publish (nothing re-renders then) and can differ " +
		"between hosts and retries; zkconf alternative: resolve when publishing and publish the addresses " +
		"as keys (one per backend, e.g. /upstream/NAME), read with gets or getvs"
)

// refused maps each function confd has and zkconf refuses to the reason
// and the alternative.
var refused = map[string]string{
	"datetime":   refusedClock,
	"lookupIP":   refusedDNS,
	"lookupIPV4": refusedDNS,
	"lookupIPV6": refusedDNS,
	"lookupSRV":  refusedDNS,
}

// Refused returns the names of confd's functions that zkconf refuses,
// sorted: datetime and the DNS lookups.
func Refused() []string {
	names := make([]string, 0, len(refused))
	for name := range refused {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// RefusedError is a template's use of a refused function.
type RefusedError struct {
	// Where is text/template's location of the use: "name:line:col".
	Where string
	// Func is the function.
	Func string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %s is not available in zkconf: %s", e.Where, e.Func, refused[e.Func])
}

// refusedStub stands for a refused function in the FuncMap, so that a
// template naming it parses and Parse can report every use at once; called
// (a template parsed without Parse), it fails.
func refusedStub(name string) func(...interface{}) (interface{}, error) {
	return func(...interface{}) (interface{}, error) {
		return nil, fmt.Errorf("%s is not available in zkconf: %s", name, refused[name])
	}
}

// Parse parses a confd template as confd does (template.New(name).
// Funcs(funcs).Parse(text), name being the base name of the resource's
// src) and fails, naming every use with its line and column, when the
// template calls a refused function. Execute the result with nil data, as
// confd does: a bare {{.}} or {{.key}} prints "<no value>".
func Parse(name, text string, funcs template.FuncMap) (*template.Template, error) {
	t, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, err
	}
	var problems []error
	for _, tt := range sortedTemplates(t) {
		if tt.Tree == nil {
			continue
		}
		walk(tt.Tree.Root, func(id *parse.IdentifierNode) {
			if _, ok := refused[id.Ident]; ok {
				where, _ := tt.Tree.ErrorContext(id)
				problems = append(problems, &RefusedError{Where: where, Func: id.Ident})
			}
		})
	}
	if err := errlist.Join(problems...); err != nil {
		return nil, err
	}
	return t, nil
}

func sortedTemplates(t *template.Template) []*template.Template {
	ts := t.Templates()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name() < ts[j].Name() })
	return ts
}

// walk calls f on every function identifier under n, in template order.
func walk(n parse.Node, f func(*parse.IdentifierNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		walk(n.Pipe, f)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, f)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walk(a, f)
		}
	case *parse.ChainNode:
		walk(n.Node, f)
	case *parse.IfNode:
		walkBranch(&n.BranchNode, f)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, f)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, f)
	case *parse.TemplateNode:
		walk(n.Pipe, f)
	case *parse.IdentifierNode:
		f(n)
	}
}

func walkBranch(b *parse.BranchNode, f func(*parse.IdentifierNode)) {
	walk(b.Pipe, f)
	walk(b.List, f)
	walk(b.ElseList, f)
}

package template

import (
	"fmt"
	texttemplate "text/template"
	"text/template/parse"
)

// MissingKey says what a template does with a map key the map does not
// have ({{ $pool.hash }} on a pool without "hash"), per target (the
// missing_key key of a template target). It concerns keys of maps only:
// a missing item is always an error (ErrMissingItem; test with has).
type MissingKey string

// The MissingKey choices, as consul-template offers them.
const (
	// MissingKeyError fails the render: `map has no entry for key "hash"`
	// (the default: a typo in a key name is caught before the file is
	// written, on the first host that renders it, instead of rendering
	// a file without the value on every host).
	MissingKeyError MissingKey = "error"
	// MissingKeyZero makes a missing key no value: false in if and with,
	// replaced by default ({{ $pool.port | default 80 }}), empty for
	// len, and printed as nothing (text/template, and consul-template,
	// would print "<no value>"). A field of no value is still an error
	// ({{ $pool.hash.algo }} without "hash": "nil pointer evaluating"):
	// test the parent with with or if.
	MissingKeyZero MissingKey = "zero"
)

// ParseMissingKey parses a missing_key value; "" is MissingKeyError.
func ParseMissingKey(s string) (MissingKey, error) {
	switch MissingKey(s) {
	case "", MissingKeyError:
		return MissingKeyError, nil
	case MissingKeyZero:
		return MissingKeyZero, nil
	}
	return "", fmt.Errorf("unknown value %q: want error (the default) or zero", s)
}

// Options are the settings of ParseWith.
type Options struct {
	Limits     Limits
	MissingKey MissingKey
}

// ParseWith is Parse with opts: the limits, and what a missing map key
// does (MissingKeyError when empty).
func ParseWith(name, text string, opts Options) (*Template, error) {
	mk, err := ParseMissingKey(string(opts.MissingKey))
	if err != nil {
		return nil, fmt.Errorf("missing_key: %w", err)
	}
	t, err := ParseWithLimits(name, text, opts.Limits)
	if err != nil {
		return nil, err
	}
	if mk == MissingKeyZero {
		t.zeroMissingKeys()
	}
	return t, nil
}

// printMissing is the helper appended to every printing action under
// MissingKeyZero. It is added after parsing, so a template that names it
// does not parse (function not defined): only the rewrite calls it.
const printMissing = "zkconfMissingAsEmpty"

// zeroMissingKeys switches t to missingkey=zero and makes every action
// that prints ({{ pipeline }}, not an assignment) print no value as
// nothing: text/template prints a missing key of a map of interface
// values as "<no value>", which must not land in a configuration file.
// The pipeline's last command gets one more: printMissing, which passes
// every value through and turns no value into "".
func (t *Template) zeroMissingKeys() {
	t.tmpl.Option("missingkey=zero")
	t.tmpl.Funcs(texttemplate.FuncMap{printMissing: func(v any) any {
		if v == nil {
			return ""
		}
		return v
	}})
	var walk func(n parse.Node, tr *parse.Tree)
	walk = func(n parse.Node, tr *parse.Tree) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c, tr)
				}
			}
		case *parse.ActionNode:
			if n.Pipe != nil && len(n.Pipe.Decl) == 0 {
				id := parse.NewIdentifier(printMissing).SetTree(tr).SetPos(n.Pos)
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
			}
		case *parse.IfNode:
			walk(n.List, tr)
			walk(n.ElseList, tr)
		case *parse.RangeNode:
			walk(n.List, tr)
			walk(n.ElseList, tr)
		case *parse.WithNode:
			walk(n.List, tr)
			walk(n.ElseList, tr)
		}
	}
	for _, tt := range t.tmpl.Templates() {
		if tt.Tree != nil {
			walk(tt.Tree.Root, tt.Tree)
		}
	}
}

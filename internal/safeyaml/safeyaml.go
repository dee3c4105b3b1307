// Package safeyaml decodes untrusted YAML in time and memory linear in its
// size.
//
// go.yaml.in/yaml/v3 (gopkg.in/yaml.v3 under its maintained path) checks
// mapping keys for duplicates pairwise when it decodes into Go values: quadratic in the number of keys, and it builds an
// error string per duplicate pair (a 5 KB item of repeated keys allocates
// over 150 MiB; found by fuzzing). Its parser, which builds a yaml.Node
// tree, is linear. So this package parses to nodes and converts them
// itself: duplicates are found with a map, aliases count against an
// expansion budget (no "billion laughs"), and nesting is bounded.
package safeyaml

import (
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// Errors callers branch on.
var (
	ErrTooDeep       = errors.New("YAML nested too deeply")
	ErrTooManyValues = errors.New("YAML expands to too many values (aliases)")
	ErrDuplicateKey  = errors.New("YAML mapping has a duplicate key")
)

// Limits bound a decode.
type Limits struct {
	// MaxDepth bounds nesting of mappings and sequences.
	MaxDepth int
	// MaxValues bounds the values produced, counting every alias
	// expansion again.
	MaxValues int
}

// LimitsFor bounds the decode of data: maxDepth levels, and values
// proportional to its size. Every value takes at least a byte or two of
// text unless an alias repeats it, so this only stops alias bombs, whose
// expansion is exponential in their size.
func LimitsFor(data []byte, maxDepth int) Limits {
	return Limits{MaxDepth: maxDepth, MaxValues: 16*len(data) + 10000}
}

// SyntaxError is a parse error; it carries the line, never the content.
type SyntaxError struct {
	Line int
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("invalid YAML at line %d", e.Line)
	}
	return "invalid YAML"
}

// Decode parses data (one document; an empty input is nil) into nil, bool,
// int, float64, string, time values, []any and map[string]any (non-string
// keys are formatted as strings).
func Decode(data []byte, lim Limits) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(err)
	}
	if doc.Kind == 0 {
		return nil, nil
	}
	d := &decoder{lim: lim}
	return d.value(&doc, 0)
}

// DecodeNode is Decode for an already parsed document, for callers that
// parse a stream of several documents themselves.
func DecodeNode(n *yaml.Node, lim Limits) (any, error) {
	d := &decoder{lim: lim}
	return d.value(n, 0)
}

type decoder struct {
	lim    Limits
	values int
}

func (d *decoder) value(n *yaml.Node, depth int) (any, error) {
	if depth > d.lim.MaxDepth {
		return nil, ErrTooDeep
	}
	if d.values++; d.values > d.lim.MaxValues {
		return nil, ErrTooManyValues
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], depth)
	case yaml.AliasNode:
		return d.value(n.Alias, depth+1)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, &SyntaxError{Line: n.Line}
		}
		return v, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := d.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		explicit := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if err := d.merge(out, explicit, vn, depth); err != nil {
					return nil, err
				}
				continue
			}
			key, err := d.key(k, depth)
			if err != nil {
				return nil, err
			}
			if explicit[key] {
				return nil, fmt.Errorf("%w at line %d", ErrDuplicateKey, k.Line)
			}
			v, err := d.value(vn, depth+1)
			if err != nil {
				return nil, err
			}
			out[key], explicit[key] = v, true
		}
		return out, nil
	}
	return nil, &SyntaxError{Line: n.Line}
}

// key formats a mapping key as a string.
func (d *decoder) key(k *yaml.Node, depth int) (string, error) {
	if k.Kind == yaml.ScalarNode {
		return k.Value, nil
	}
	v, err := d.value(k, depth+1)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

// merge applies a "<<" merge key: the referenced mapping(s) supply keys
// the mapping does not set itself; earlier sources win over later ones.
func (d *decoder) merge(out map[string]any, explicit map[string]bool, vn *yaml.Node, depth int) error {
	var sources []*yaml.Node
	target := vn
	if target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	switch target.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{vn}
	case yaml.SequenceNode:
		sources = target.Content
	default:
		return &SyntaxError{Line: vn.Line}
	}
	for _, s := range sources {
		v, err := d.value(s, depth+1)
		if err != nil {
			return err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return &SyntaxError{Line: s.Line}
		}
		for k, e := range m {
			if _, set := out[k]; !set && !explicit[k] {
				out[k] = e
			}
		}
	}
	return nil
}

// syntaxError keeps only the line of a yaml.v3 error: its messages can
// quote content, which may be secret.
func syntaxError(err error) error {
	var line int
	if _, serr := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); serr == nil {
		return &SyntaxError{Line: line}
	}
	return &SyntaxError{}
}

// Package labelsel parses and evaluates label selectors, the way Kubernetes
// users write them, for canary rollouts: a selector is a comma-separated
// list of requirements, all of which must hold.
//
//	zone=a          zone==a        the label is set to the value
//	zone!=b                        the label is not set, or set to another value
//	zone in (a,b)   zone notin (a,b)
//	zone            !zone          the label is set / not set
//
// Keys and values follow the Kubernetes label syntax (CheckKey, CheckValue);
// the agent's configuration is validated with the same rules, so a selector
// can name every label an agent can carry. Parsing reports every problem at
// once. The empty selector selects everything.
package labelsel

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Label syntax, as Kubernetes defines it: a key is an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters; a value
// is empty or a name. Compiled at first use: initialisation runs at
// every confpush start.
var (
	labelName   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`) })
	labelPrefix = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
)

// CheckKey reports why k is not a valid label key.
func CheckKey(k string) error {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if len(prefix) > 253 || !labelPrefix().MatchString(prefix) {
			return fmt.Errorf("key %q: the prefix before '/' must be a DNS subdomain (lowercase, at most 253 characters)", k)
		}
		name = rest
	}
	if len(name) > 63 || !labelName().MatchString(name) {
		return fmt.Errorf("key %q: the name must be 1-63 characters [A-Za-z0-9-_.], starting and ending alphanumeric", k)
	}
	return nil
}

// CheckValue reports why v is not a valid value of label k.
func CheckValue(k, v string) error {
	if v != "" && (len(v) > 63 || !labelName().MatchString(v)) {
		return fmt.Errorf("value of %q: %q must be empty or 1-63 characters [A-Za-z0-9-_.], starting and ending alphanumeric", k, v)
	}
	return nil
}

// Op is a requirement's operator.
type Op string

// The operators of a requirement.
const (
	OpEquals    Op = "="
	OpNotEquals Op = "!="
	OpIn        Op = "in"
	OpNotIn     Op = "notin"
	OpExists    Op = "exists"
	OpNotExists Op = "!"
)

// Requirement is one condition on one label.
type Requirement struct {
	Key    string
	Op     Op
	Values []string // one for = and !=, one or more for in and notin
}

// Matches reports whether labels satisfy r.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case OpEquals:
		return ok && v == r.Values[0]
	case OpNotEquals:
		return !ok || v != r.Values[0]
	case OpIn:
		return ok && slices.Contains(r.Values, v)
	case OpNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case OpExists:
		return ok
	case OpNotExists:
		return !ok
	}
	return false
}

// String is the requirement in selector syntax.
func (r Requirement) String() string {
	switch r.Op {
	case OpExists:
		return r.Key
	case OpNotExists:
		return "!" + r.Key
	case OpIn, OpNotIn:
		return r.Key + " " + string(r.Op) + " (" + strings.Join(r.Values, ",") + ")"
	}
	return r.Key + string(r.Op) + r.Values[0]
}

// Selector is a parsed selector: every requirement must hold.
type Selector []Requirement

// Matches reports whether labels satisfy every requirement (the empty
// selector matches everything).
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// String is the selector in canonical syntax (requirements in the order
// given, "=" for equality, no spaces but around in/notin).
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// MaxLen bounds a selector's text: it travels in every root manifest of a
// rollout.
const MaxLen = 1024

// Parse parses a selector, reporting every problem at once.
func Parse(text string) (Selector, error) {
	if len(text) > MaxLen {
		return nil, fmt.Errorf("selector is %d bytes, more than %d", len(text), MaxLen)
	}
	var sel Selector
	var errs []error
	for _, part := range splitTop(text) {
		r, err := parseRequirement(strings.TrimSpace(part))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sel = append(sel, r)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("selector %q: %w", text, errors.Join(errs...))
	}
	return sel, nil
}

// splitTop splits at commas outside parentheses. The empty text has no
// parts.
func splitTop(text string) []string {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, text[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, text[start:])
}

func parseRequirement(s string) (Requirement, error) {
	if s == "" {
		return Requirement{}, errors.New("empty requirement (two commas in a row, or a trailing comma)")
	}
	if key, ok := strings.CutPrefix(s, "!"); ok {
		key = strings.TrimSpace(key)
		return Requirement{Key: key, Op: OpNotExists}, CheckKey(key)
	}
	for _, op := range []struct {
		text string
		op   Op
	}{{"!=", OpNotEquals}, {"==", OpEquals}, {"=", OpEquals}} {
		if k, v, ok := strings.Cut(s, op.text); ok {
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			return Requirement{Key: k, Op: op.op, Values: []string{v}}, errors.Join(CheckKey(k), CheckValue(k, v))
		}
	}
	if i := strings.IndexByte(s, '('); i >= 0 {
		head := strings.Fields(s[:i])
		if len(head) != 2 || (head[1] != "in" && head[1] != "notin") {
			return Requirement{}, fmt.Errorf("%q: want KEY in (V1,V2) or KEY notin (V1,V2)", s)
		}
		body, ok := strings.CutSuffix(strings.TrimSpace(s[i+1:]), ")")
		if !ok || strings.ContainsAny(body, "()") {
			return Requirement{}, fmt.Errorf("%q: unbalanced parentheses", s)
		}
		r := Requirement{Key: head[0], Op: Op(head[1])}
		errs := []error{CheckKey(r.Key)}
		for _, v := range strings.Split(body, ",") {
			v = strings.TrimSpace(v)
			errs = append(errs, CheckValue(r.Key, v))
			if !slices.Contains(r.Values, v) {
				r.Values = append(r.Values, v)
			}
		}
		return r, errors.Join(errs...)
	}
	if strings.ContainsAny(s, " \t") {
		return Requirement{}, fmt.Errorf("%q: want KEY=VALUE, KEY!=VALUE, KEY in (...), KEY notin (...), KEY or !KEY", s)
	}
	return Requirement{Key: s, Op: OpExists}, CheckKey(s)
}

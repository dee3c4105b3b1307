// Package jsonschema validates JSON documents against the subset of JSON
// Schema (draft 2020-12) that zkconf's output schemas (docs/schema) use:
// type, properties, required, additionalProperties, items, enum, const,
// oneOf, $ref (to a $defs entry of the same file, or to another file of
// the set, with an optional JSON pointer) and format "date-time".
// Annotations ($schema, $id, title, description, $comment) are accepted
// and ignored. Any other keyword is refused when the set is loaded: a
// schema cannot claim more than is checked.
//
// It exists for the tests that hold confpush's --json output to its
// documented schemas; no JSON Schema validator is among zkconf's
// dependencies, and this subset is about 250 lines.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Set is a set of schema files that may refer to one another by file name.
type Set struct {
	files map[string]any
}

// isKeyword reports whether the subset checks keyword k.
func isKeyword(k string) bool {
	switch k {
	case "type", "properties", "required", "additionalProperties", "items", "enum", "const", "oneOf", "$ref", "$defs", "format":
		return true
	}
	return false
}

// isAnnotation reports whether k is an annotation: accepted, ignored.
func isAnnotation(k string) bool {
	switch k {
	case "$schema", "$id", "title", "description", "$comment":
		return true
	}
	return false
}

// isType reports whether t is a JSON Schema type name.
func isType(t string) bool {
	switch t {
	case "object", "array", "string", "integer", "number", "boolean", "null":
		return true
	}
	return false
}

// Load reads every *.json file at the top of fsys as a schema, checks
// that each uses only the subset's keywords and that every $ref
// resolves, and returns the set.
func Load(fsys fs.FS) (*Set, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	s := &Set{files: map[string]any{}}
	var errs []error
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		doc, err := decode(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		s.files[name] = doc
	}
	for _, name := range names {
		if doc, ok := s.files[name]; ok {
			errs = append(errs, s.check(name, doc, "")...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Names lists the schema files of the set.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.files))
	for n := range s.files {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// check reports the unknown keywords, malformed values and unresolved
// references of schema sch (in file, at pointer at).
func (s *Set) check(file string, sch any, at string) []error {
	obj, ok := sch.(map[string]any)
	if !ok {
		if _, isBool := sch.(bool); isBool {
			return nil
		}
		return []error{fmt.Errorf("%s#%s: a schema must be an object or a boolean", file, at)}
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s#%s: %s", file, at, fmt.Sprintf(format, args...)))
	}
	for k, v := range obj {
		switch {
		case isAnnotation(k):
		case !isKeyword(k):
			bad("keyword %q is not in the subset this validator checks", k)
		case k == "type":
			for _, t := range typeList(v) {
				if !isType(t) {
					bad("unknown type %q", t)
				}
			}
			if len(typeList(v)) == 0 {
				bad("type must be a type name or a list of them")
			}
		case k == "properties" || k == "$defs":
			m, ok := v.(map[string]any)
			if !ok {
				bad("%s must be an object", k)
				continue
			}
			for name, sub := range m {
				errs = append(errs, s.check(file, sub, at+"/"+k+"/"+escape(name))...)
			}
		case k == "items" || k == "additionalProperties":
			errs = append(errs, s.check(file, v, at+"/"+k)...)
		case k == "oneOf":
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				bad("oneOf must be a non-empty array")
				continue
			}
			for i, sub := range l {
				errs = append(errs, s.check(file, sub, fmt.Sprintf("%s/oneOf/%d", at, i))...)
			}
		case k == "required":
			l, ok := v.([]any)
			for _, x := range l {
				if _, isStr := x.(string); !isStr {
					ok = false
				}
			}
			if !ok {
				bad("required must be an array of property names")
			}
		case k == "enum":
			if _, ok := v.([]any); !ok {
				bad("enum must be an array")
			}
		case k == "format":
			if v != "date-time" {
				bad("format %v is not checked (only date-time)", v)
			}
		case k == "$ref":
			ref, _ := v.(string)
			if _, _, err := s.resolve(file, ref); err != nil {
				bad("%v", err)
			}
		}
	}
	return errs
}

func typeList(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		if len(out) == len(t) {
			return out
		}
	}
	return nil
}

// resolve follows ref from file: "other.json", "other.json#/$defs/x" or
// "#/$defs/x".
func (s *Set) resolve(file, ref string) (string, any, error) {
	target, pointer, _ := strings.Cut(ref, "#")
	if target == "" {
		target = file
	}
	target = path.Clean(target)
	doc, ok := s.files[target]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q: no schema file %s", ref, target)
	}
	cur := doc
	if pointer != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				return "", nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
			if cur, ok = m[unescape(tok)]; !ok {
				return "", nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
		}
	}
	return target, cur, nil
}

func escape(s string) string   { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
func unescape(s string) string { return strings.NewReplacer("~1", "/", "~0", "~").Replace(s) }

// Validate checks the JSON document doc against the schema file name and
// returns every violation, each with the JSON pointer of the value at
// fault.
func (s *Set) Validate(name string, doc []byte) error {
	sch, ok := s.files[name]
	if !ok {
		return fmt.Errorf("no schema %s", name)
	}
	v, err := decode(doc)
	if err != nil {
		return fmt.Errorf("not one JSON value: %w", err)
	}
	return errors.Join(s.validate(name, sch, v, "")...)
}

func (s *Set) validate(file string, sch, v any, at string) []error {
	if b, ok := sch.(bool); ok {
		if b {
			return nil
		}
		return []error{fmt.Errorf("%s: not allowed here", where(at))}
	}
	obj := sch.(map[string]any)
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where(at), fmt.Sprintf(format, args...)))
	}
	if ref, ok := obj["$ref"].(string); ok {
		f, target, err := s.resolve(file, ref)
		if err != nil {
			return []error{err}
		}
		errs = append(errs, s.validate(f, target, v, at)...)
	}
	if t, ok := obj["type"]; ok {
		if tl := typeList(t); !slices.Contains(tl, typeOf(v)) && !(typeOf(v) == "integer" && slices.Contains(tl, "number")) {
			bad("%s, want %s", typeOf(v), strings.Join(tl, " or "))
			return errs
		}
	}
	if c, ok := obj["const"]; ok && !equal(c, v) {
		bad("%s, want %s", show(v), show(c))
	}
	if e, ok := obj["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		bad("%s is not one of %s", show(v), show(e))
	}
	if obj["format"] == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				bad("%q is not an RFC 3339 date-time", str)
			}
		}
	}
	if alts, ok := obj["oneOf"].([]any); ok {
		var matched int
		var why []string
		for i, alt := range alts {
			if e := s.validate(file, alt, v, at); len(e) == 0 {
				matched++
			} else {
				why = append(why, fmt.Sprintf("alternative %d: %v", i, errors.Join(e...)))
			}
		}
		switch {
		case matched == 0:
			bad("matches none of the %d alternatives (%s)", len(alts), strings.Join(why, "; "))
		case matched > 1:
			bad("matches %d of the alternatives, want exactly one", matched)
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := obj["properties"].(map[string]any)
		if req, ok := obj["required"].([]any); ok {
			for _, r := range req {
				if _, present := val[r.(string)]; !present {
					bad("required property %q is missing", r)
				}
			}
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := at + "/" + escape(k)
			if ps, ok := props[k]; ok {
				errs = append(errs, s.validate(file, ps, val[k], sub)...)
				continue
			}
			if ap, ok := obj["additionalProperties"]; ok {
				if b, isBool := ap.(bool); isBool && !b {
					errs = append(errs, fmt.Errorf("%s: property not in the schema", where(sub)))
					continue
				}
				errs = append(errs, s.validate(file, ap, val[k], sub)...)
			}
		}
	case []any:
		if items, ok := obj["items"]; ok {
			for i, x := range val {
				errs = append(errs, s.validate(file, items, x, at+"/"+strconv.Itoa(i))...)
			}
		}
	}
	return errs
}

func where(at string) string {
	if at == "" {
		return "(document)"
	}
	return at
}

// typeOf is the JSON Schema type of a decoded value: a number without a
// fraction is an integer.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := new(big.Rat).SetString(x.String()); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// equal compares decoded values, numbers by value.
func equal(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum || bNum {
		if !aNum || !bNum {
			return false
		}
		ra, ok1 := new(big.Rat).SetString(na.String())
		rb, ok2 := new(big.Rat).SetString(nb.String())
		return ok1 && ok2 && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			if yv, ok := y[k]; !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

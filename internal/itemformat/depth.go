package itemformat

import (
	"bytes"
	"errors"
	"fmt"
)

// errTooDeep is internal to normalizeAt; normalize turns it into an *Error.
var errTooDeep = errors.New("too deep")

// normalize enforces the depth limit on a decoded value of format f (a
// flat object is depth 1).
func normalize(f Format, v any, maxDepth int) (any, error) {
	v, err := normalizeAt(v, maxDepth, 1)
	if err != nil {
		return nil, tooDeep(f, maxDepth)
	}
	return v, nil
}

// bracketDepthExceeds reports whether [ and { nest deeper than limit in
// data, ignoring brackets inside strings (and, for TOML, comments and
// literal/multi-line strings). It is a cheap guard run before parsers
// that recurse per nesting level.
func bracketDepthExceeds(data []byte, limit int, tomlSyntax bool) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '[' || c == '{':
			depth++
			if depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth = max(0, depth-1)
		case c == '"':
			if tomlSyntax && bytes.HasPrefix(data[i:], []byte(`"""`)) {
				i = skipPast(data, i+3, `"""`, true)
			} else {
				i = skipString(data, i+1, '"', true)
			}
		case tomlSyntax && c == '\'':
			if bytes.HasPrefix(data[i:], []byte(`'''`)) {
				i = skipPast(data, i+3, `'''`, false)
			} else {
				i = skipString(data, i+1, '\'', false)
			}
		case tomlSyntax && c == '#':
			i = skipPast(data, i+1, "\n", false)
		}
	}
	return false
}

// skipString returns the index of the closing quote of a single-line
// string starting at i (or of the end of line / data if unterminated).
func skipString(data []byte, i int, quote byte, escapes bool) int {
	for ; i < len(data); i++ {
		switch data[i] {
		case '\\':
			if escapes {
				i++
			}
		case quote, '\n':
			return i
		}
	}
	return len(data)
}

// skipPast returns the index of the last byte of the first occurrence of
// end at or after i (or len(data)).
func skipPast(data []byte, i int, end string, escapes bool) int {
	for ; i < len(data); i++ {
		if escapes && data[i] == '\\' {
			i++
			continue
		}
		if bytes.HasPrefix(data[i:], []byte(end)) {
			return i + len(end) - 1
		}
	}
	return len(data)
}

// normalizeAt enforces the depth limit and turns map[any]any (YAML with
// non-string keys) into map[string]any so that templates can use .key.
func normalizeAt(v any, maxDepth, depth int) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if depth > maxDepth {
			return nil, errTooDeep
		}
		for k, e := range t {
			n, err := normalizeAt(e, maxDepth, depth+1)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
		return t, nil
	case map[any]any:
		if depth > maxDepth {
			return nil, errTooDeep
		}
		m := make(map[string]any, len(t))
		for k, e := range t {
			n, err := normalizeAt(e, maxDepth, depth+1)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = n
		}
		return m, nil
	case []any:
		if depth > maxDepth {
			return nil, errTooDeep
		}
		for i, e := range t {
			n, err := normalizeAt(e, maxDepth, depth+1)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	case []map[string]any: // TOML arrays of tables
		if depth > maxDepth {
			return nil, errTooDeep
		}
		out := make([]any, len(t))
		for i, e := range t {
			n, err := normalizeAt(e, maxDepth, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return v, nil
}

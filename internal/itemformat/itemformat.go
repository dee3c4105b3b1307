// Package itemformat is the one home of parsing item content as JSON, YAML
// or TOML: what confpush --validate (publish.Validate) checks before a
// publish and what the agent's template helpers (json, yaml, toml) decode
// on every host. Both go through this package so that an item the publisher
// accepts is one the agents can read, and so that a bad item gets the same
// error, at the same position, on both sides.
//
// # Limits
//
//   - Nesting: at most MaxDepth (100) nested arrays/objects (sequences and
//     mappings, arrays and inline tables). A flat object is depth 1. The
//     limit is checked on the raw text before parsing where the parser
//     recurses per level without a bound of its own (JSON, TOML), and on
//     the decoded value.
//   - YAML: duplicate mapping keys are an error (yaml.v3 would silently
//     keep one when decoding into Go values, or build quadratic errors),
//     and alias expansion is bounded by the input size (no "billion
//     laughs"); see internal/safeyaml.
//   - JSON: exactly one top-level value; anything but white space after it
//     is an error.
//   - Size: bounded by the caller (an item is at most a znode, 1 MiB).
//
// # Error positions
//
// Positions are 1-based; a column counts bytes from the start of the line
// and points AT the offending byte (not past it). yaml.v3 reports lines
// only, so YAML errors have a line (and the document number within the
// stream) but no column. Messages never quote item content, which may be
// secret: the parser's detail is kept with every quoted fragment removed.
package itemformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	yaml "go.yaml.in/yaml/v3"

	"github.com/zkconf/zkconf/internal/safeyaml"
)

// MaxDepth is the default and largest sane nesting depth.
const MaxDepth = 100

// Format is an item format.
type Format string

// The formats, named as in messages.
const (
	JSON Format = "JSON"
	YAML Format = "YAML"
	TOML Format = "TOML"
)

// ForName returns the format of an item by its extension: .json, .yaml or
// .yml, .toml (any case). ok is false for every other name.
func ForName(name string) (f Format, ok bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		return JSON, true
	case ".yaml", ".yml":
		return YAML, true
	case ".toml":
		return TOML, true
	}
	return "", false
}

// Errors an *Error matches with errors.Is.
var (
	// ErrSyntax: the data does not parse, or breaks a rule of the format
	// (a YAML duplicate key, an alias bomb).
	ErrSyntax = errors.New("item data does not parse")
	// ErrTooDeep: the data nests deeper than the depth limit.
	ErrTooDeep = errors.New("item data nested too deeply")
)

// Error is a parse failure. Its message names the format and the position,
// never the content.
type Error struct {
	Format Format
	// Line and Column are 1-based; 0 when unknown (YAML has no columns).
	Line, Column int
	// Document is the 1-based YAML document in the stream; 0 otherwise.
	Document int
	// Err is ErrSyntax or ErrTooDeep.
	Err error
	// detail is the redacted reason ("" when none).
	detail string
	limit  int // depth limit, for ErrTooDeep
}

// Error returns e.g. "invalid JSON at line 2, column 15: invalid character
// (…) looking for beginning of value", "invalid YAML at line 3 (document
// 2): ...", or "TOML nested deeper than 100 levels".
func (e *Error) Error() string {
	if e.Err == ErrTooDeep {
		return fmt.Sprintf("%s nested deeper than %d levels", e.Format, e.limit)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s", e.Format)
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
	}
	if e.Document > 0 {
		fmt.Fprintf(&b, " (document %d)", e.Document)
	}
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	return b.String()
}

// Unwrap returns ErrSyntax or ErrTooDeep.
func (e *Error) Unwrap() error { return e.Err }

// Parse decodes data in format f into nil, bool, numbers (json.Number for
// JSON, so that they print exactly as written), strings, times, []any and
// map[string]any. YAML yields its first document. maxDepth bounds nesting;
// 0 or less means MaxDepth. Every error is an *Error (or, for an unknown
// format, a plain error).
func Parse(f Format, data []byte, maxDepth int) (any, error) {
	if maxDepth <= 0 {
		maxDepth = MaxDepth
	}
	var v any
	var err error
	switch f {
	case JSON:
		v, err = parseJSON(data, maxDepth)
	case YAML:
		v, err = parseYAML(data, maxDepth, false)
	case TOML:
		v, err = parseTOML(data, maxDepth)
	default:
		return nil, fmt.Errorf("itemformat: unknown format %q", f)
	}
	if err != nil {
		return nil, err
	}
	return normalize(f, v, maxDepth)
}

// Check reports whether data is valid in format f within MaxDepth: what a
// publish checks. Unlike Parse it checks every document of a YAML stream.
func Check(f Format, data []byte) error {
	if f == YAML {
		_, err := parseYAML(data, MaxDepth, true)
		return err
	}
	_, err := Parse(f, data, MaxDepth)
	return err
}

func tooDeep(f Format, limit int) *Error {
	return &Error{Format: f, Err: ErrTooDeep, limit: limit}
}

func parseJSON(data []byte, maxDepth int) (any, error) {
	// encoding/json recurses per level up to its own, much larger, limit:
	// refuse before parsing.
	if bracketDepthExceeds(data, maxDepth, false) {
		return nil, tooDeep(JSON, maxDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		// Exactly one value: anything but white space after it is an error.
		if _, terr := dec.Token(); terr != io.EOF {
			return nil, jsonAt(data, dec.InputOffset(), "data after the top-level value")
		}
		return v, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset is just past the offending byte.
		return nil, jsonAt(data, se.Offset-1, redact(se.Error()))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, jsonAt(data, int64(len(data)), "unexpected end of input")
	}
	return nil, &Error{Format: JSON, Err: ErrSyntax, detail: redact(err.Error())}
}

func jsonAt(data []byte, offset int64, detail string) *Error {
	line, col := lineCol(data, offset)
	return &Error{Format: JSON, Line: line, Column: col, Err: ErrSyntax, detail: detail}
}

// yamlLine finds "line N" in a yaml.v3 error. It and quoted compile at
// first use (a bad item): initialisation runs at every confpush start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// parseYAML decodes the first document of data or, with all, every
// document, returning the first one's value.
func parseYAML(data []byte, maxDepth int, all bool) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first any
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return first, nil
		}
		if err != nil {
			e := &Error{Format: YAML, Document: doc, Err: ErrSyntax, detail: strings.TrimPrefix(redact(err.Error()), "yaml: ")}
			if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
				e.Line, _ = strconv.Atoi(m[1])
				e.detail = strings.TrimPrefix(e.detail, "line "+m[1]+": ")
			}
			return nil, e
		}
		v, err := safeyaml.DecodeNode(&n, safeyaml.LimitsFor(data, maxDepth))
		if err != nil {
			var se *safeyaml.SyntaxError
			switch {
			case errors.Is(err, safeyaml.ErrTooDeep):
				return nil, tooDeep(YAML, maxDepth)
			case errors.As(err, &se):
				return nil, &Error{Format: YAML, Line: se.Line, Document: doc, Err: ErrSyntax, detail: "unparsable value"}
			}
			// Duplicate keys and alias bombs: messages name lines and
			// limits, never content.
			return nil, &Error{Format: YAML, Document: doc, Err: ErrSyntax, detail: err.Error()}
		}
		if doc == 1 {
			first = v
		}
		if !all {
			return first, nil
		}
		if _, err := normalize(YAML, v, maxDepth); err != nil {
			return nil, err
		}
	}
}

func parseTOML(data []byte, maxDepth int) (any, error) {
	// The TOML parser recurses once per nested array or inline table and
	// has no limit of its own: check before parsing. Tables ([a.b.c]) do
	// not recurse in the parser; the +2 leaves room for the brackets of
	// array-of-tables headers, and normalize enforces the exact limit.
	if bracketDepthExceeds(data, maxDepth+2, true) {
		return nil, tooDeep(TOML, maxDepth)
	}
	v := map[string]any{}
	if _, err := toml.Decode(string(data), &v); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.Position.Line > 0 {
			return nil, &Error{Format: TOML, Line: pe.Position.Line, Column: pe.Position.Col, Err: ErrSyntax, detail: redact(pe.Message)}
		}
		return nil, &Error{Format: TOML, Err: ErrSyntax, detail: redact(err.Error())}
	}
	return v, nil
}

// lineCol converts a byte offset in data into a 1-based line and column:
// the column of the byte AT offset. Every position in this package's
// errors is computed here.
func lineCol(data []byte, offset int64) (line, col int) {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// quoted matches the quoted fragments parsers put in their messages, which
// may be pieces of the content (a secret, say).
var quoted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("'(?:\\\\.|[^'\\\\])*'|\"(?:\\\\.|[^\"\\\\])*\"|`[^`]*`")
})

// redact removes quoted fragments from a parser message, keeping only a
// quoted single punctuation character (the grammar's "expected ':'").
func redact(msg string) string {
	return quoted().ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if len(inner) == 1 && strings.ContainsAny(inner, ":,;{}[]()=<>#&*!|-?\\") {
			return q
		}
		return "(…)"
	})
}

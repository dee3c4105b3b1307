package itemformat

import (
	"errors"
	"strings"
	"testing"
)

func TestDepthLimitBoundary(t *testing.T) {
	nest := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	for _, tc := range []struct {
		f    Format
		data func(n int) string
	}{
		{JSON, func(n int) string { return nest(n, "[", "]") }},
		{YAML, func(n int) string { return nest(n, "[", "]") }},
		{TOML, func(n int) string { return "a = " + nest(n-1, "[", "]") }}, // the document is a table: depth 1
	} {
		if _, err := Parse(tc.f, []byte(tc.data(MaxDepth)), 0); err != nil {
			t.Errorf("%s at depth %d: %v", tc.f, MaxDepth, err)
		}
		_, err := Parse(tc.f, []byte(tc.data(MaxDepth+1)), 0)
		if !errors.Is(err, ErrTooDeep) {
			t.Errorf("%s at depth %d: %v, want ErrTooDeep", tc.f, MaxDepth+1, err)
		}
		if err := Check(tc.f, []byte(tc.data(MaxDepth+1))); !errors.Is(err, ErrTooDeep) {
			t.Errorf("Check %s at depth %d: %v, want ErrTooDeep", tc.f, MaxDepth+1, err)
		}
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncde\n")
	for _, tc := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 2}, {3, 2, 1}, {5, 2, 3}, {7, 3, 1}, {99, 3, 1}, {-1, 1, 1}} {
		if l, c := lineCol(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("offset %d: line %d, column %d; want %d, %d", tc.off, l, c, tc.line, tc.col)
		}
	}
}

func TestYAMLDocuments(t *testing.T) {
	data := []byte("a: 1\n---\nb: [\n")
	// Parse reads the first document; Check every one.
	if v, err := Parse(YAML, data, 0); err != nil || v.(map[string]any)["a"] != 1 {
		t.Fatalf("Parse: %v, %v", v, err)
	}
	err := Check(YAML, data)
	var e *Error
	if !errors.As(err, &e) || e.Document != 2 || e.Line == 0 || !errors.Is(err, ErrSyntax) {
		t.Fatalf("Check: %v", err)
	}
}

func TestForName(t *testing.T) {
	for name, want := range map[string]Format{"a.json": JSON, "b.YML": YAML, "c.yaml": YAML, "d.Toml": TOML, "e.txt": "", "json": ""} {
		if f, ok := ForName(name); f != want || ok != (want != "") {
			t.Errorf("%s: %q, %v", name, f, ok)
		}
	}
}

package safeyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	got, err := Decode([]byte(`
name: web
port: 8080
ratio: 0.5
on: true
none: null
list: [a, 1]
base: &b {x: 1, y: 2}
derived:
  <<: *b
  y: 3
`), Limits{MaxDepth: 100, MaxValues: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "web", "port": 8080, "ratio": 0.5, "on": true, "none": nil,
		"list":    []any{"a", 1},
		"base":    map[string]any{"x": 1, "y": 2},
		"derived": map[string]any{"x": 1, "y": 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"a: 1\na: 2\n", ErrDuplicateKey},
		{strings.Repeat("[", 200) + strings.Repeat("]", 200), ErrTooDeep},
		// The classic billion-laughs shape: each level doubles the values.
		{laughs(30), ErrTooManyValues},
	}
	for _, c := range cases {
		if _, err := Decode([]byte(c.in), LimitsFor([]byte(c.in), 100)); !errors.Is(err, c.want) {
			t.Errorf("Decode(%.30q) = %v, want %v", c.in, err, c.want)
		}
	}
	var se *SyntaxError
	err := Validate([]byte("a: [\nsecret-value"))
	if !errors.As(err, &se) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("syntax error = %v", err)
	}
}

func laughs(n int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x]\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	return b.String()
}

// TestManyKeysLinear: the input that made yaml.v3 allocate hundreds of MiB
// (thousands of mapping keys) decodes quickly here. A generous bound, not a
// benchmark: quadratic behaviour would take tens of seconds.
func TestManyKeysLinear(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 64000; i++ {
		fmt.Fprintf(&b, "key%d: %d\n", i, i)
	}
	start := time.Now()
	v, err := Decode([]byte(b.String()), LimitsFor([]byte(b.String()), 100))
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("64,000 keys took %v", el)
	}
	if len(v.(map[string]any)) == 0 {
		t.Fatal("empty")
	}
}

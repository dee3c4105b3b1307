package safeyaml

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
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
	_, err := Decode([]byte("a: [\nsecret-value"), Limits{MaxDepth: 100, MaxValues: 100})
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
// (thousands of mapping keys) decodes in memory linear in its size here.
// Measured in bytes allocated, not in time: doubling the keys may at most
// about double the allocation (quadratic behaviour would quadruple it).
func TestManyKeysLinear(t *testing.T) {
	alloc := func(keys int) uint64 {
		var b strings.Builder
		for i := 0; i < keys; i++ {
			fmt.Fprintf(&b, "key%d: %d\n", i, i)
		}
		in := []byte(b.String())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := Decode(in, LimitsFor(in, 100))
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := v.(map[string]any); len(m) != keys {
			t.Fatalf("%d keys decoded, want %d", len(m), keys)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(32000), alloc(64000)
	t.Logf("32,000 keys: %d KiB allocated; 64,000 keys: %d KiB", small>>10, large>>10)
	if large > small*5/2 {
		t.Fatalf("64,000 keys allocated %d KiB, 32,000 keys %d KiB: more than linear", large>>10, small>>10)
	}
}

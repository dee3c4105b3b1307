package template

import (
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/Masterminds/sprig/v3"

	"github.com/zkconf/zkconf/internal/benchshape"
)

// nocopyInputs are strings the helpers of nocopy.go and indent are
// checked on: empty, white space and line ends in every position,
// multi-byte and invalid UTF-8, JSON's escapes, and large.
var nocopyInputs = []string{
	"", "a", "\n", "\n\n", "a\n", "\na", "a\nb\nc", " x \r\n y ",
	"héllo wörld ✓", "\xff\xfe\x00bin", `<&>"'\`, "\u2028\u2029",
	strings.Repeat("line of text\n", 5000), strings.Repeat("x", 64<<10),
}

// TestNoCopyHelpersMatchSprig: b64enc, sha256sum and toJson return what
// sprig's functions of the same name return, byte for byte, and indent and
// nindent what sprig's do (zkconf's add only limits).
func TestNoCopyHelpersMatchSprig(t *testing.T) {
	sp := sprig.HermeticTxtFuncMap()
	lib := libraryFuncs()
	st := &execState{limits: Limits{}.withDefaults()}
	for _, in := range nocopyInputs {
		for _, name := range []string{"b64enc", "sha256sum"} {
			want := sp[name].(func(string) string)(in)
			if got := lib[name].(func(string) string)(in); got != want {
				t.Errorf("%s(%.20q): got %.40q, sprig's %.40q", name, in, got, want)
			}
		}
		for _, v := range []any{in, []any{in, 1, true, nil}, map[string]any{in: in, "n": 2.5}, map[string]string{"k": in}} {
			want := sp["toJson"].(func(any) string)(v)
			if got := lib["toJson"].(func(any) string)(v); got != want {
				t.Errorf("toJson(%.20v): got %.40q, sprig's %.40q", v, got, want)
			}
		}
		for _, n := range []int{0, 1, 2, 7, 64, 65, 200} {
			want := sp["indent"].(func(int, string) string)(n, in)
			if got, err := st.indent(n, in); err != nil || got != want {
				t.Errorf("indent %d %.20q: got %.40q, %v; sprig's %.40q", n, in, got, err, want)
			}
			want = sp["nindent"].(func(int, string) string)(n, in)
			if got, err := st.nindent(n, in); err != nil || got != want {
				t.Errorf("nindent %d %.20q: got %.40q, %v; sprig's %.40q", n, in, got, err, want)
			}
		}
	}
	// Values json cannot encode: "" as sprig's.
	for _, v := range []any{make(chan int), func() {}} {
		if got, want := lib["toJson"].(func(any) string)(v), sp["toJson"].(func(any) string)(v); got != want {
			t.Errorf("toJson(%T): got %q, sprig's %q", v, got, want)
		}
	}
}

// TestIndentLimitsUnchanged: indent and nindent keep their errors (width,
// size) and the message each gives.
func TestIndentLimitsUnchanged(t *testing.T) {
	st := &execState{limits: Limits{MaxOutputBytes: 10}.withDefaults()}
	for _, c := range []struct {
		f       func(int, string) (string, error)
		n       int
		s, want string
		kind    error
	}{
		{st.indent, -1, "a", "indent: negative width -1", ErrBadArgument},
		{st.nindent, -1, "a", "negative width -1", ErrBadArgument},
		{st.indent, 2, "abc\ndef", "indent: result exceeds 10 bytes", ErrOutputTooLarge},
		{st.nindent, 2, "abc\ndef", "result exceeds 10 bytes", ErrOutputTooLarge},
	} {
		_, err := c.f(c.n, c.s)
		if err == nil || err.Error() != c.want || !errors.Is(err, c.kind) {
			t.Errorf("got %v, want %q (%v)", err, c.want, c.kind)
		}
	}
	// At the limit exactly: allowed (nindent's leading line end is not
	// counted, as before).
	for _, f := range []func(int, string) (string, error){st.indent, st.nindent} {
		if _, err := f(2, "abc\ndef\n"); err == nil {
			t.Errorf("14 bytes passed a 10-byte limit")
		}
		if _, err := f(1, "abc\nde\n"); err != nil {
			t.Errorf("10 bytes: %v", err)
		}
	}
}

// TestRenderAllocationsBounded: a render of confbench latency's template
// over 20 items of 64 KiB allocates at most 10 times the set (1.3 MB),
// output included. Each item used to be copied by item, three times by
// b64enc, twice by nindent, and the set's JSON twice by toJson and
// sha256sum: 18 MB, 14 times the set. The agent's memory limit makes room
// for what a render allocates (agent/memlimit.go).
func TestRenderAllocationsBounded(t *testing.T) {
	s := latencySnap(20, 64<<10)
	var set int
	for _, b := range s.items {
		set += len(b)
	}
	tm, err := Parse("latency", benchshape.LatencyTemplate)
	if err != nil {
		t.Fatal(err)
	}
	least := uint64(1 << 62)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := tm.Execute(s); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("a render allocated %d bytes for a set of %d (%.1f×)", least, set, float64(least)/float64(set))
	if least > 10*uint64(set) {
		t.Errorf("a render allocated %d bytes, more than 10 times the set's %d", least, set)
	}
}

// jsonValues are values a template passes to toJson: what sprig's dict,
// list and our json, yaml and toml helpers make, and what json.Marshal
// alone handles (floats, numbers, times, structs) or refuses.
func jsonValues() []any {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range 150 {
		deep = []any{deep}
	}
	var ascii strings.Builder
	for b := range 128 {
		ascii.WriteByte(byte(b))
	}
	vals := []any{
		nil, "", true, false, 0, -7, int64(1) << 62, 1.5, 1e21, 1e-7, float32(0.1), json.Number("12345678901234567890"),
		[]string(nil), []string{}, []string{"b", "a<>&"}, []any(nil), []any{}, []any{1, "x", nil, []any{true}},
		map[string]any(nil), map[string]any{}, map[string]any{"z": 1, "a": []string{"q"}, "m": map[string]any{"k": "v\u2028"}},
		map[string]string{"b": "1", "a": "2"}, map[int]string{2: "x", 1: "y"}, struct{ A int }{3},
		time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), deep,
		ascii.String(), "\xff\xfe", "a\xc3", "\u2028\u2029", "é✓😀", "\x7f\x00",
		make(chan int), func() {}, math.NaN(), cyclic, []any{1, make(chan int)},
		map[string]any{"bad": math.Inf(1)},
	}
	for _, in := range nocopyInputs {
		vals = append(vals, in, []any{in}, map[string]any{in: in})
	}
	return vals
}

// TestToJSONMatchesSprig: toJson gives sprig's result (json.Marshal's
// encoding, "" on error) byte for byte, through its own encoder or
// json.Marshal.
func TestToJSONMatchesSprig(t *testing.T) {
	sp := sprig.HermeticTxtFuncMap()["toJson"].(func(any) string)
	for _, v := range jsonValues() {
		if got, want := toJSONString(v), sp(v); got != want {
			t.Errorf("toJson(%T %.30v): got %.60q, sprig's %.60q", v, v, got, want)
		}
	}
}

// FuzzToJSONString: any string, alone, as a key and in a list, is
// encoded as json.Marshal encodes it.
func FuzzToJSONString(f *testing.F) {
	for _, in := range nocopyInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, map[string]any{s: []any{s, 1}}, []string{s, s}} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := toJSONString(v); got != string(want) {
				t.Fatalf("toJSONString(%q) = %q, json.Marshal %q", v, got, want)
			}
		}
	})
}

// ptrSnap is a Snapshot behind a pointer, so that a test can tell when
// nothing references it any more.
type ptrSnap struct{ bytesSnap }

// TestExecutionKeepsNoSnapshot: the clones a Template keeps for its next
// executions hold nothing of the last one (its snapshot, and with it
// every item, can be collected), and the next execution sees its own
// snapshot and host.
func TestExecutionKeepsNoSnapshot(t *testing.T) {
	tm, err := Parse("t", `{{ generation }} {{ hostname }} {{ range names }}{{ item . }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	s := &ptrSnap{latencySnap(2, 16)}
	if _, err := tm.ExecuteWith(s, Host{Hostname: "h1"}); err != nil {
		t.Fatal(err)
	}
	w := weak.Make(s)
	s = nil
	runtime.GC()
	if w.Value() != nil {
		t.Errorf("the snapshot of an execution that ended is still referenced")
	}
	next := bytesSnap{gen: 9, items: map[string][]byte{"a": []byte("x")}}
	out, err := tm.ExecuteWith(next, Host{Hostname: "h2"})
	if err != nil || string(out) != "9 h2 x" {
		t.Errorf("next execution: %q, %v; want %q", out, err, "9 h2 x")
	}
	// And with no host: nothing of h2 stays.
	if out, err := tm.Execute(next); err != nil || string(out) != "9  x" {
		t.Errorf("execution without host: %q, %v", out, err)
	}
}

// TestExecutionsReuseClones: after its first execution a template's
// executions allocate at least 30 % less than the first, which clones
// the template and binds its helpers (half of a render of 20 × 1 KiB:
// about 93 of 170 KB on Go 1.26). Every execution used to do that.
func TestExecutionsReuseClones(t *testing.T) {
	s := latencySnap(20, 1<<10)
	allocs := func(tm *Template) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := tm.Execute(s); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	warm, err := Parse("latency", benchshape.LatencyTemplate)
	if err != nil {
		t.Fatal(err)
	}
	allocs(warm) // what any first execution in a process initialises
	tm, err := Parse("latency", benchshape.LatencyTemplate)
	if err != nil {
		t.Fatal(err)
	}
	first := allocs(tm)
	least := uint64(1 << 62)
	for range 5 {
		least = min(least, allocs(tm))
	}
	t.Logf("a render of 20 × 1 KiB allocated %d bytes, the first %d", least, first)
	if least*10 > first*7 {
		t.Errorf("executions after the first allocated %d bytes, the first %d: not 30 %% less", least, first)
	}
}

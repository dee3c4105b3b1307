package template

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fzCanary is put in hostile item data; no error message may contain it
// (messages name items and positions, never content).
const fzCanary = "CANARY7f3a9"

// fzTemplates are templates an operator could write, run over hostile
// items "a" and "b".
var fzTemplates = []string{
	`{{ item "a" }}`,
	`{{ range $k, $v := json "a" }}{{ $k }}={{ $v }};{{ end }}`,
	`{{ toJSON (yaml "a") }}`,
	`{{ toJSON (toml "a") }}`,
	`{{ with json "a" }}{{ .x.y.z }}{{ end }}`,
	`{{ join "," (json "a") }}`,
	`{{ indent 4 (item "a") }}`,
	`{{ range names }}{{ . }}:{{ len (item .) }} {{ end }}`,
	`{{ index (json "a") 0 }}`,
	`{{ range (split "\n" (item "a")) }}[{{ trim . | upper }}]{{ end }}`,
	`{{ default "none" (json "a") }}`,
	`{{ range (yaml "a") }}{{ toJSON . }}{{ end }}`,
	`{{ (json "a").key | default "d" }}`,
	`{{ if has "b" }}{{ toJSON (json "b") }}{{ end }}`,
	`{{ range $i, $e := toml "a" }}{{ $i }}{{ toJSON $e }}{{ end }}`,
	`{{ lower (item "a") }}{{ generation }}`,
	`{{ range $k, $v := yaml "a" }}{{ $k }}{{ join ";" $v }}{{ end }}`,
	`{{ toJSON (json "a") }}{{ toJSON (yaml "b") }}{{ toJSON (toml "b") }}`,
	`{{ range json "a" }}{{ range . }}{{ . }}{{ end }}{{ end }}`,
	`{{ eq (item "a") (item "b") }}{{ len (json "a") }}`,
	`{{ slice (item "a") 1 3 }}{{ index (yaml "a") "k" }}`,
	`{{ indent 2 (toJSON (yaml "a")) }}`,
}

// fzShape expands a small fuzz input into hostile data: huge, binary,
// deeply nested JSON, YAML and TOML, alias bombs.
func fzShape(shape uint8, n uint16, data []byte) []byte {
	k := int(n)
	switch shape % 12 {
	case 1: // deep JSON arrays
		return []byte(strings.Repeat("[", k) + string(data) + strings.Repeat("]", k))
	case 2: // deep JSON objects
		return []byte(strings.Repeat(`{"a":`, k) + string(data) + strings.Repeat("}", k))
	case 3: // deep YAML block nesting
		var b strings.Builder
		for i := range k % 3000 {
			b.WriteString(strings.Repeat(" ", i) + "k:\n")
		}
		b.Write(data)
		return []byte(b.String())
	case 4: // deep YAML flow nesting
		return []byte(strings.Repeat("- [", k%5000) + string(data) + strings.Repeat("]", k%5000))
	case 5: // YAML alias bomb
		var b strings.Builder
		b.WriteString("a0: &a0 [" + fmt.Sprintf("%q", data) + "]\n")
		for i := 1; i <= 12+k%20; i++ {
			fmt.Fprintf(&b, "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		return []byte(b.String())
	case 6: // deep TOML inline tables and arrays
		return []byte("x = " + strings.Repeat("{a=", k%4000) + "1" + strings.Repeat("}", k%4000) + "\ny = " +
			strings.Repeat("[", k%4000) + "1" + strings.Repeat("]", k%4000) + "\n")
	case 7: // huge: data repeated up to 4 MiB
		if len(data) == 0 {
			data = []byte("x")
		}
		return bytes.Repeat(data, min(4<<20/len(data), k*64+1))
	case 8: // many lines
		return bytes.Repeat(append(data, '\n'), min(k, 50000))
	case 9: // a huge JSON list of strings
		var b strings.Builder
		b.WriteString("[")
		for i := range min(k*4, 200000) {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q", data)
		}
		b.WriteString("]")
		return []byte(b.String())
	case 10: // TOML with huge arrays of tables
		var b strings.Builder
		for range min(k, 20000) {
			fmt.Fprintf(&b, "[[t]]\nv = %q\n", data)
		}
		return []byte(b.String())
	}
	return data // as is: binary, malformed, anything
}

// FuzzTemplateHostileData executes the templates above over hostile item
// data. Nothing may panic or hang, an output never exceeds the limit, the
// result is deterministic, errors are *Error values that never quote item
// content, and memory use stays proportional to the input.
func FuzzTemplateHostileData(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint16(0), []byte(`{"key":"v","x":{"y":{"z":1}}}`), []byte(`k: [1, 2]`), uint16(3))
	f.Add(uint8(1), uint8(1), uint16(200), []byte(`1`), []byte("a = 1"), uint16(0))
	f.Add(uint8(2), uint8(3), uint16(300), []byte(`x`), []byte(`[1,2]`), uint16(1))
	f.Add(uint8(2), uint8(5), uint16(30), []byte(`lol`), []byte(`- a`), uint16(2))
	f.Add(uint8(3), uint8(6), uint16(200), []byte(``), []byte(`x = [[1]]`), uint16(0))
	f.Add(uint8(6), uint8(7), uint16(60000), []byte("line\x00\xff\xfe"), []byte{0xff, 0xfe}, uint16(5))
	f.Add(uint8(9), uint8(8), uint16(1000), []byte("a b c"), []byte("\x00"), uint16(9))
	f.Add(uint8(5), uint8(9), uint16(1000), []byte(`{"k":"v"}`), []byte(`[]`), uint16(4))
	f.Add(uint8(14), uint8(10), uint16(500), []byte(`v`), []byte(`{}`), uint16(7))
	f.Add(uint8(4), uint8(2), uint16(150), []byte(`{"a":`), []byte(`"`), uint16(2))
	f.Add(uint8(16), uint8(4), uint16(120), []byte(`[x`), []byte(`k: &a [*a]`), uint16(1))
	f.Add(uint8(12), uint8(1), uint16(99), []byte(`"key"`), []byte(`{"key": null}`), uint16(0))
	limits := Limits{MaxOutputBytes: 1 << 20, MaxDepth: 50}
	parsed := make([]*Template, len(fzTemplates))
	for i, text := range fzTemplates {
		t, err := ParseWithLimits(fmt.Sprintf("t%d", i), text, limits)
		if err != nil {
			f.Fatalf("template %d: %v", i, err)
		}
		parsed[i] = t
	}
	f.Fuzz(func(t *testing.T, which, shape uint8, n uint16, data, data2 []byte, at uint16) {
		tmpl := parsed[int(which)%len(parsed)]
		a := fzShape(shape, n, data)
		// The canary goes somewhere in the data, so that error positions
		// land near it.
		pos := int(at) % (len(a) + 1)
		a = slices.Concat(a[:pos], []byte(fzCanary), a[pos:])
		b := slices.Concat(data2, []byte(fzCanary))
		snap := fzSnap{gen: 7, items: map[string][]byte{"a": a, "b": b}}
		inSize := len(a) + len(b)

		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		out, err := fzExecute(t, tmpl, snap)
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > uint64(300*inSize+64<<20) {
			t.Fatalf("template %d allocated %d MiB for %d bytes of items", int(which)%len(parsed), alloc>>20, inSize)
		}
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error is %T, not *render.Error: %v", err, err)
			}
			if strings.Contains(err.Error(), fzCanary) || strings.Contains(err.Error(), fzCanary[:6]) {
				t.Fatalf("template %d: error message leaks item content: %v", int(which)%len(parsed), err)
			}
			if out != nil {
				t.Fatalf("output returned with an error")
			}
		} else if int64(len(out)) > limits.MaxOutputBytes {
			t.Fatalf("output of %d bytes exceeds the %d-byte limit", len(out), limits.MaxOutputBytes)
		}
		// Deterministic, including map iteration.
		out2, err2 := fzExecute(t, tmpl, snap)
		if !bytes.Equal(out, out2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two executions differ: %v / %v", err, err2)
		}
	})
}

// FuzzTemplateText parses and executes fuzzed templates (without range
// loops, which an operator's template could make endless by design) over
// items holding a canary: no panic, no hang, no content in errors.
func FuzzTemplateText(f *testing.F) {
	for _, s := range fzTemplates {
		f.Add(s)
	}
	for _, s := range []string{`{{ template "x" }}{{ define "x" }}{{ template "x" }}{{ end }}`, `{{ call (item "a") }}`,
		`{{ index (json "j") "k" "z" }}`, `{{ (yaml "y").a.b }}`, `{{ slice (item "a") 5 2 }}`, `{{ eq (json "j") 1 }}`,
		`{{ if (item "a") }}{{ (json "j").k.x }}{{ end }}`, `{{ html (item "a") }}{{ js (item "a") }}{{ urlquery (item "a") }}`,
		`{{ lt (item "a") 1 }}`, `{{ len 3 }}`, `{{ not (json "j") }}{{ and (item "a") 0 }}{{ or 0 (item "a") }}`,
		`{{ with $x := json "j" }}{{ $x.k.nope }}{{ end }}`, `{{ indent -1 "x" }}`, `{{ join "," (item "a") }}`,
		`{{ toJSON (json "j") | trim | upper }}`, `{{ .Foo }}`, `{{ $.x }}`, `{{ nil }}`, `{{ (item "a").Field }}`,
		`{{ index (item "a") 100 }}`, `{{ print (json "j") }}`, `{{ default (item "a") "" }}`, `{{ split (item "a") "x" | len }}`} {
		f.Add(s)
	}
	snap := fzSnap{gen: 3, items: map[string][]byte{
		"a": []byte("plain " + fzCanary + " text"),
		"j": []byte(`{"k": {"x": "` + fzCanary + `"}, "n": 1, "l": ["` + fzCanary + `"]}`),
		"y": []byte("a:\n  b: " + fzCanary + "\n"),
		"t": []byte(`k = "` + fzCanary + `"`),
	}}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "range") || strings.Contains(text, "printf") || strings.Contains(text, fzCanary[:6]) {
			t.Skip("loops and printf widths are the operator's business; the canary must come from items")
		}
		tmpl, err := ParseWithLimits("fz", text, Limits{MaxOutputBytes: 1 << 20, MaxDepth: 50})
		if err != nil {
			return
		}
		out, err := fzExecute(t, tmpl, snap)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error is %T: %v", err, err)
			}
			if strings.Contains(err.Error(), fzCanary[:6]) {
				t.Fatalf("error message leaks item content: %v", err)
			}
		} else if len(out) > 1<<20 {
			t.Fatalf("output of %d bytes exceeds the limit", len(out))
		}
	})
}

// fzExecute runs Execute with a watchdog: a hang is a failure, not a
// stuck fuzzer.
func fzExecute(t *testing.T, tmpl *Template, snap Snapshot) ([]byte, error) {
	t.Helper()
	type res struct {
		out []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := tmpl.Execute(snap)
		done <- res{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("Execute did not return within 20s")
		return nil, nil
	}
}

type fzSnap struct {
	gen   int64
	items map[string][]byte
}

func (s fzSnap) Generation() int64 { return s.gen }
func (s fzSnap) Names() []string   { return slices.Collect(maps.Keys(s.items)) }
func (s fzSnap) Get(n string) ([]byte, bool) {
	b, ok := s.items[n]
	return b, ok
}

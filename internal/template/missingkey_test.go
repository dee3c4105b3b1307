package template

import (
	"errors"
	"strings"
	"testing"
)

// poolSnap holds a pool without "hash" or "port".
func poolSnap() mapSnap {
	return mapSnap{gen: 3, items: map[string]string{
		"pools.json": `{"web": {"servers": ["a:80", "b:80"]}, "api": {"servers": ["c:81"], "hash": "ip", "port": 81}}`,
	}}
}

// TestMissingKey: the two missing_key behaviours on the reporter's own
// templates, and the idioms docs/confagent.md shows for the default
// (error), which must render without a missing_key setting.
func TestMissingKey(t *testing.T) {
	const ifHash = `{{ range $name, $pool := json "pools.json" }}{{ $name }}:{{ if $pool.hash }}hash {{ $pool.hash }}{{ else }}rr{{ end }};{{ end }}`
	const portDefault = `{{ range $name, $pool := json "pools.json" }}{{ $name }}={{ $pool.port | default 80 }};{{ end }}`
	const printed = `[{{ (index (json "pools.json") "web").hash }}][{{ (json "pools.json").web.hash }}]`

	for _, tmpl := range []string{ifHash, portDefault, printed} {
		_, err := Render("t", tmpl, poolSnap())
		if err == nil || !strings.Contains(err.Error(), `map has no entry for key "hash"`) && !strings.Contains(err.Error(), `map has no entry for key "port"`) {
			t.Errorf("default (error) rendered %q: %v", tmpl, err)
		}
	}

	zero := func(tmpl string) string {
		t.Helper()
		tm, err := ParseWith("t", tmpl, Options{MissingKey: MissingKeyZero})
		if err != nil {
			t.Fatal(err)
		}
		out, err := tm.Execute(poolSnap())
		if err != nil {
			t.Fatalf("zero: %q: %v", tmpl, err)
		}
		return string(out)
	}
	if got, want := zero(ifHash), "api:hash ip;web:rr;"; got != want {
		t.Errorf("if on a missing key: %q, want %q", got, want)
	}
	if got, want := zero(portDefault), "api=81;web=80;"; got != want {
		t.Errorf("default on a missing key: %q, want %q", got, want)
	}
	// Printed: nothing, never "<no value>".
	if got, want := zero(printed), "[][]"; got != want {
		t.Errorf("printed missing key: %q, want %q", got, want)
	}
	// Present values print as before, assignments print nothing, and a
	// missing item is still an error.
	if got, want := zero(`{{ $p := (json "pools.json").api }}{{ $p.port }} {{ $p.servers }} {{ generation }}`), "81 [c:81] 3"; got != want {
		t.Errorf("present values: %q, want %q", got, want)
	}
	// A key below a missing one is an error (text/template evaluates a
	// field of no value); with tests the parent.
	tm, err := ParseWith("t", `{{ (json "pools.json").web.hash.algo }}`, Options{MissingKey: MissingKeyZero})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Execute(poolSnap()); err == nil || !strings.Contains(err.Error(), "nil pointer evaluating interface {}.algo") {
		t.Errorf("key below a missing one: %v", err)
	}
	if got := zero(`{{ with (json "pools.json").web.hash }}{{ .algo }}{{ else }}none{{ end }}`); got != "none" {
		t.Errorf("with on a missing key: %q", got)
	}
	tm, err = ParseWith("t", `{{ item "nope" }}`, Options{MissingKey: MissingKeyZero})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Execute(poolSnap()); !errors.Is(err, ErrMissingItem) {
		t.Errorf("missing item under zero: %v, want ErrMissingItem", err)
	}

	// The idioms for missing_key: error (docs/confagent.md).
	for tmpl, want := range map[string]string{
		`{{ range $name, $pool := json "pools.json" }}{{ $name }}:{{ if hasKey $pool "hash" }}hash {{ $pool.hash }}{{ else }}rr{{ end }};{{ end }}`: "api:hash ip;web:rr;",
		`{{ range $name, $pool := json "pools.json" }}{{ $name }}={{ get $pool "port" | default 80 }};{{ end }}`:                                    "api=81;web=80;",
		`{{ dig "web" "hash" "none" (json "pools.json") }}`:                                                                                         "none",
	} {
		out, err := Render("t", tmpl, poolSnap())
		if err != nil || string(out) != want {
			t.Errorf("idiom %q: %q, %v; want %q", tmpl, out, err, want)
		}
	}
}

// TestMissingKeyHelperNotCallable: the rewrite's helper cannot be named by
// a template, in either mode.
func TestMissingKeyHelperNotCallable(t *testing.T) {
	for _, mk := range []MissingKey{MissingKeyError, MissingKeyZero} {
		if _, err := ParseWith("t", `{{ zkconfMissingAsEmpty "x" }}`, Options{MissingKey: mk}); err == nil || !strings.Contains(err.Error(), "not defined") {
			t.Errorf("%s: parsed a template calling the rewrite's helper: %v", mk, err)
		}
	}
	if _, err := ParseWith("t", `x`, Options{MissingKey: "ignore"}); err == nil || err.Error() != `missing_key: unknown value "ignore": want error (the default) or zero` {
		t.Errorf("unknown missing_key: %v", err)
	}
}

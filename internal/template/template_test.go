package template

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// mapSnap is a Snapshot backed by a map.
type mapSnap struct {
	gen   int64
	items map[string]string
}

func (s mapSnap) Generation() int64 { return s.gen }
func (s mapSnap) Names() []string   { return slices.Collect(maps.Keys(s.items)) }
func (s mapSnap) Get(name string) ([]byte, bool) {
	v, ok := s.items[name]
	return []byte(v), ok
}

// secret is embedded in items whose content must never reach an error.
const secret = "hunter2-TOPSECRET"

func testSnap() mapSnap {
	return mapSnap{gen: 42, items: map[string]string{
		"db.password": secret,
		"app.json":    `{"port": 8080, "hosts": ["a", "b"], "big": 12345678901234567890, "nested": {"on": true}}`,
		"app.yaml":    "port: 8080\nhosts:\n  - a\n  - b\n1: one\n",
		"app.toml":    "port = 8080\n[server]\nname = \"x\"\n[[backends]]\naddr = \"b1\"\n[[backends]]\naddr = \"b2\"\n",
		"motd":        "  hello\nworld  \n",
		"empty":       "",
	}}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name, tmpl, want string
	}{
		{"generation", `{{ generation }}`, "42"},
		{"names sorted", `{{ join "," names }}`, "app.json,app.toml,app.yaml,db.password,empty,motd"},
		{"item", `pw={{ item "db.password" }}`, "pw=" + secret},
		{"has", `{{ has "motd" }} {{ has "nope" }}`, "true false"},
		{"optional item", `{{ if has "nope" }}{{ item "nope" }}{{ else }}none{{ end }}`, "none"},
		{"json field", `{{ (json "app.json").port }}`, "8080"},
		{"json big number exact", `{{ (json "app.json").big }}`, "12345678901234567890"},
		{"json nested", `{{ (json "app.json").nested.on }}`, "true"},
		{"json range", `{{ range (json "app.json").hosts }}[{{ . }}]{{ end }}`, "[a][b]"},
		{"json join", `{{ join ";" (json "app.json").hosts }}`, "a;b"},
		{"json index", `{{ index (json "app.json").hosts 1 }}`, "b"},
		{"json eq number", `{{ if eq (json "app.json").port "8080" }}yes{{ end }}`, "yes"},
		{"yaml", `{{ $y := yaml "app.yaml" }}{{ $y.port }} {{ join "," $y.hosts }} {{ index $y "1" }}`, "8080 a,b one"},
		{"toml", `{{ $t := toml "app.toml" }}{{ $t.port }} {{ $t.server.name }}{{ range $t.backends }} {{ .addr }}{{ end }}`, "8080 x b1 b2"},
		{"trim upper lower", `{{ item "motd" | trim | upper }}|{{ lower "AbC" }}`, "HELLO\nWORLD|abc"},
		{"split", `{{ range split "," "x,y,z" }}<{{ . }}>{{ end }}`, "<x><y><z>"},
		{"default empty", `{{ item "empty" | default "fallback" }}`, "fallback"},
		{"default set", `{{ item "motd" | trim | default "fallback" }}`, "hello\nworld"},
		{"default zero number", `{{ 0 | default 7 }}`, "7"},
		{"indent", `{{ indent 2 "a\nb" }}`, "  a\n  b"},
		{"toJSON", `{{ toJSON (json "app.json").hosts }}`, `["a","b"]`},
		{"toJSON string", `{{ toJSON (item "motd") }}`, `"  hello\nworld  \n"`},
		{"join numbers", `{{ join "-" (split "," "1,2") }}`, "1-2"},
	}
	snap := testSnap()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(tt.name, tt.tmpl, snap)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	tests := []struct {
		name     string
		items    map[string]string
		tmpl     string
		limits   Limits
		wantIs   error    // errors.Is target, may be nil
		wantMsgs []string // substrings of the message
	}{
		{
			name:     "missing item",
			tmpl:     `{{ item "nope" }}`,
			wantIs:   ErrMissingItem,
			wantMsgs: []string{`item "nope" not found in generation 42`, "t:1:3"},
		},
		{
			name:     "missing item via json",
			tmpl:     `{{ json "nope" }}`,
			wantIs:   ErrMissingItem,
			wantMsgs: []string{`"nope"`},
		},
		{
			name:     "bad JSON",
			items:    map[string]string{"cfg": "{\n  \"password\": " + secret + "\n}"},
			tmpl:     `{{ (json "cfg").password }}`,
			wantIs:   ErrInvalidData,
			wantMsgs: []string{`item "cfg": invalid JSON at line 2, column 15`},
		},
		{
			name:     "truncated JSON",
			items:    map[string]string{"cfg": `{"password": "` + secret},
			tmpl:     `{{ json "cfg" }}`,
			wantIs:   ErrInvalidData,
			wantMsgs: []string{`item "cfg": invalid JSON`},
		},
		{
			name:     "trailing JSON",
			items:    map[string]string{"cfg": `{} ` + secret},
			tmpl:     `{{ json "cfg" }}`,
			wantIs:   ErrInvalidData,
			wantMsgs: []string{`item "cfg": invalid JSON at line 1, column 4: data after the top-level value`},
		},
		{
			name:     "bad YAML",
			items:    map[string]string{"cfg": "a: 1\nb: [" + secret + "\nc: {"},
			tmpl:     `{{ yaml "cfg" }}`,
			wantIs:   ErrInvalidData,
			wantMsgs: []string{`item "cfg": invalid YAML`},
		},
		{
			name:     "bad TOML",
			items:    map[string]string{"cfg": "a = 1\nb = " + secret + "\n"},
			tmpl:     `{{ toml "cfg" }}`,
			wantIs:   ErrInvalidData,
			wantMsgs: []string{`item "cfg": invalid TOML at line 2`},
		},
		{
			name:     "JSON too deep",
			items:    map[string]string{"cfg": deep},
			tmpl:     `{{ json "cfg" }}`,
			wantIs:   ErrTooDeep,
			wantMsgs: []string{`item "cfg": JSON nested deeper than 100 levels`},
		},
		{
			name:     "YAML too deep",
			items:    map[string]string{"cfg": deep},
			tmpl:     `{{ yaml "cfg" }}`,
			wantIs:   ErrTooDeep,
			wantMsgs: []string{`item "cfg"`},
		},
		{
			name:     "TOML too deep",
			items:    map[string]string{"cfg": "a = " + strings.Repeat("[", 1<<20)},
			tmpl:     `{{ toml "cfg" }}`,
			wantIs:   ErrTooDeep,
			wantMsgs: []string{`item "cfg": TOML nested deeper than 100 levels`},
		},
		{
			name:     "custom depth",
			items:    map[string]string{"cfg": `{"a": {"b": {"c": 1}}}`},
			tmpl:     `{{ json "cfg" }}`,
			limits:   Limits{MaxDepth: 2},
			wantIs:   ErrTooDeep,
			wantMsgs: []string{"deeper than 2 levels"},
		},
		{
			name:     "output too large",
			items:    map[string]string{"big": strings.Repeat(secret, 10)},
			tmpl:     `{{ item "big" }}`,
			limits:   Limits{MaxOutputBytes: 64},
			wantIs:   ErrOutputTooLarge,
			wantMsgs: []string{"output exceeds size limit"},
		},
		{
			name:     "indent too large",
			tmpl:     `{{ indent 1000 "a\nb" }}`,
			limits:   Limits{MaxOutputBytes: 64},
			wantIs:   ErrOutputTooLarge,
			wantMsgs: []string{"indent: result exceeds 64 bytes"},
		},
		{
			name:     "missing key",
			items:    map[string]string{"cfg": `{"password": "` + secret + `"}`},
			tmpl:     `{{ (json "cfg").user }}`,
			wantMsgs: []string{`map has no entry for key "user"`},
		},
		{
			name:     "range over a string leaks nothing",
			items:    map[string]string{"cfg": secret},
			tmpl:     `{{ range item "cfg" }}{{ end }}`,
			wantMsgs: []string{"range can't iterate over this value"},
		},
		{
			name:     "comparing maps leaks nothing",
			items:    map[string]string{"cfg": `{"password": "` + secret + `"}`},
			tmpl:     `{{ eq (json "cfg") (json "cfg") }}`,
			wantMsgs: []string{"error calling eq: non-comparable types"},
		},
		{
			name:     "index out of range",
			items:    map[string]string{"cfg": `["` + secret + `"]`},
			tmpl:     `{{ index (json "cfg") 3 }}`,
			wantMsgs: []string{"error calling index: index out of range: 3"},
		},
		{
			name:     "join of maps",
			items:    map[string]string{"cfg": `[{"p": "` + secret + `"}]`},
			tmpl:     `{{ join "," (json "cfg") }}`,
			wantIs:   ErrBadArgument,
			wantMsgs: []string{"join: element 0 has type map[string]interface {}"},
		},
		{
			name:     "wrong argument type",
			items:    map[string]string{"cfg": `{"p": "` + secret + `"}`},
			tmpl:     `{{ upper (json "cfg") }}`,
			wantMsgs: []string{"wrong type for value; expected string; got map[string]interface {}"},
		},
		{
			name:     "field on nil dot",
			tmpl:     `{{ .Foo }}`,
			wantMsgs: []string{`nil data; no entry for key "Foo"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := testSnap()
			maps.Copy(snap.items, tt.items)
			tmpl, err := ParseWithLimits("t", tt.tmpl, tt.limits)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			out, err := tmpl.Execute(snap)
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			var rerr *Error
			if !errors.As(err, &rerr) || rerr.Template != "t" {
				t.Errorf("error %T is not a *render.Error for template t", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			msg := err.Error()
			for _, want := range tt.wantMsgs {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if strings.Contains(msg, secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
				t.Errorf("message leaks item content: %q", msg)
			}
			for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), secret) {
					t.Errorf("wrapped error leaks item content: %q", e.Error())
				}
			}
		})
	}
}

func TestSafeTail(t *testing.T) {
	tests := []struct{ in, want string }{
		{`map has no entry for key "x"`, `map has no entry for key "x"`},
		{"range can't iterate over " + secret, "range can't iterate over this value"},
		{"if/with can't use " + secret, "if/with can't use this value"},
		{"can't use " + secret + " to iterate over more than one variable", "can't use this value to iterate over more than one variable"},
		{"error calling eq: non-comparable types " + secret + ": map", "error calling eq: non-comparable types"},
		{"error calling item: " + secret, "error calling item: " + withheld}, // a panic message, not a helperError
		{"some future message " + secret, withheld},
		// A value crafted to look like a safe message is still rewritten.
		{"range can't iterate over x has arguments but cannot be invoked as function", "range can't iterate over this value"},
	}
	for _, tt := range tests {
		if got := safeTail(tt.in); got != tt.want {
			t.Errorf("safeTail(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"unknown function", `{{ readFile "/etc/passwd" }}`, `function "readFile" not defined`},
		{"no exec helper", `{{ exec "id" }}`, `function "exec" not defined`},
		{"unclosed action", `{{ item "a" `, "unclosed action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t", tt.tmpl)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFuncNames(t *testing.T) {
	got := FuncNames()
	if !slices.IsSorted(got) {
		t.Errorf("FuncNames() not sorted: %v", got)
	}
	for _, name := range []string{"default", "generation", "has", "indent", "item", "join", "json", "lower",
		"names", "split", "toJSON", "toml", "trim", "upper", "yaml",
		"hostname", "env", "label", "labels", "b64enc", "splitList", "sha256sum"} {
		if !slices.Contains(got, name) {
			t.Errorf("FuncNames() lacks %s", name)
		}
	}
	for _, name := range []string{"now", "randAlpha", "expandenv", "bcrypt"} {
		if slices.Contains(got, name) {
			t.Errorf("FuncNames() has %s", name)
		}
	}
}

// TestExecuteConcurrent executes one parsed template against different
// snapshots at once: each execution must see only its own snapshot.
func TestExecuteConcurrent(t *testing.T) {
	tmpl, err := Parse("c", `{{ generation }}:{{ (json "v").n }}`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap := mapSnap{gen: int64(i), items: map[string]string{"v": fmt.Sprintf(`{"n": %d}`, i)}}
			out, err := tmpl.Execute(snap)
			if want := fmt.Sprintf("%d:%d", i, i); err != nil || string(out) != want {
				errs <- fmt.Errorf("got %q, %v; want %q", out, err, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestItemPaths: the helpers address the items of a tree by path, names
// lists the paths (sorted: a directory's items together), and a missing
// path spelled out in the template is named in the error.
func TestItemPaths(t *testing.T) {
	snap := mapSnap{gen: 7, items: map[string]string{"app.json": `{"port": 1}`, "conf.d/site.conf": "server {}",
		"conf.d/sub/db.json": `{"host": "db1"}`, "conf.d.bak": "old"}}
	for _, tt := range []struct{ tmpl, want string }{
		{`{{ item "conf.d/site.conf" }}`, "server {}"},
		{`{{ (json "conf.d/sub/db.json").host }}`, "db1"},
		{`{{ has "conf.d/site.conf" }} {{ has "conf.d" }}`, "true false"},
		{`{{ join "," names }}`, "app.json,conf.d.bak,conf.d/site.conf,conf.d/sub/db.json"},
	} {
		got, err := Render("t", tt.tmpl, snap)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	_, err := Render("t", `{{ item "conf.d/nope.conf" }}`, snap)
	if !errors.Is(err, ErrMissingItem) || !strings.Contains(err.Error(), `item "conf.d/nope.conf" not found in generation 7`) {
		t.Fatalf("missing path: %v", err)
	}
}

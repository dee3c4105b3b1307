package confd

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// funcTree adds to testTree a JSON value, for json.
var funcTree = func() map[string]string {
	m := map[string]string{
		"/app/config": `{"host":"h","port":8080,"big":1000000,"f":1.5,"list":[1,2],"nested":{"a":true},"nil":null}`,
	}
	for k, v := range testTree {
		m[k] = v
	}
	return m
}()

var testHost = Host{
	Getenv: func(k string) string {
		return map[string]string{"REGION": "eu-1", "EMPTY": ""}[k]
	},
	FileExists: func(p string) bool { return p == "/etc/present" },
}

// render parses text as confd does (Parse, named t.tmpl) and executes it
// with nil data; it returns the output, or the error's message.
func render(t *testing.T, s *Store, h Host, text string) string {
	t.Helper()
	tmpl, err := Parse("t.tmpl", text, FuncMap(s, h))
	if err != nil {
		return "parse error: " + err.Error()
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, nil); err != nil {
		return "error: " + err.Error()
	}
	return out.String()
}

// at is the prefix of an execution error text/template reports for the
// action at line 1, column col.
func at(col int, action string) string {
	return fmt.Sprintf(`error: template: t.tmpl:1:%d: executing "t.tmpl" at <%s>: `, col, action)
}

// TestFuncs pins every function's output, byte for byte, and its errors
// as text/template reports them (what confd logs when a render fails).
func TestFuncs(t *testing.T) {
	s := NewStore(funcTree)
	for _, tc := range []struct{ name, text, want string }{
		// Keys.
		{"getv", `{{getv "/app/database/host"}}`, "db1.internal"},
		{"getv missing", `{{getv "/nope"}}`, at(2, `getv "/nope"`) + "error calling getv: key does not exist: /nope"},
		{"getv default", `{{getv "/nope" "fallback"}}`, "fallback"},
		{"getv empty value beats default", `[{{getv "/app/database/pass" "x"}}]`, "[]"},
		{"get", `{{with get "/app/database/port"}}{{.Key}}={{.Value}}{{end}}`, "/app/database/port=5432"},
		{"get missing", `{{get "/nope"}}`, at(2, `get "/nope"`) + "error calling get: key does not exist: /nope"},
		{"gets range", "{{range gets \"/app/upstream/*\"}}{{base .Key}} {{.Value}}\n{{end}}",
			"web1 10.0.0.1:80\nweb10 10.0.0.10:80\nweb2 10.0.0.2:80\n"},
		{"gets printed", `{{gets "/app/database/*"}}`, "[{/app/database/host db1.internal} {/app/database/pass } {/app/database/port 5432}]"},
		{"gets none", `{{gets "/nope/*"}}|{{range gets "/nope/*"}}x{{else}}none{{end}}`, "[]|none"},
		{"gets bad pattern", `{{gets "["}}`, at(2, `gets "["`) + "error calling gets: syntax error in pattern"},
		{"getvs by value", `{{join (getvs "/app/upstream/*") ","}}`, "10.0.0.10:80,10.0.0.1:80,10.0.0.2:80"},
		{"getvs bad pattern", `{{getvs "["}}`, at(2, `getvs "["`) + "error calling getvs: syntax error in pattern"},
		{"ls", `{{ls "/app/services"}} {{ls "/"}} {{ls "/nope"}}`, "[api readme web] [top] []"},
		{"lsdir", `{{range lsdir "/app/services"}}{{.}};{{end}} {{lsdir "/"}}`, "api;web; []"},
		{"exists", `{{exists "/app/database/host"}} {{exists "/app/database"}} {{exists "/app/database/pass"}}`, "true false true"},

		// Host.
		{"getenv", `{{getenv "REGION"}}|{{getenv "NOPE"}}|{{getenv "NOPE" "d"}}|{{getenv "EMPTY" "d"}}`, "eu-1||d|d"},
		{"fileExists", `{{fileExists "/etc/present"}} {{fileExists "/etc/absent"}}`, "true false"},

		// Paths and strings.
		{"base dir", `{{base "/a/b/c"}} {{dir "/a/b/c"}} {{base "/"}} {{dir "/"}} {{base ""}} {{dir "a"}} {{base "/a/b/"}}`, "c /a/b / / . . b"},
		{"split join", `{{split "a:b::c" ":"}} {{join (split "x,y" ",") "-"}} {{len (split "" ",")}}`, "[a b  c] x-y 1"},
		{"join of a non-string list", `{{join (jsonArray "[\"a\"]") ","}}`,
			// text/template names the last node it evaluated: the
			// argument of the inner call.
			at(18, `"[\"a\"]"`) + "wrong type for value; expected []string; got []interface {}"},
		{"case", `{{toUpper "aBc"}} {{toLower "ÀB"}}`, "ABC àb"},
		{"contains", `{{contains "haystack" "st"}} {{contains "haystack" "x"}}`, "true false"},
		{"replace", `{{replace "a-b-c" "-" "_" 1}} {{replace "a-b-c" "-" "_" -1}} {{replace "ab" "" "." -1}}`, "a_b-c a_b_c .a.b."},
		{"trimSuffix", `{{trimSuffix "file.conf" ".conf"}} {{trimSuffix "file" ".conf"}}`, "file file"},
		{"base64", `{{base64Encode "user:pass"}} {{base64Decode "dXNlcjpwYXNz"}} [{{base64Encode ""}}]`, "dXNlcjpwYXNz user:pass []"},
		{"base64Decode invalid", `{{base64Decode "!!"}}`, at(2, `base64Decode "!!"`) + "error calling base64Decode: illegal base64 data at input byte 0"},
		{"parseBool", `{{parseBool "true"}} {{parseBool "0"}} {{parseBool "T"}}`, "true false true"},
		{"parseBool invalid", `{{parseBool "yes"}}`, at(2, `parseBool "yes"`) + `error calling parseBool: strconv.ParseBool: parsing "yes": invalid syntax`},

		// JSON: float64 numbers, <no value> for a missing or null member.
		{"json", `{{$d := json (getv "/app/config")}}{{$d.host}} {{$d.port}} {{$d.big}} {{$d.f}} {{$d.list}} {{$d.nested.a}} {{$d.missing}} {{$d.nil}} {{index $d "missing"}}`,
			"h 8080 1e+06 1.5 [1 2] true <no value> <no value> <no value>"},
		{"json null", `{{json "null"}}`, "map[]"},
		{"json invalid", `{{json "x"}}`, at(2, `json "x"`) + "error calling json: invalid character 'x' looking for beginning of value"},
		{"json empty", `{{json ""}}`, at(2, `json ""`) + "error calling json: unexpected end of JSON input"},
		{"json of an array", `{{json "[1]"}}`, at(2, `json "[1]"`) + "error calling json: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"jsonArray", `{{range jsonArray "[\"a\",2,true]"}}{{.}};{{end}}`, "a;2;true;"},
		{"jsonArray of an object", `{{jsonArray "{}"}}`, at(2, `jsonArray "{}"`) + "error calling jsonArray: json: cannot unmarshal object into Go value of type []interface {}"},

		// map.
		{"map", `{{$m := map "name" "es" "port" 9200}}{{index $m "name"}}:{{index $m "port"}} {{$m.missing}}`, "es:9200 <no value>"},
		{"map odd", `{{map "a"}}`, at(2, `map "a"`) + "error calling map: invalid map call"},
		{"map key not a string", `{{map 1 2}}`, at(2, `map 1 2`) + "error calling map: map keys must be strings"},

		// Lists. reverse works on []string and []KVPair in place; gets
		// returns KVPairs, which it leaves alone, as confd's Reverse does.
		{"reverse ls", `{{reverse (ls "/app/services")}}`, "[web readme api]"},
		{"reverse gets", `{{reverse (gets "/app/upstream/*")}}`,
			"[{/app/upstream/web1 10.0.0.1:80} {/app/upstream/web10 10.0.0.10:80} {/app/upstream/web2 10.0.0.2:80}]"},
		{"reverse sortKVByLength gets", `{{reverse (sortKVByLength (gets "/app/upstream/*"))}}`,
			"[{/app/upstream/web10 10.0.0.10:80} {/app/upstream/web2 10.0.0.2:80} {/app/upstream/web1 10.0.0.1:80}]"},
		{"reverse seq", `{{reverse (seq 1 3)}}`, "[1 2 3]"},
		{"reverse in place", `{{$l := getvs "/app/database/*"}}{{$r := reverse $l}}{{$l}}`, "[db1.internal 5432 ]"},
		// Ties keep their order (sort.Sort's insertion sort, up to 12
		// elements; see TestSortByLengthManyTies).
		{"sortByLength", `{{sortByLength (split "ccc,a,bb,b,aa" ",")}}`, "[a b bb aa ccc]"},
		{"sortKVByLength", `{{range sortKVByLength (gets "/app/database/*")}}{{.Key}} {{end}}`, "/app/database/host /app/database/pass /app/database/port "},
		{"seq", `{{seq 1 3}} {{seq 3 1}} {{seq 2 2}} {{seq -1 1}}`, "[1 2 3] [] [2] [-1 0 1]"},
		{"seq too long", `{{seq 1 2000000}}`, at(2, "seq 1 2000000") + "error calling seq: seq 1 2000000: more than 1048576 elements"},

		// Numbers.
		{"atoi", `{{atoi "42"}} {{atoi "+7"}} {{atoi "-0"}} {{add (atoi "2") 3}}`, "42 7 0 5"},
		{"atoi garbage", `{{atoi "4x"}}`, at(2, `atoi "4x"`) + `error calling atoi: strconv.Atoi: parsing "4x": invalid syntax`},
		{"atoi empty", `{{atoi ""}}`, at(2, `atoi ""`) + `error calling atoi: strconv.Atoi: parsing "": invalid syntax`},
		{"atoi space", `{{atoi " 1"}}`, at(2, `atoi " 1"`) + `error calling atoi: strconv.Atoi: parsing " 1": invalid syntax`},
		{"atoi overflow", `{{atoi "99999999999999999999"}}`, at(2, `atoi "99999999999999999999"`) + `error calling atoi: strconv.Atoi: parsing "99999999999999999999": value out of range`},
		{"arithmetic", `{{add 1 2}} {{sub 1 2}} {{mul 3 4}} {{div 7 2}} {{div -7 2}} {{mod 7 3}} {{mod -7 3}}`, "3 -1 12 3 -3 1 -1"},
		{"div by zero", `{{div 1 0}}`, at(2, "div 1 0") + "error calling div: runtime error: integer divide by zero"},
		{"mod by zero", `{{mod 1 0}}`, at(2, "mod 1 0") + "error calling mod: runtime error: integer divide by zero"},
		{"add a string constant", `{{add "1" 2}}`, at(6, `"1"`) + `expected integer; found "1"`},
		{"add a key's value", `{{add (getv "/app/database/port") 1}}`,
			at(12, `"/app/database/port"`) + "wrong type for value; expected int; got string"},

		// text/template around the functions: confd executes with nil
		// data.
		{"nil data", `{{.}}|{{.anything}}`, "<no value>|<no value>"},
		{"trim markers", "a {{- getv \"/top\" -}} \n b", "atb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(t, s, testHost, tc.text); got != tc.want {
				t.Errorf("%s\n got: %q\nwant: %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestSortByLengthManyTies: beyond 12 elements sort.Sort is not insertion
// sort and the order of equal lengths is whatever the Go release's
// algorithm gives, here and in the confd binary alike; only the lengths
// are ordered. 13 ties of length 1 around longer strings.
func TestSortByLengthManyTies(t *testing.T) {
	in := strings.Split("zzz,m,l,k,j,i,h,g,f,e,d,c,b,a,yy", ",")
	got := sortByLength(slices.Clone(in))
	if !slices.IsSortedFunc(got, func(a, b string) int { return len(a) - len(b) }) {
		t.Fatalf("sortByLength(%v) = %v: not by length", in, got)
	}
	slices.Sort(got)
	want := slices.Clone(in)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("sortByLength lost or added elements: %v", got)
	}
}

func TestHostDefaults(t *testing.T) {
	got := render(t, NewStore(nil), Host{}, `[{{getenv "PATH"}}] {{fileExists "/"}}`)
	if got != "[] false" {
		t.Fatalf("a zero Host reads the machine: %q", got)
	}
}

func TestStatExists(t *testing.T) {
	dir := t.TempDir()
	if !StatExists(dir) || StatExists(dir+"/missing") {
		t.Fatalf("StatExists(%s) = %v, StatExists(missing) = %v", dir, StatExists(dir), StatExists(dir+"/missing"))
	}
}

func TestReplaceBound(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	if _, err := replace(big, "", strings.Repeat("y", 100), -1); err == nil {
		t.Fatal("replace built a result over MaxStringBytes")
	}
	// The count n bounds the estimate: one replacement fits.
	if out, err := replace(big, "", strings.Repeat("y", 100), 1); err != nil || len(out) != len(big)+100 {
		t.Fatalf("replace with n=1: %d bytes, %v", len(out), err)
	}
}

package jsonschema

import (
	"strings"
	"testing"
	"testing/fstest"
)

func load(t *testing.T, files map[string]string) (*Set, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for n, body := range files {
		fsys[n] = &fstest.MapFile{Data: []byte(body)}
	}
	return Load(fsys)
}

// TestLoadRefusesWhatItDoesNotCheck: a keyword outside the subset, an
// unknown type, a format other than date-time and a $ref that does not
// resolve are refused at load, all at once.
func TestLoadRefusesWhatItDoesNotCheck(t *testing.T) {
	_, err := load(t, map[string]string{"a.json": `{"type": "object", "properties": {
		"n": {"type": "integer", "minimum": 1},
		"s": {"type": "strng"},
		"e": {"type": "string", "format": "email"},
		"r": {"$ref": "b.json#/$defs/x"},
		"q": {"$ref": "#/$defs/missing"}}}`})
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{`"minimum" is not in the subset`, `unknown type "strng"`, "format email is not checked",
		`$ref "b.json#/$defs/x": no schema file b.json`, `$ref "#/$defs/missing" does not resolve`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("load error lacks %q:\n%v", want, err)
		}
	}
}

// TestValidate: each keyword of the subset rejects what it should, with
// the JSON pointer of the value at fault; a renamed field fails on
// additionalProperties false and on required.
func TestValidate(t *testing.T) {
	s, err := load(t, map[string]string{
		"agent.json": `{"$defs": {"state": {"enum": ["ok", "gone"]}},
			"type": "object", "additionalProperties": false, "required": ["id", "state"],
			"properties": {"id": {"type": "string"}, "state": {"$ref": "#/$defs/state"},
				"at": {"type": "string", "format": "date-time"}, "n": {"type": "integer"}, "f": {"type": "number"},
				"labels": {"type": ["object", "null"], "additionalProperties": {"type": "string"}}}}`,
		"list.json": `{"type": "object", "properties": {"ok": {"const": true},
			"agents": {"type": "array", "items": {"$ref": "agent.json"}},
			"either": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}]}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	good := `{"ok": true, "agents": [{"id": "a", "state": "ok", "at": "2026-01-02T03:04:05.5Z", "n": 3, "f": 2, "labels": null},
		{"id": "b", "state": "gone", "f": 0.5, "labels": {"zone": "a"}}], "either": "x"}`
	if err := s.Validate("list.json", []byte(good)); err != nil {
		t.Fatalf("a valid document: %v", err)
	}
	for _, c := range []struct{ doc, want string }{
		{`{"agents": [{"agent_id": "a", "state": "ok"}]}`, `/agents/0/agent_id: property not in the schema`},
		{`{"agents": [{"agent_id": "a", "state": "ok"}]}`, `/agents/0: required property "id" is missing`},
		{`{"agents": [{"id": 7, "state": "ok"}]}`, `/agents/0/id: integer, want string`},
		{`{"agents": [{"id": "a", "state": "bad"}]}`, `/agents/0/state: "bad" is not one of ["ok","gone"]`},
		{`{"agents": [{"id": "a", "state": "ok", "n": 1.5}]}`, `/agents/0/n: number, want integer`},
		{`{"agents": [{"id": "a", "state": "ok", "at": "yesterday"}]}`, `"yesterday" is not an RFC 3339 date-time`},
		{`{"agents": [{"id": "a", "state": "ok", "labels": {"zone": 1}}]}`, `/agents/0/labels/zone: integer, want string`},
		{`{"ok": false}`, `/ok: false, want true`},
		{`{"either": true}`, `/either: matches none of the 3 alternatives`},
		{`{"either": 4}`, `/either: matches 2 of the alternatives, want exactly one`},
		{`{"agents": {}}`, `/agents: object, want array`},
		{`[] []`, `not one JSON value`},
	} {
		err := s.Validate("list.json", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.doc, err, c.want)
		}
	}
	if err := s.Validate("nope.json", []byte(`{}`)); err == nil {
		t.Error("validated against a schema that does not exist")
	}
}

package confd

import (
	"bytes"
	"errors"
	"testing"
	"text/template"
)

// TestSafeError: which function errors may be shown as they are. Each
// template fails in one function; SafeError judges the function's own
// error (what text/template wraps), as the agent does.
func TestSafeError(t *testing.T) {
	store := NewStore(map[string]string{"/n": "x12", "/b": "maybe", "/j": `{"a": secret}`, "/k": "/computed"})
	literal := func(s string) bool { return s == "/missing" }
	for _, tt := range []struct {
		text string
		safe bool
	}{
		{`{{getv "/missing"}}`, true},        // names a key the template spells out
		{`{{getv (getv "/k")}}`, false},      // a key read from a value
		{`{{get "/missing"}}`, true},         // get's KeyError too
		{`{{gets "/["}}`, true},              // syntax error in pattern
		{`{{base64Decode "!!"}}`, true},      // illegal base64 data at input byte 0
		{`{{map "a"}}`, true},                // invalid map call
		{`{{map 1 2}}`, true},                // map keys must be strings
		{`{{seq 1 2000000}}`, true},          // more than MaxSeq elements
		{`{{div 1 0}}`, true},                // runtime error: integer divide by zero
		{`{{atoi (getv "/n")}}`, false},      // strconv quotes the value
		{`{{parseBool (getv "/b")}}`, false}, // likewise
		{`{{json (getv "/j")}}`, false},      // encoding/json quotes a character
		{`{{jsonArray (getv "/j")}}`, false}, // likewise
	} {
		tm, err := Parse("t.tmpl", tt.text, FuncMap(store, Host{}))
		if err != nil {
			t.Fatal(err)
		}
		err = tm.Execute(&bytes.Buffer{}, nil)
		var ee template.ExecError
		if !errors.As(err, &ee) || errors.Unwrap(ee.Err) == nil {
			t.Fatalf("%s: %v is no function's error", tt.text, err)
		}
		if got := SafeError(errors.Unwrap(ee.Err), literal); got != tt.safe {
			t.Errorf("%s: SafeError(%v) = %v, want %v", tt.text, errors.Unwrap(ee.Err), got, tt.safe)
		}
	}
	if SafeError(&KeyError{Key: "/missing", Err: ErrNotExist}, nil) {
		t.Error("a missing key is shown without knowing the template's literals")
	}
}

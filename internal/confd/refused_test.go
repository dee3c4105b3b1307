package confd

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"text/template"
)

func TestRefusedNames(t *testing.T) {
	want := []string{"datetime", "lookupIP", "lookupIPV4", "lookupIPV6", "lookupSRV"}
	if got := Refused(); !slices.Equal(got, want) {
		t.Fatalf("Refused() = %v, want %v", got, want)
	}
}

// TestParseNamesEveryRefusedUse: every use of a refused function, in the
// main template, in pipelines, as a chain (datetime.Format) and in a
// defined template, is reported at once with its position, the reason
// and the zkconf alternative; nothing is returned to execute.
func TestParseNamesEveryRefusedUse(t *testing.T) {
	text := "# Generated {{datetime.Format \"2006-01-02\"}}\n" +
		"{{range lookupSRV \"db\" \"tcp\" \"example.com\"}}{{.Target}}{{end}}\n" +
		"{{define \"ips\"}}{{join (lookupIPV4 .) \",\"}}{{end}}\n" +
		"{{if exists \"/x\"}}{{template \"ips\" (getv \"/x\")}}{{end}}\n"
	tmpl, err := Parse("app.conf.tmpl", text, FuncMap(NewStore(nil), Host{}))
	if err == nil || tmpl != nil {
		t.Fatalf("Parse accepted refused functions (%v)", tmpl)
	}
	msg := err.Error()
	for _, want := range []string{
		"3 problems:",
		"app.conf.tmpl:1:14: datetime is not available in zkconf: the clock changes the output at every render",
		"publish the value as a key",
		"app.conf.tmpl:2:8: lookupSRV is not available in zkconf: a DNS answer changes the output without a publish",
		"resolve when publishing and publish the addresses as keys",
		"app.conf.tmpl:3:24: lookupIPV4 is not available in zkconf",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Errorf("no *RefusedError in %v", err)
	}
}

func TestParseAcceptsConfdTemplates(t *testing.T) {
	s := NewStore(map[string]string{"/x": "1"})
	tmpl, err := Parse("ok.tmpl", `{{getv "/x"}} {{getenv "HOME" "/"}}`, FuncMap(s, Host{}))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, nil); err != nil || out.String() != "1 /" {
		t.Fatalf("got %q, %v", out.String(), err)
	}
	// A syntax error is text/template's own.
	if _, err := Parse("bad.tmpl", `{{getv "/x"`, FuncMap(s, Host{})); err == nil ||
		err.Error() != `template: bad.tmpl:1: unclosed action` {
		t.Fatalf("syntax error: %v", err)
	}
	// A function neither confd nor zkconf has.
	if _, err := Parse("bad.tmpl", `{{now}}`, FuncMap(s, Host{})); err == nil ||
		err.Error() != `template: bad.tmpl:1: function "now" not defined` {
		t.Fatalf("unknown function: %v", err)
	}
}

// TestRefusedStubFails: a template parsed without Parse still cannot call
// a refused function.
func TestRefusedStubFails(t *testing.T) {
	tmpl := template.Must(template.New("t").Funcs(FuncMap(NewStore(nil), Host{})).Parse(`{{lookupIP "example.com"}}`))
	err := tmpl.Execute(&bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "error calling lookupIP: lookupIP is not available in zkconf") {
		t.Fatalf("refused function executed: %v", err)
	}
}

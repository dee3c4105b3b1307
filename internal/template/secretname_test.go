package template

import (
	"errors"
	"strings"
	"testing"
)

// TestTemplateErrorsNeverQuoteContent: item content that flows into a
// helper's name argument, a decoder, or text/template's own checks never
// appears in the error. The first case is the reported leak: the inner
// item's content became the outer item's name and the "not found" message
// quoted it.
func TestTemplateErrorsNeverQuoteContent(t *testing.T) {
	snap := mapSnap{gen: 7, items: map[string]string{
		"secret.properties": "  " + secret + "\n",
		"valid-name":        "also-" + secret,
		"multi":             "a\n" + secret + "\nb",
		"app.json":          `{"port": 1}`,
	}}
	for _, tc := range []struct {
		name, tmpl string
		want       []string // every one must appear in the message
	}{
		{"item of item", `{{ item (trim (item "secret.properties")) }}`,
			[]string{"item: no item with that name in generation 7 (argument of 17 bytes, not shown)", "t:1:3"}},
		{"item of item untrimmed", `{{ item (item "secret.properties") }}`, []string{"argument of 20 bytes, not shown"}},
		{"valid-looking name", `{{ item (item "valid-name") }}`, []string{"item: no item with that name", "argument of 22 bytes"}},
		{"json of item", `{{ json (item "secret.properties") }}`, []string{"json: no item with that name"}},
		{"yaml of item", `{{ yaml (item "valid-name") }}`, []string{"yaml: no item with that name"}},
		{"toml of item", `{{ toml (item "valid-name") }}`, []string{"toml: no item with that name"}},
		{"has then item", `{{ if not (has (item "valid-name")) }}{{ item (item "valid-name") }}{{ end }}`, []string{"not shown"}},
		{"json of a line", `{{ range split "\n" (item "multi") }}{{ json . }}{{ end }}`, []string{"json: no item with that name"}},
		{"range over content", `{{ range (item "secret.properties") }}{{ end }}`, []string{"range can't iterate over this value"}},
		{"field of content", `{{ (item "secret.properties").Port }}`, []string{"can't evaluate field Port"}},
		{"index of content", `{{ index (json "app.json") (item "secret.properties") "x" }}`, []string{"t:1:3"}},
		{"eq of content", `{{ if eq (item "secret.properties") 3 }}{{ end }}`, []string{"incompatible types for comparison"}},
		{"join of content", `{{ join "," (item "secret.properties") }}`, []string{"join: want a list, got string"}},
		{"indent of content", `{{ indent (item "secret.properties") "x" }}`, []string{"wrong type for value; expected int; got string"}},
		{"literal missing name", `{{ item "nope" }}`, []string{`item "nope" not found in generation 7`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render("t", tc.tmpl, snap)
			if err == nil {
				t.Fatal("rendered without error")
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || strings.Contains(msg, "hunter2") {
				t.Fatalf("the error carries item content: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Errorf("error %T is not a *render.Error", err)
			}
		})
	}
}

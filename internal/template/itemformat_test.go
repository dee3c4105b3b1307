package template_test

import (
	"strings"
	"testing"

	"github.com/zkconf/zkconf/internal/template"
	"github.com/zkconf/zkconf/publish"
)

type oneItem struct {
	name string
	data []byte
}

func (s oneItem) Generation() int64 { return 1 }
func (s oneItem) Names() []string   { return []string{s.name} }
func (s oneItem) Get(name string) ([]byte, bool) {
	return s.data, name == s.name
}

// TestItemFormatSameErrorPublishAndTemplate: a bad item gets the same
// error (same limit, same line and column) from confpush --validate
// (publish.Validate) and from the agents' template helpers, because both
// parse through internal/itemformat. They used to disagree: publish had no
// JSON or TOML nesting limit, and the JSON column differed by one.
func TestItemFormatSameErrorPublishAndTemplate(t *testing.T) {
	deep := strings.Repeat("[", 101) + strings.Repeat("]", 101)
	for _, tc := range []struct {
		name, helper, data, want string
	}{
		{"c.json", "json", `{"a": 1,}`, `invalid JSON at line 1, column 9: invalid character '}' looking for beginning of object key string`},
		{"c.json", "json", "{\n  \"password\": s3cret\n}", `invalid JSON at line 2, column 15: invalid character (…) looking for beginning of value`},
		{"c.json", "json", `{"a": 1} x`, `invalid JSON at line 1, column 10: data after the top-level value`},
		{"c.json", "json", deep, `JSON nested deeper than 100 levels`},
		{"c.toml", "toml", "a = " + deep, `TOML nested deeper than 100 levels`},
		{"c.toml", "toml", "a = 1\nb = s3cret\n", `invalid TOML at line 2, column 5`},
		{"c.yaml", "yaml", "user: app\npassword: s3cret\nuser: x\n", `invalid YAML (document 1): YAML mapping has a duplicate key at line 3`},
		{"c.yaml", "yaml", "a: [\n  b: c\n", `invalid YAML at line 2 (document 1)`},
		{"c.yaml", "yaml", deep, `YAML nested deeper than 100 levels`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			prefix := `item "` + tc.name + `": `
			perr := publish.Validate(map[string][]byte{tc.name: []byte(tc.data)}, publish.ValidateOptions{Syntax: true})
			if perr == nil {
				t.Fatal("publish.Validate accepted the item")
			}
			pmsg, ok := strings.CutPrefix(perr.Error(), prefix)
			if !ok {
				t.Fatalf("publish: %q does not start with %q", perr, prefix)
			}
			_, rerr := template.Render("t", `{{ `+tc.helper+` "`+tc.name+`" }}`, oneItem{tc.name, []byte(tc.data)})
			if rerr == nil {
				t.Fatal("the template helper accepted the item")
			}
			_, rmsg, ok := strings.Cut(rerr.Error(), prefix)
			if !ok {
				t.Fatalf("template: %q does not name the item", rerr)
			}
			if pmsg != rmsg {
				t.Fatalf("publish and the template disagree:\n publish:  %s\n template: %s", pmsg, rmsg)
			}
			if !strings.HasPrefix(pmsg, tc.want) {
				t.Fatalf("error %q, want it to start with %q", pmsg, tc.want)
			}
			if strings.Contains(pmsg, "s3cret") {
				t.Fatalf("content in the message: %q", pmsg)
			}
		})
	}
}

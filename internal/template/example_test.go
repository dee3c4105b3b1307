package template

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExampleUpstreamsTemplate renders the template that
// examples/agent/confagent.yaml names (shipped in examples/agent/templates
// and installed by make install) from the quickstart's items, so the
// shipped example parses and produces the nginx upstream block it promises.
func TestExampleUpstreamsTemplate(t *testing.T) {
	text, err := os.ReadFile("../../examples/agent/templates/upstreams.conf.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]string{}
	dir := "../../examples/quickstart/config"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		items[e.Name()] = string(b)
	}
	tmpl, err := Parse("upstreams.conf.tmpl", string(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	out, err := tmpl.Execute(mapSnap{gen: 1, items: items})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	want := `# Rendered by confagent from app.json: local edits are overwritten.
upstream checkout {
    server 10.0.1.10:9000;
    server 10.0.1.11:9000;
}
`
	if string(out) != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", out, want)
	}
	// Without app.json the render fails rather than writing an empty upstream.
	delete(items, "app.json")
	if _, err := tmpl.Execute(mapSnap{gen: 2, items: items}); err == nil {
		t.Error("rendered without app.json")
	}
}

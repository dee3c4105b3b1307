package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTemplateLabelsFromConfig: the labels of the configuration file reach
// template targets (with the hostname label the agent adds), and wait and
// reload_splay are accepted by the real command.
func TestTemplateLabelsFromConfig(t *testing.T) {
	e := newEnv(t)
	tmpl := filepath.Join(e.dir, "facts.tmpl")
	if err := os.WriteFile(tmpl, []byte(`{{ label "role" }} {{ label "hostname" }} {{ hostname }} {{ item "item00" | sha256sum | trunc 8 }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(e.out, "facts")
	e.writeConfig(t, fmt.Sprintf(`  - name: facts
    type: template
    src: %s
    dest: %s
    reload: "true"
labels:
  role: web
wait:
  min: 1s
reload_splay: 1s
`, tmpl, dest))
	e.publish(t, set(1, 1))
	var out, errb bytes.Buffer
	if code := run([]string{"--config", e.cfgPath, "--once"}, &out, &errb); code != 0 {
		t.Fatalf("--once exit %d: %s", code, errb.String())
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if want := "web " + host + " " + host + " "; len(b) != len(want)+8 || string(b[:len(want)]) != want {
		t.Fatalf("rendered %q, want %q and 8 hex digits", b, want)
	}
}

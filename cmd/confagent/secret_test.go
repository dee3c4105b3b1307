package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSecretInAgentLogs publishes a recognisable secret and drives the
// agent through a successful apply, a check failure and a template error
// at debug level: the secret appears in none of its output, and not in its
// status node either.
func TestNoSecretInAgentLogs(t *testing.T) {
	const secret = "s3cr3t-VALUE-42"
	e := newEnv(t)
	e.writeConfig(t, `  - name: checked
    type: file
    item: item00
    dest: `+filepath.Join(e.out, "checked.conf")+`
    check: "! grep -q REJECT {{.src}}"
`)
	items := set(1, 3)
	items["item00"] = []byte("password=" + secret + " END")
	g := e.publish(t, items)
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", g)

	// A generation the check rejects, with the secret in it.
	items = set(2, 3)
	items["item00"] = []byte("REJECT password=" + secret + " END")
	e.publish(t, items)
	p.waitLog(t, "check command")

	// A generation whose item breaks JSON parsing in a template.
	e.writeConfig(t, `  - name: parsed
    type: template
    src: `+filepath.Join(e.dir, "bad.tmpl")+`
    dest: `+filepath.Join(e.out, "parsed.conf")+`
`)
	writeAtomic(t, filepath.Join(e.dir, "bad.tmpl"), `{{ (json "item00").x }}`)
	p.waitLog(t, "configuration reloaded")
	items = set(3, 3)
	items["item00"] = []byte(`{"x": "` + secret + `", broken`)
	e.publish(t, items)
	p.waitLog(t, "invalid JSON")

	if strings.Contains(p.log(), secret) {
		t.Fatalf("the secret reached the agent's log:\n%s", p.log())
	}
	st := e.waitApplied(t, "agent-under-test", g)
	if strings.Contains(st.LastError, secret) {
		t.Fatalf("the secret reached the status node: %s", st.LastError)
	}
}

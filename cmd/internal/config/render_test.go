package config

import (
	"strings"
	"testing"
)

// TestLoadForRender: a host's configuration renders on another machine:
// what only holds on that host (owners, credentials files, ZooKeeper,
// targets writing the agent's own files) is not checked, what rendering
// needs (templates, missing_key, items, the file's syntax) still is.
func TestLoadForRender(t *testing.T) {
	f := newFixture(t)
	hostOnly := f.config(t, `
zookeeper:
  auth_file: @DIR/zk-auth-open
state_dir: /var/lib/confagent
labels: {zone: a}
targets:
  - {name: t, type: template, src: app.tmpl, dest: /etc/app.conf, owner: no-such-user-zkconf, group: no-such-group-zkconf, missing_key: zero}
  - {name: s, type: file, item: s, dest: /var/lib/confagent/x}
`)
	if _, err := Load(hostOnly); err == nil {
		t.Fatal("Load accepted host problems; the test proves nothing")
	}
	c, err := LoadForRender(hostOnly)
	if err != nil {
		t.Fatalf("LoadForRender: %v", err)
	}
	if c.Targets[0].Template == nil || c.Targets[0].UID != -1 || c.Targets[0].GID != -1 || c.Labels["zone"] != "a" || c.Targets[0].MissingKey != "zero" {
		t.Fatalf("LoadForRender gave %+v", c.Targets[0])
	}
	bad := f.config(t, `
targets:
  - {name: t, type: template, src: bad.tmpl, dest: /etc/a}
  - {name: u, type: template, src: app.tmpl, dest: /etc/b, missing_key: maybe}
  - {name: v, type: file, dest: /etc/c}
`)
	_, err = LoadForRender(bad)
	for _, want := range []string{"targets[0].src: cannot parse template", `targets[1].missing_key: unknown value "maybe"`, "targets[2].item: required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadForRender error %v, want %q", err, want)
		}
	}
}

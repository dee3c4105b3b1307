package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigSandboxWarnings: check-config names every check or reload
// command the shipped unit's sandbox breaks, with the setting and the
// section of docs/install.md that has the override, and stays quiet about
// commands that work (CPython, nginx -t, a JVM-free checker).
func TestCheckConfigSandboxWarnings(t *testing.T) {
	dir := t.TempDir()
	cfg := `zookeeper:
  servers: [127.0.0.1:2181]
state_dir: ` + filepath.Join(dir, "state") + `
targets:
`
	cmds := map[string]string{
		"jvm":      `check: java -jar /opt/validator.jar {{.src}}`,
		"node":     `check: "cd /srv && /usr/bin/node check.js {{.src}}"`,
		"nft":      `reload: nft -f /etc/nftables.conf`,
		"nftcheck": `check: nft -c -f {{.src}}`,
		"ipt":      `check: iptables-restore --test < {{.src}}`,
		"podman":   `check: podman run --rm -v {{.src}}:/c img check /c`,
		"docker":   `reload: docker kill -s HUP web`,
		"python":   `check: python3 -c 'import json,sys; json.load(open(sys.argv[1]))' {{.src}}`,
		"nginx":    `check: nginx -t -q -c {{.src}}`,
		"jq":       `check: jq . {{.src}} >/dev/null`,
	}
	for name, c := range cmds {
		cfg += "  - name: " + name + "\n    type: file\n    item: " + name + "\n    dest: " + filepath.Join(dir, "out", name) + "\n    mode: \"0640\"\n    " + c + "\n"
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check-config", "--config", path}, &out, &errb); code != 0 {
		t.Fatalf("check-config: %d %s", code, errb.String())
	}
	warned := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		for name := range cmds {
			if strings.HasPrefix(l, `warning: target "`+name+`"`) {
				warned[name] = l
			}
		}
	}
	for name, setting := range map[string]string{"jvm": "MemoryDenyWriteExecute=yes", "node": "MemoryDenyWriteExecute=yes",
		"nft": "AF_NETLINK", "nftcheck": "CAP_NET_ADMIN", "ipt": "AF_NETLINK", "podman": "RestrictNamespaces=yes", "docker": "outside the unit's sandbox"} {
		if l := warned[name]; !strings.Contains(l, setting) || !strings.Contains(l, sandboxDoc) {
			t.Errorf("target %s: warning %q does not name %q and %s", name, l, setting, sandboxDoc)
		}
	}
	for _, name := range []string{"python", "nginx", "jq"} {
		if l, ok := warned[name]; ok {
			t.Errorf("target %s works in the sandbox, yet: %s", name, l)
		}
	}
}

// TestSandboxDocListsEveryRule: the section check-config points at exists
// and covers every program it warns about.
func TestSandboxDocListsEveryRule(t *testing.T) {
	b, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	title := strings.TrimSuffix(strings.TrimPrefix(sandboxDoc, `docs/install.md, "`), `"`)
	i := strings.Index(doc, "## "+title)
	if i < 0 {
		t.Fatalf("docs/install.md has no section %q", title)
	}
	section := doc[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	for _, r := range sandboxRules() {
		for _, p := range r.programs {
			if !strings.Contains(section, "`"+p) {
				t.Errorf("section %q does not mention %s", title, p)
			}
		}
	}
	for _, override := range []string{"systemctl edit confagent", "MemoryDenyWriteExecute=no", "RestrictAddressFamilies=AF_NETLINK", "CapabilityBoundingSet=CAP_NET_ADMIN"} {
		if !strings.Contains(section, override) {
			t.Errorf("section %q does not give %q", title, override)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDropinCoversEveryTargetKind: the drop-in grants the directory of a
// file target's dest, the parent of a dir target's dest, the directory of
// a template target's dest, the directory a followed symlink points into,
// state_dir and every --read-write path; a destination inside another
// grant adds no line of its own.
func TestDropinCoversEveryTargetKind(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.tmpl")
	if err := os.WriteFile(tmpl, []byte("{{ generation }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The symlink lives outside /tmp, which the units' PrivateTmp hides.
	host, err := os.MkdirTemp(".", ".dropin-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(host) })
	if host, err = filepath.Abs(host); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(host, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(host, "links", "app.conf")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "app.conf"), link); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "confagent.yaml")
	if err := os.WriteFile(cfg, []byte(`zookeeper: {servers: ["127.0.0.1:2181"]}
state_dir: /srv/confagent-state
targets:
  - {name: f, type: file, item: a, dest: /etc/kind-file/a.conf}
  - {name: d, type: dir, dest: /etc/kind-dir/set}
  - {name: t, type: template, src: `+strconv.Quote(tmpl)+`, dest: /etc/kind-template/t.conf}
  - {name: inner, type: file, item: b, dest: /etc/kind-file/sub/b.conf}
  - {name: l, type: file, item: c, dest: `+strconv.Quote(link)+`, follow_symlink: true}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"systemd-dropin", "--config", cfg, "--read-write", "/var/log/nginx"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var got []string
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "ReadWritePaths="); ok {
			got = append(got, v)
		}
	}
	want := []string{
		"/etc/kind-dir",      // dir: the parent of dest
		"/etc/kind-file",     // file (and the file in sub/, inside it)
		"/etc/kind-template", // template
		filepath.Dir(link),   // the symlink's own directory
		real,                 // where the followed symlink points
		"/srv/confagent-state",
		"/var/log/nginx",
	}
	if strings.Join(got, "\n") != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
		t.Errorf("ReadWritePaths:\n%s\nwant:\n%s\n(drop-in:\n%s)", strings.Join(got, "\n"), strings.Join(slices.Sorted(slices.Values(want)), "\n"), out.String())
	}
	if !strings.Contains(out.String(), "[Service]\n") || !strings.Contains(out.String(), "# target inner (file /etc/kind-file/sub/b.conf)") {
		t.Errorf("drop-in lacks its section or the reason of a covered target:\n%s", out.String())
	}
	// Missing directories are reported (systemd would refuse to start),
	// the state directory the unit creates is not.
	if !strings.Contains(errb.String(), "warning: /etc/kind-dir does not exist") || !strings.Contains(errb.String(), "warning: /srv/confagent-state does not exist") {
		t.Errorf("missing directories not reported:\n%s", errb.String())
	}
	// Under the evaluator, every kind is writable with the drop-in.
	unitFile, dropin := writeDropin(t, cfg, "confagent.service", "")
	sb := sandboxOf(t, "", unitFile, dropin)
	for _, d := range []string{"/etc/kind-file", "/etc/kind-file/sub", "/etc/kind-dir", "/etc/kind-dir/set", "/etc/kind-template", real, "/srv/confagent-state"} {
		if a, why := sb.access(d); a != accessWrite {
			t.Errorf("%s is %s (%s)", d, a, why)
		}
	}
}

// TestDropinRefusesHiddenDestinations: destinations the sandbox hides or
// privatises (a state_dir in /tmp among them) are reported together with
// bad --read-write paths, exit 3, and --write writes nothing.
func TestDropinRefusesHiddenDestinations(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	if err := os.WriteFile(cfg, []byte(`zookeeper: {servers: ["127.0.0.1:2181"]}
state_dir: `+strconv.Quote(filepath.Join(dir, "state"))+`
targets:
  - {name: h, type: file, item: a, dest: /home/ops/app.conf}
  - {name: p, type: dir, dest: /var/tmp/set}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "systemd")
	var errb bytes.Buffer
	code := run([]string{"systemd-dropin", "--config", cfg, "--write", "--systemd-dir", sd, "--read-write", "relative", "--read-write", "/"}, &bytes.Buffer{}, &errb)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d\n%s", code, exitConfig, errb.String())
	}
	for _, want := range []string{"target h", "ProtectHome=yes", "target p", "PrivateTmp=yes", `--read-write "relative": must be an absolute path`, "--read-write: would make the whole file system writable", "state_dir: ", "5 problems"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("error does not mention %q:\n%s", want, errb.String())
		}
	}
	if _, err := os.Stat(sd); !os.IsNotExist(err) {
		t.Errorf("a refused drop-in wrote %s: %v", sd, err)
	}
	if code := run([]string{"systemd-dropin", "--config", cfg, "--unit", "../x"}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitUsage {
		t.Errorf("--unit ../x: exit %d, want %d", code, exitUsage)
	}
}

// TestUnitsHardening checks the hardening the units promise
// (docs/install.md, "The sandbox") statically, and scores both units,
// with the example's drop-in, with systemd-analyze security --offline
// (the online mode needs a running systemd manager).
func TestUnitsHardening(t *testing.T) {
	// The documented list: each key's last value in the unit.
	want := map[string]string{
		"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes",
		"NoNewPrivileges": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
		"ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "ProtectClock": "yes",
		"ProtectHostname": "yes", "RestrictSUIDSGID": "yes", "RestrictRealtime": "yes",
		"RestrictNamespaces": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
		"SystemCallArchitectures": "native", "UMask": "0027",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":   "CAP_CHOWN CAP_FOWNER CAP_KILL CAP_DAC_OVERRIDE",
	}
	// Keys that would break what the documented configuration does: its
	// reload commands (systemctl reload talks to systemd as uid 0) and its
	// owner/group settings.
	absent := []string{"User", "DynamicUser", "PrivateUsers", "ReadWritePaths"}
	cfg := exampleConfig(t)
	for _, unit := range []string{"confagent.service", "confagent@.service"} {
		d := unitDirectives(t, "web", filepath.Join("..", "..", "systemd", unit))
		for k, v := range want {
			if got := last(d[k]); got != v {
				t.Errorf("%s: %s=%q, want %q", unit, k, got, v)
			}
		}
		for _, k := range absent {
			if len(d[k]) > 0 {
				t.Errorf("%s: %s=%q is set; the unit documents why it is not", unit, k, d[k])
			}
		}
		instance := ""
		if strings.Contains(unit, "@") {
			instance = "web"
		}
		unitFile, _ := writeDropin(t, cfg, unit, instance)
		// 4.0 ("OK") today; a unit that loses hardening scores higher.
		cmd := exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=40", "--no-pager", "./"+filepath.Base(unitFile))
		cmd.Dir = filepath.Dir(unitFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", unit, err, out)
		}
		if !strings.Contains(string(out), "Overall exposure level") {
			t.Errorf("systemd-analyze security %s printed no exposure level:\n%s", unit, out)
		}
	}
}

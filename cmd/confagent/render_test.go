package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRenderOffline: confagent render renders every target from a local
// directory as the agent renders a generation, without ZooKeeper, into a
// temporary directory (never the destinations), runs the checks with
// --check, and exits 1 naming each failing target; --target and --out
// choose what and where; a non-empty --out and an unknown target are
// refused. A missing map key fails a target unless it has missing_key:
// zero.
func TestRenderOffline(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	items := filepath.Join(dir, "items")
	for name, content := range map[string]string{
		"app.json":   `{"port": 8080}`,
		"pools.json": `{"web": {"servers": ["a:80"]}, "api": {"port": 81}}`,
		"a.pem":      "A",
	} {
		if err := os.MkdirAll(items, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(items, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpl := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pools := `{{ range $n, $p := json "pools.json" }}{{ $n }}={{ $p.port | default 80 }};{{ end }}`
	cfg := filepath.Join(dir, "confagent.yaml")
	writeAtomic(t, cfg, fmt.Sprintf(`zookeeper: {servers: [127.0.0.1:1]}
labels: {zone: eu-1}
state_dir: %[1]s/state
targets:
  - name: ok
    type: template
    src: %[2]s
    dest: %[1]s/ok.conf
    owner: no-such-user-zkconf
    check: grep -q port=8080 {{.src}}
  - name: zero
    type: template
    src: %[3]s
    dest: %[1]s/zero.conf
    missing_key: zero
  - name: strict
    type: template
    src: %[4]s
    dest: %[1]s/strict.conf
  - name: missing
    type: file
    item: nope
    dest: %[1]s/missing
  - name: d
    type: dir
    dest: %[1]s/d
    items: ["*.pem"]
    check: test -f {{.src}}/b.pem
`, dest, tmpl("ok.tmpl", `port={{ (json "app.json").port }} zone={{ label "zone" }} gen={{ generation }}`),
		tmpl("zero.tmpl", pools), tmpl("strict.tmpl", pools)))

	render := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"--config", cfg, "render", "--from", items}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}

	code, stdout, stderr := render("--check")
	if code != exitError {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitError, stdout, stderr)
	}
	for _, want := range []string{
		"target strict: FAILED: render: template: strict:1:",
		`map has no entry for key "port"`,
		`target missing: FAILED: item "nope" is not in generation 0`,
		"check ok: ok",
		`check d: FAILED: check command of target "d" exited with status 1`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if want := "confagent render: 3 target(s) failed: strict, missing, d (a generation of this set would be rejected)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	m := regexp.MustCompile(`into (\S+) \(no destination was written\)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no output directory printed:\n%s", stdout)
	}
	out := m[1]
	t.Cleanup(func() { os.RemoveAll(out) })
	for path, want := range map[string]string{
		filepath.Join(out, "ok", "ok.conf"):     "port=8080 zone=eu-1 gen=0",
		filepath.Join(out, "zero", "zero.conf"): "api=81;web=80;",
		filepath.Join(out, "d", "a.pem"):        "A",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", path, b, err, want)
		}
		if !strings.Contains(stdout, filepath.Dir(path)) {
			t.Errorf("stdout does not name %s:\n%s", filepath.Dir(path), stdout)
		}
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("render wrote to the destinations: %v", err)
	}

	chosen := filepath.Join(dir, "chosen")
	code, stdout, stderr = render("--target", "ok", "--target", "zero", "--out", chosen)
	if code != exitOK || strings.Contains(stdout, "target strict") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(chosen, "zero", "zero.conf")); err != nil || string(b) != "api=81;web=80;" {
		t.Fatalf("--out: %q, %v", b, err)
	}
	if code, _, stderr = render("--out", chosen); code != exitUsage || !strings.Contains(stderr, "is not empty") {
		t.Fatalf("non-empty --out: exit %d %q", code, stderr)
	}
	nope := filepath.Join(dir, "nope")
	cmd := exec.Command(binary, "--config", cfg, "render", "--from", nope)
	if b, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != exitUsage || string(b) != "confagent render: "+nope+": does not exist\n" {
		t.Fatalf("missing --from: exit %d %q %v", cmd.ProcessState.ExitCode(), b, err)
	}
	if code, _, stderr = render("--target", "nope"); code != exitUsage || !strings.Contains(stderr, `confagent render: --target: no target named "nope" (targets: ok, zero, strict, missing, d)`) {
		t.Fatalf("unknown target: exit %d %q", code, stderr)
	}
}

// TestExampleCheckConfigClean: check-config on the shipped example
// configuration passes without a warning (it warned that the nginx
// fragment was world-readable), and the example renders its own shipped
// template from the quickstart set.
func TestExampleCheckConfigClean(t *testing.T) {
	cfg := exampleConfig(t)
	var out, errb bytes.Buffer
	if code := run([]string{"--config", cfg, "check-config"}, &out, &errb); code != exitOK {
		t.Fatalf("check-config exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "warning") || errb.Len() > 0 {
		t.Fatalf("check-config on the shipped example is not clean:\n%s%s", out.String(), errb.String())
	}
	out.Reset()
	outDir := filepath.Join(t.TempDir(), "r")
	code := run([]string{"--config", cfg, "render", "--from", "../../examples/quickstart/config", "--target", "nginx-upstreams", "--out", outDir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("render of the shipped template: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "nginx-upstreams", "upstreams.conf")); err != nil || !strings.Contains(string(b), "upstream") {
		t.Fatalf("rendered %q, %v", b, err)
	}
}

package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/fuzzdir"
)

// fzDangerous reports whether a fuzzed configuration could make Load open
// a device or a FIFO (reading /dev/stdin blocks): those files are the
// operator's choice, not input to defend against.
func fzDangerous(s string) bool {
	for _, d := range []string{"dev", "proc", "sys", "fd"} {
		if strings.Contains(s, d) {
			return true
		}
	}
	return false
}

// fzLoad runs Load with a watchdog: a hang fails the input.
func fzLoad(t *testing.T, path string) (*Config, error) {
	t.Helper()
	type res struct {
		c   *Config
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := Load(path)
		done <- res{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("Load did not return within 20s")
		return nil, nil
	}
}

// fzCheckLoaded checks what a successful Load promises: a configuration
// that validates again, with every target usable as it stands.
func fzCheckLoaded(t *testing.T, c *Config, input string) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("a loaded configuration does not validate again: %v\ninput:\n%s", err, input)
	}
	if len(c.ZooKeeper.Servers) == 0 || c.ZooKeeper.SessionTimeout <= 0 || len(c.Targets) == 0 {
		t.Fatalf("loaded configuration lacks essentials: %+v", c)
	}
	names := map[string]bool{}
	for _, tg := range c.Targets {
		if names[tg.Name] {
			t.Fatalf("duplicate target name %q accepted", tg.Name)
		}
		names[tg.Name] = true
		if !filepath.IsAbs(tg.Dest) || tg.Dest != filepath.Clean(tg.Dest) || tg.Dest == "/" {
			t.Fatalf("target %q: dest %q accepted", tg.Name, tg.Dest)
		}
		if tg.Type == TargetTemplate && tg.Template == nil {
			t.Fatalf("template target %q without a parsed template", tg.Name)
		}
		if tg.Type == TargetFile && tg.Item == "" {
			t.Fatalf("file target %q without an item", tg.Name)
		}
		if tg.Mode.Perm() == 0 || tg.Timeout <= 0 {
			t.Fatalf("target %q: mode %v timeout %v accepted", tg.Name, tg.Mode, tg.Timeout)
		}
		if tg.Check != "" {
			staged := "/tmp/staged dir/it's"
			cmd, err := tg.CheckCommand(staged)
			if err != nil {
				t.Fatalf("target %q: check %q validated but does not expand: %v", tg.Name, tg.Check, err)
			}
			if strings.Contains(tg.Check, "{{.src}}") && !strings.Contains(cmd, shellQuote(staged)) {
				t.Fatalf("target %q: the staged path is not shell-quoted in %q", tg.Name, cmd)
			}
		}
	}
}

func fzFixture(f *testing.F) string {
	dir := fuzzdir.Temp(f)
	for name, content := range map[string]string{
		"app.tmpl": `port={{ (json "app.json").port }}`, "bad.tmpl": `{{ item "x" `, "exec.tmpl": `{{ exec "id" }}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "zk-auth"), []byte("user:password\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "adir"), 0o755); err != nil {
		f.Fatal(err)
	}
	for _, k := range os.Environ() {
		if strings.HasPrefix(k, EnvPrefix+"_") {
			f.Fatalf("%s is set: the fuzzers need a clean environment", k)
		}
	}
	return dir
}

// FuzzLoad feeds Load arbitrary files: it never panics or hangs, and what
// it accepts is a valid configuration.
func FuzzLoad(f *testing.F) {
	dir := fzFixture(f)
	example, err := os.ReadFile("../../../examples/agent/confagent.yaml")
	if err == nil {
		f.Add(example)
	}
	for _, s := range []string{minimal, "", "{}", "targets: 3", "zookeeper: {servers: [a:1]}\ntargets: [{name: t, type: dir, dest: /x, items: []}]",
		"zookeeper:\n  servers: [\"a:1\", \"b:2\"]\n  session_timeout: 1h\n  auth_file: zk-auth\ntargets:\n  - {name: t, type: template, src: app.tmpl, dest: /out/a, mode: \"4755\", check: \"test -s {{.src}}\"}\n",
		"zookeeper: {servers: [a:1]}\ntargets:\n  - {name: t, type: template, src: adir, dest: /o}\n",
		"zookeeper: {servers: [a:1]}\nhttp: {listen: \"[::1]:0\"}\napply: independent\nresync_jitter: 0s\ntargets:\n  - {name: a, type: file, item: x, dest: /a/b, owner: \"0\", group: root, follow_symlink: true}\n",
		"a: &a [*a]", "? [a, b]\n: c\n", "zookeeper:\n  servers: !!binary aGVsbG8=\n", "%YAML 1.1\n---\nx: 1\n"} {
		f.Add([]byte(s))
	}
	path := filepath.Join(dir, "confagent.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if fzDangerous(string(data)) {
			t.Skip()
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := fzLoad(t, path)
		if err != nil {
			if c != nil {
				t.Fatalf("Load returned a configuration and an error")
			}
			if err.Error() == "" {
				t.Fatalf("empty error message")
			}
			return
		}
		fzCheckLoaded(t, c, string(data))
	})
}

// FuzzLoadGenerated builds well-formed YAML around fuzzed values (quoted,
// or raw when raw is odd), so that the fuzzer spends its time in decoding
// and validation rather than in YAML syntax.
func FuzzLoadGenerated(f *testing.F) {
	dir := fzFixture(f)
	f.Add(uint8(0), "zk1:2181", "10s", "/config", "template", "/etc/out/a.conf", "0640", "app.json", "test -s {{.src}}", `{{ item "a" }}`)
	f.Add(uint8(0), "zk1:2181,zk2:2181", "1m30s", "/config/web", "dir", "/srv/out", "0755", "*.pem", "", `{{ range names }}{{ . }}{{ end }}`)
	f.Add(uint8(0), "[::1]:2181", "500ms", "/c", "file", "/x/y", "4755", "a b", "{{.src}} {{.src}}", "")
	f.Add(uint8(1), "zk1", "10", "config", "nope", "rel/path", "0o640", "", "{{.nope}}", "{{ exec }}")
	f.Add(uint8(1), "a:1", "-1s", "/zookeeper/x", "template", "/", "0", "..data", "{{", "{{ json }}")
	f.Add(uint8(3), "a:99999", "1h", "/config/", "dir", "/a/../b", "07777", "[", "{{.src | printf \"%q\"}}", `{{ toJSON (yaml "x") }}`)
	f.Add(uint8(2), "", "0s", "//", "file", "/etc/x", "0640", "invalid", "sh -c 'x'", "")
	path := filepath.Join(dir, "confagent.yaml")
	tmplPath := filepath.Join(dir, "gen.tmpl")
	f.Fuzz(func(t *testing.T, raw uint8, servers, timeout, root, typ, dest, mode, item, check, tmpl string) {
		for _, s := range []string{servers, root, dest, item, check} {
			if fzDangerous(s) {
				t.Skip()
			}
		}
		v := func(bit uint, s string) string {
			if raw&(1<<bit) != 0 {
				return s
			}
			return strconv.Quote(s)
		}
		var srv []string
		for _, s := range strings.Split(servers, ",") {
			srv = append(srv, v(0, s))
		}
		if err := os.WriteFile(tmplPath, []byte(tmpl), 0o644); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "zookeeper:\n  servers: [%s]\n  session_timeout: %s\n", strings.Join(srv, ", "), v(1, timeout))
		fmt.Fprintf(&b, "root: %s\nstate_dir: %q\nagent_id: a1\nhttp:\n  listen: \"\"\n", v(2, root), filepath.Join(dir, "state"))
		fmt.Fprintf(&b, "targets:\n  - name: t1\n    type: %s\n    dest: %s\n    mode: %s\n", v(3, typ), v(4, dest), v(5, mode))
		switch typ {
		case "file":
			fmt.Fprintf(&b, "    item: %s\n", v(6, item))
		case "dir":
			fmt.Fprintf(&b, "    items: [%s]\n", v(6, item))
		default:
			fmt.Fprintf(&b, "    src: gen.tmpl\n")
		}
		if check != "" {
			fmt.Fprintf(&b, "    check: %s\n", v(7, check))
		}
		fmt.Fprintf(&b, "  - name: t2\n    type: file\n    item: other\n    dest: /var/tmp/other\n")
		input := b.String()
		if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := fzLoad(t, path)
		if err != nil {
			if c != nil {
				t.Fatalf("Load returned a configuration and an error")
			}
			return
		}
		fzCheckLoaded(t, c, input)
	})
}

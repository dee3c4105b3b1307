package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"
	"github.com/zkconf/zkconf/internal/targets"
)

// confdDir writes a confd configuration directory: files maps a path
// below it ("conf.d/nginx.toml", "templates/nginx.tmpl") to its content;
// "@DIR" stands for the directory.
func confdDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "@DIR", dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const confdAgent = `
zookeeper:
  servers: [zk1:2181]
root: /myapp
confd_dir: %s
`

// problemsOf returns every problem of a Load error, one line each.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var me *multierror.Error
	if !errors.As(err, &me) {
		t.Fatalf("not a list of problems: %v", err)
	}
	var out []string
	for _, e := range me.Errors {
		out = append(out, e.Error())
	}
	return out
}

// TestConfdDirTargets: every resource below conf.d (sub-directories
// too, any name ending in toml, as confd finds them) becomes a template
// target of syntax confd, field by field; confd_prefix replaces the
// resources' prefixes as confd's -prefix does, and the agent gets the
// root, the effective prefix and the keys.
func TestConfdDirTargets(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "kept.conf"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := confdDir(t, map[string]string{
		"conf.d/nginx.toml": `[template]
src = "nginx.conf.tmpl"
dest = "` + out + `/nginx.conf"
keys = ["/upstream", "/nginx"]
prefix = "ignored-under-confd-prefix"
mode = "0640"
uid = 0
gid = 0
check_cmd = "/usr/sbin/nginx -t -c {{ .src }}"
reload_cmd = "systemctl reload nginx"
`,
		"conf.d/sub/appprops.toml": `[template]
src = "sub/app.tmpl"
dest = "` + out + `/kept.conf"
keys = ["/"]
`,
		"conf.d/README":             "not a resource",
		"templates/nginx.conf.tmpl": `{{range gets "/upstream/*"}}{{.Value}}{{end}}`,
		"templates/sub/app.tmpl":    `{{getv "/name" "x"}}`,
	})
	f := newFixture(t)
	c, err := Load(f.config(t, strings.Replace(confdAgent, "%s", dir, 1)+"confd_prefix: /myapp\nrender_steps: 5000\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{
		Name: "nginx", Type: TargetTemplate, Syntax: SyntaxConfd, Origin: "conf.d/nginx.toml",
		Src: filepath.Join(dir, "templates/nginx.conf.tmpl"), Dest: filepath.Join(out, "nginx.conf"),
		Prefix: "/myapp", Keys: []string{"/upstream", "/nginx"}, Mode: 0o640, Owner: "0", Group: "0", UID: 0, GID: 0,
		Check: "/usr/sbin/nginx -t -c {{.src}}", Reload: "systemctl reload nginx",
		Timeout: DefaultTimeout, RenderTimeout: DefaultRenderTimeout, RenderSteps: 5000, Root: DefaultRootName,
	}, {
		Name: "sub.appprops", Type: TargetTemplate, Syntax: SyntaxConfd, Origin: "conf.d/sub/appprops.toml",
		Src: filepath.Join(dir, "templates/sub/app.tmpl"), Dest: filepath.Join(out, "kept.conf"),
		Prefix: "/myapp", Keys: []string{"/"}, Mode: 0o600, UID: -1, GID: -1,
		Timeout: DefaultTimeout, RenderTimeout: DefaultRenderTimeout, RenderSteps: 5000, Root: DefaultRootName,
	}}
	if !reflect.DeepEqual(c.Targets, want) {
		t.Fatalf("targets:\n got %+v\nwant %+v", c.Targets, want)
	}
	if want := []string{`confd_dir[conf.d/sub/appprops.toml].mode: not set: confd keeps the mode ` + filepath.Join(out, "kept.conf") +
		` has (0600), and so does this target, from now on even when someone changes it`}; !slices.Equal(c.Warnings, want) {
		t.Fatalf("warnings:\n got %q\nwant %q", c.Warnings, want)
	}
	specs, err := c.TargetSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if s := specs[0]; s.Syntax != targets.SyntaxConfd || !reflect.DeepEqual(s.Confd, targets.Confd{Root: "/myapp", Prefix: "/myapp", Keys: []string{"/upstream", "/nginx"}}) ||
		s.TemplatePath != want[0].Src || s.Check != want[0].Check {
		t.Fatalf("spec %+v", s)
	}
}

// TestConfdDirRefusesWhatItCannotHonour: every field confagent cannot
// honour is a problem naming the resource file and the field, why and
// what to do; the configuration is refused with all of them at once.
func TestConfdDirRefusesWhatItCannotHonour(t *testing.T) {
	dir := confdDir(t, map[string]string{
		"confd.toml": "prefix = \"/other\"\nnoop = true\n",
		"conf.d/a.toml": `[template]
src = "a.tmpl"
dest = "/etc/a.conf"
keys = ["/"]
mode = "644"
noop = true
sync_only = true
chek_cmd = "true"
[other]
x = 1
`,
		"conf.d/b.toml": `[template]
dest = "etc/b.conf"
keys = ["/"]
mode = "04755"
uid = 0
owner = "root"
gid = -5
check_cmd = "test -s \"--file={{.src}}\""
`,
		"conf.d/c.toml": `[template]
src = "c.tmpl"
dest = "/etc/c.conf"
keys = ["/x", "/../../elsewhere"]
prefix = "/myapp"
check_cmd = "check {{.dest}}"
`,
		"conf.d/d.toml":    "[template\nsrc = 1\n",
		"conf.d/e.toml":    "[template]\nsrc = \"c.tmpl\"\ndest = \"@DIR/conf.d/x.toml\"\nkeys = [\"/\"]\n",
		"templates/a.tmpl": `{{datetime}} {{lookupSRV "x" "tcp" "y"}}`,
		"templates/c.tmpl": `{{getv "/x"}}`,
	})
	f := newFixture(t)
	_, err := Load(f.config(t, strings.Replace(confdAgent, "%s", dir, 1)+"confd_prefix: /myapp\n"))
	got := problemsOf(t, err)
	want := []string{
		`confd_prefix: ` + dir + `/confd.toml sets prefix = "/other", which confd puts in place of every resource's prefix: set confd_prefix: /other (or remove it from confd.toml if confd runs with another -prefix)`,
		`confd_dir[conf.d/a.toml].chek_cmd: not a field of confd's template resources (confd ignores it): remove it (did you mean "check_cmd"?)`,
		`confd_dir[conf.d/a.toml].noop: a setting of confd itself (a flag or confd.toml), not of a template resource: confd ignores it here; remove it (` + "`confagent --dry-run`" + ` shows what a generation would change, writing nothing)`,
		`confd_dir[conf.d/a.toml].other: confd reads only the [template] table of a resource (it ignores this): remove it`,
		`confd_dir[conf.d/a.toml].sync_only: a setting of confd itself (a flag or confd.toml), not of a template resource: confd ignores it here; remove it (remove check_cmd or reload_cmd from the resource if they must not run)`,
		`confd_dir[conf.d/a.toml].mode: "644" is a decimal number to confd (strconv.ParseUint, base 0), which writes mode 0204: write "0644" for octal 644, or "0204" for what confd wrote`,
		`confd_dir[conf.d/b.toml].src: required: the template, relative to ` + dir + `/templates (confd fails the resource: empty src template)`,
		`confd_dir[conf.d/b.toml].dest: "etc/b.conf" is relative: confd writes it below its own working directory; write the absolute path`,
		`confd_dir[conf.d/b.toml].mode: confd writes "04755" as mode 0755 (os.FileMode does not read the setuid, setgid and sticky bits of a number): write "0755"`,
		`confd_dir[conf.d/b.toml].owner: both owner and uid are set: keep one (confd reads only uid)`,
		`confd_dir[conf.d/b.toml].gid: -5 is not a group id`,
		`confd_dir[conf.d/b.toml].check_cmd: {{.src}} is inside double quotes with other text: the agent replaces it with the path in single quotes, which would become part of it there; take {{.src}} out of the double quotes`,
		`confd_dir[conf.d/c.toml].check_cmd: confd replaces only {{.src}} (it writes <no value> for anything else): remove the rest (template: check_cmd:1:8: executing "check_cmd" at <.dest>: map has no entry for key "dest")`,
		`confd_dir[conf.d/d.toml]: not a template resource confd can read (confd fails it too): toml: line 2: `,
	}
	// The rest come from checking the targets, in their order.
	want = append(want,
		"confd_dir[conf.d/a.toml].src: cannot parse template: 2 problems:\n  - a.tmpl:1:2: datetime is not available in zkconf: ",
		`confd_dir[conf.d/c.toml].keys[1]: "/../../elsewhere" under prefix /myapp reads the node "/elsewhere", which is not the root /myapp or below it: an agent holds only its root's items (set prefix to the root, or a path below it)`,
		`confd_dir[conf.d/e.toml].dest: `+dir+`/conf.d/x.toml is or is inside confd_dir `,
	)
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no problem says\n  %s\nproblems:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
}

// TestConfdDirWarnings: what is honoured but differs from what confd did
// is a warning, naming the file and the field.
func TestConfdDirWarnings(t *testing.T) {
	dir := confdDir(t, map[string]string{
		"confd.toml": "noop = true\nsync-only = true\n",
		"conf.d/w.toml": `[template]
src = "w.tmpl"
dest = "/etc/w.conf"
keys = ["/"]
mode = "0600"
group2 = 1
gid = 4242421
uid = 4242420
check_cmd = "test -s \"{{.src}}\" && test -r '{{.src}}'"
`,
		"templates/w.tmpl": `x`,
	})
	// The warnings come with the problems.
	imp, err := ImportConfd(dir, "", "/myapp")
	if err == nil || !strings.Contains(err.Error(), `confd_dir[conf.d/w.toml].group2: not a field of confd's template resources (confd ignores it): remove it (did you mean "group"?)`) {
		t.Fatalf("ImportConfd: %v", err)
	}
	want := []string{
		dir + `/confd.toml: noop = true: confd rendered without writing; confagent writes every target (confagent --dry-run previews)`,
		dir + `/confd.toml: sync-only = true: confd ran no check_cmd or reload_cmd; confagent runs them (remove them from the resources that must not run them)`,
		`confd_dir[conf.d/w.toml].uid: 4242420 names no user of this host: the file is owned by the bare id, as confd made it`,
		`confd_dir[conf.d/w.toml].gid: 4242421 names no group of this host: the file is owned by the bare id, as confd made it`,
		`confd_dir[conf.d/w.toml].check_cmd: "{{.src}}" written as {{.src}}: the agent quotes the path for the shell itself`,
	}
	if !slices.Equal(imp.Warnings, want) {
		t.Fatalf("warnings:\n got %q\nwant %q", imp.Warnings, want)
	}
	dir = confdDir(t, map[string]string{
		"conf.d/o.toml":    "[template]\nsrc = \"o.tmpl\"\ndest = \"/etc/o.conf\"\nkeys = [\"/\"]\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
		"templates/o.tmpl": `x`,
	})
	imp, err = ImportConfd(dir, "/myapp", "/myapp")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		`confd_dir[conf.d/o.toml].owner: confd does not read owner (its resources have uid; the field is in its documentation only), so confd left the file to its own user: this target gives it to "root"`,
		`confd_dir[conf.d/o.toml].group: confd does not read group (its resources have gid; the field is in its documentation only), so confd left the file to its own group: this target gives it to "root"`,
	}
	if !slices.Equal(imp.Warnings, want) || imp.Targets[0].Owner != "root" || imp.Targets[0].UID != 0 {
		t.Fatalf("warnings:\n got %q\nwant %q\ntarget %+v", imp.Warnings, want, imp.Targets[0])
	}
}

// TestImportConfdYAML: the configuration import-confd writes, loaded as
// confagent's, gives the targets confd_dir gives (the same specs for the
// agent), so either way renders the same.
func TestImportConfdYAML(t *testing.T) {
	dir := confdDir(t, map[string]string{
		"conf.d/nginx.toml": `[template]
src = "nginx.tmpl"
dest = "/etc/nginx/conf.d/app.conf"
keys = ["/upstream", "/nginx"]
prefix = "app"
mode = "0644"
uid = 0
check_cmd = "nginx -t -c \"{{.src}}\""
reload_cmd = "systemctl reload nginx # it's: \"quoted\""
`,
		"conf.d/none.toml":     "[template]\nsrc = \"nginx.tmpl\"\ndest = \"/etc/none\"\nprefix = \"/app/sub/\"\n",
		"templates/nginx.tmpl": `{{range gets "/upstream/*"}}{{.Value}}{{end}}`,
	})
	imp, err := ImportConfd(dir, "", "/app")
	if err != nil {
		t.Fatal(err)
	}
	b, err := imp.YAML()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", b)
	if !strings.HasPrefix(string(b), "# Converted by confagent import-confd from "+dir+" (confd ran without -prefix: each target's prefix is its resource's).\n") ||
		!strings.Contains(string(b), "\n  # from conf.d/nginx.toml\n  - name: nginx\n") {
		t.Fatalf("YAML:\n%s", b)
	}
	f := newFixture(t)
	fromYAML, err := Load(f.config(t, "zookeeper:\n  servers: [zk1:2181]\n"+string(b)))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := Load(f.config(t, "zookeeper:\n  servers: [zk1:2181]\nroot: /app\nconfd_dir: "+dir+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := fromYAML.TargetSpecs()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := direct.TargetSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s1, s2) {
		t.Fatalf("specs from the YAML:\n%+v\nfrom confd_dir:\n%+v", s1, s2)
	}
	if s1[0].Confd.Prefix != "/app" || s1[1].Confd.Prefix != "/app/sub/" || len(s1[1].Confd.Keys) != 0 {
		t.Fatalf("prefixes and keys: %+v", s1)
	}
}

// TestConfdSyntaxKeys: hand-written confd targets (prefix defaults to the
// root, keys to ["/"]) and what is refused around syntax.
func TestConfdSyntaxKeys(t *testing.T) {
	f := newFixture(t)
	f.write(t, "c.tmpl", `{{getv "/x"}}`, 0o644)
	c, err := Load(f.config(t, `
zookeeper: {servers: [zk1:2181]}
root: /myapp
targets:
  - {name: c, type: template, syntax: confd, src: c.tmpl, dest: /etc/c}
  - {name: g, type: template, syntax: go, src: app.tmpl, dest: /etc/g}
`))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := c.TargetSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(specs[0].Confd, targets.Confd{Root: "/myapp", Prefix: "/myapp", Keys: []string{"/"}}) || specs[1].Syntax != "" {
		t.Fatalf("specs %+v", specs)
	}
	_, err = Load(f.config(t, `
zookeeper: {servers: [zk1:2181]}
root: /myapp
targets:
  - {name: a, type: template, syntax: jinja, src: c.tmpl, dest: /etc/a}
  - {name: b, type: template, src: app.tmpl, dest: /etc/b, keys: ["/"], prefix: /myapp}
  - {name: c, type: file, item: x, dest: /etc/c, syntax: confd, keys: ["/"]}
  - {name: d, type: template, syntax: confd, src: c.tmpl, dest: /etc/d, missing_key: zero, prefix: /other}
  - {name: e, type: template, syntax: confd, src: exec.tmpl, dest: /etc/e}
`))
	want := []string{
		`targets[0].syntax: unknown syntax "jinja": want go (the default) or confd`,
		`targets[1].prefix: only valid for type template with syntax: confd`,
		`targets[1].keys: only valid for type template with syntax: confd`,
		`targets[2].syntax: only valid for type template (this target is file)`,
		`targets[2].keys: only valid for type template with syntax: confd`,
		`targets[3].missing_key: not valid with syntax: confd: a confd template prints <no value> for a missing map key, as confd does`,
		`targets[3].keys[0]: "/" under prefix /other reads the node "/other", which is not the root /myapp or below it: an agent holds only its root's items (set prefix to the root, or a path below it)`,
		`targets[4].src: cannot parse template: template: exec.tmpl:1: function "exec" not defined`,
	}
	got := problemsOf(t, err)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no problem says\n  %s\nproblems:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

// TestTargetSpecsCheckPlaceholder: the agent replaces {{.src}} as it is
// spelt, so every spelling validation accepts ({{ .src }}, what confd's
// check_cmd often says) reaches it as {{.src}}, and {{"{{"}} as "{{".
func TestTargetSpecsCheckPlaceholder(t *testing.T) {
	f := newFixture(t)
	c, err := Load(f.config(t, `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: file, item: a, dest: /etc/a, check: 'test -s {{ .src }} && echo {{"{{"}}'}
`))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := c.TargetSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if want := "test -s {{.src}} && echo {{"; specs[0].Check != want {
		t.Fatalf("check %q, want %q", specs[0].Check, want)
	}
}

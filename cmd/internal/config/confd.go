package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	texttemplate "text/template"

	"github.com/BurntSushi/toml"
	yaml "go.yaml.in/yaml/v3"

	"github.com/zkconf/zkconf/internal/confd"
)

// A confd configuration directory (confd's -confdir, /etc/confd by
// default) holds its template resources in conf.d (every file whose name
// ends in "toml", in sub-directories too: confd walks the tree) and the
// templates they name in templates. Each resource becomes one template
// target of syntax confd, named after its file ("conf.d/nginx.toml" is
// target "nginx"), mapped field by field:
//
//	src         src: templates/SRC (joined as confd joins it)
//	dest        dest (an absolute path: confd would write a relative one
//	            below its working directory)
//	keys        keys
//	prefix      prefix: confd's -prefix (confd_prefix) when set, which
//	            replaces it as in confd, else the resource's, with "/"
//	            added in front when missing
//	mode        mode, read as confd reads it (strconv.ParseUint base 0);
//	            unset: the mode dest has now, 0644 for a new file
//	uid, gid    owner, group (numeric; unset: the agent's own user, as
//	            confd's was)
//	owner, group  owner, group (confd's documentation lists them but
//	            confd does not read them: a warning says so)
//	check_cmd   check, {{.src}} being the staged file as in confd
//	reload_cmd  reload
//
// Every other field is refused, naming the file and the field, why and
// what to do: confd ignores what it does not know, and a resource that
// says noop = true or sync-only = true expects what it does not get.

// confdResourceFile is a template resource as confd decodes it
// (resource/template/resource.go, TemplateResourceConfig): the fields a
// file sets, with owner and group, which confd's documentation lists.
type confdResourceFile struct {
	Template struct {
		Src       string
		Dest      string
		Keys      []string
		Prefix    string
		Mode      *string
		Owner     string
		Group     string
		UID       *int64
		GID       *int64
		CheckCmd  string `toml:"check_cmd"`
		ReloadCmd string `toml:"reload_cmd"`
	} `toml:"template"`
}

// confdSettings are confd's own settings (its flags and confd.toml),
// which a template resource may carry by mistake (confd ignores them
// there): each with what zkconf has instead.
var confdSettings = func() map[string]string {
	m := map[string]string{
		"noop":            "`confagent --dry-run` shows what a generation would change, writing nothing",
		"sync-only":       "remove check_cmd or reload_cmd from the resource if they must not run",
		"keep-stage-file": "`confagent render --from DIR --out DIR` writes a generation's outputs for inspection",
		"onetime":         "`confagent --once` renders once and exits",
		"interval":        "confagent follows the root with ZooKeeper watches and re-reads it every resync_interval",
		"watch":           "confagent follows the root with ZooKeeper watches and re-reads it every resync_interval",
		"pgp-private-key": "confd's cget, cgets, cgetv and cgetvs are not provided: publish the values as they are, protected by the root's ACLs",
	}
	for _, k := range []string{"backend", "nodes", "scheme", "srv-domain", "srv-record", "client-cert", "client-key",
		"client-cakeys", "client-ca-keys", "auth-token", "auth-type", "basic-auth", "username", "password", "table",
		"separator", "app-id", "user-id", "role-id", "secret-id", "file", "filter", "path", "confdir", "config-file",
		"log-level", "version"} {
		m[k] = "confagent's own configuration says where and how it reads (zookeeper.servers, zookeeper.auth_file, zookeeper.tls, log.level)"
	}
	return m
}()

// confdFields are the fields of a template resource, for suggestions.
var confdFields = []string{"src", "dest", "keys", "prefix", "mode", "owner", "group", "uid", "gid", "check_cmd", "reload_cmd"}

// confdResourceGlob is what confd takes from conf.d (recursiveFindFiles
// with "*toml", matched against the file name).
const confdResourceGlob = "*toml"

// targetKey is the key target i's problems are reported under:
// "targets[i]", or for a confd resource "confd_dir[conf.d/FILE]".
func (c *Config) targetKey(i int) string {
	if o := c.Targets[i].Origin; o != "" {
		return "confd_dir[" + o + "]"
	}
	return fmt.Sprintf("targets[%d]", i)
}

// fieldName is the name of a target key in t's own source: confd's for
// a target made from a confd resource.
func (t *Target) fieldName(key string) string {
	if t.Origin != "" {
		switch key {
		case "check":
			return "check_cmd"
		case "reload":
			return "reload_cmd"
		}
	}
	return key
}

// validateSyntax checks what the template syntax decides: the syntax
// itself, and for confd templates that missing_key is not set and that
// every key reads the root or below it (the agent holds nothing else).
func (c *Config) validateSyntax(prefix string, t *Target, p *problems) {
	k := func(key string) string { return prefix + "." + key }
	switch t.Syntax {
	case "", SyntaxGo, SyntaxConfd:
	default:
		if !p.has(k("syntax")) {
			p.addf(k("syntax"), "unknown syntax %q: want %s (the default) or %s", t.Syntax, SyntaxGo, SyntaxConfd)
		}
		return
	}
	other := t.Type != TargetTemplate && t.Type != "" // reported under type if ""
	if t.Syntax != "" && other && !p.has(k("syntax")) {
		p.addf(k("syntax"), "only valid for type template (this target is %s)", t.Type)
	}
	if t.Syntax != SyntaxConfd || other {
		for _, f := range []struct {
			key string
			set bool
		}{{"prefix", t.Prefix != ""}, {"keys", len(t.Keys) > 0}} {
			if f.set && !p.has(k(f.key)) {
				p.addf(k(f.key), "only valid for type template with syntax: %s", SyntaxConfd)
			}
		}
		return
	}
	if t.Type != TargetTemplate {
		return
	}
	if t.MissingKey != "" && !p.has(k("missing_key")) {
		p.addf(k("missing_key"), "not valid with syntax: confd: a confd template prints <no value> for a missing map key, as confd does")
	}
	if p.has("root") || p.has(k("prefix")) || p.has(k("keys")) {
		return
	}
	eff := confd.Resource{Prefix: c.confdPrefix(t)}.EffectivePrefix("")
	for i, key := range t.Keys {
		node := strings.ReplaceAll(path.Join(eff, key), "/*", "")
		if node != c.Root && !strings.HasPrefix(node, c.Root+"/") {
			p.addf(fmt.Sprintf("%s[%d]", k("keys"), i),
				"%q under prefix %s reads the node %q, which is not the root %s or below it: an agent holds only its root's items (set prefix to the root, or a path below it)",
				key, eff, node, c.Root)
		}
	}
}

// confdPrefix is t's prefix, the root when not set.
func (c *Config) confdPrefix(t *Target) string {
	if t.Prefix == "" {
		return c.Root
	}
	return t.Prefix
}

// parseConfd parses a confd template as the agent does, so that a
// refused function (datetime, the DNS lookups) or an unknown one stops
// the configuration, every use named.
func parseConfd(name, text string) error {
	if _, err := confd.Parse(name, text, confd.FuncMap(confd.NewStore(nil), confd.Host{})); err != nil {
		return fmt.Errorf("cannot parse template: %w", err)
	}
	return nil
}

// confdTargets reads c.ConfdDir's template resources as targets, after
// checking confd.toml's prefix against c.ConfdPrefix; every problem goes
// to p, every warning to c.Warnings.
func (c *Config) confdTargets(p *problems) []Target {
	if tp, set, warns, err := readConfdTOML(c.ConfdDir); err != nil {
		p.add("confd_dir", err)
	} else {
		c.Warnings = append(c.Warnings, warns...)
		if set && tp != c.ConfdPrefix && !p.has("confd_prefix") {
			p.addf("confd_prefix", "%s sets prefix = %q, which confd puts in place of every resource's prefix: set confd_prefix: %s (or remove it from confd.toml if confd runs with another -prefix)",
				filepath.Join(c.ConfdDir, "confd.toml"), tp, tp)
		}
	}
	ts, warns := c.importConfd(p)
	c.Warnings = append(c.Warnings, warns...)
	return ts
}

// readConfdTOML reads confd's own configuration file in dir, confd.toml
// (where confd reads it when dir is /etc/confd), when there is one: its
// prefix, and warnings about its noop and sync-only.
func readConfdTOML(dir string) (prefix string, set bool, warnings []string, err error) {
	file := filepath.Join(dir, "confd.toml")
	var s struct {
		Prefix   *string
		Noop     bool
		SyncOnly bool `toml:"sync-only"`
	}
	if _, err := toml.DecodeFile(file, &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil, nil
		}
		return "", false, nil, fmt.Errorf("%s: %w", file, err)
	}
	if s.Noop {
		warnings = append(warnings, file+": noop = true: confd rendered without writing; confagent writes every target (confagent --dry-run previews)")
	}
	if s.SyncOnly {
		warnings = append(warnings, file+": sync-only = true: confd ran no check_cmd or reload_cmd; confagent runs them (remove them from the resources that must not run them)")
	}
	if s.Prefix == nil || *s.Prefix == "" {
		return "", false, warnings, nil
	}
	return *s.Prefix, true, warnings, nil
}

// importConfd converts c.ConfdDir's template resources, in the order
// confd reads them (a walk of conf.d, sorted), reporting every field it
// cannot honour into p under "confd_dir[conf.d/FILE].FIELD" and
// returning the warnings.
func (c *Config) importConfd(p *problems) ([]Target, []string) {
	confDir := filepath.Join(c.ConfdDir, "conf.d")
	var files []string
	err := filepath.WalkDir(confDir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := filepath.Match(confdResourceGlob, d.Name()); ok && !d.IsDir() {
			files = append(files, name)
		}
		return nil
	})
	if err != nil {
		p.addf("confd_dir", "cannot read the template resources: %w", err)
		return nil, nil
	}
	if len(files) == 0 {
		p.addf("confd_dir", "%s holds no template resource (no file named *toml)", confDir)
		return nil, nil
	}
	var targets []Target
	var warnings []string
	for _, file := range files {
		rel, _ := filepath.Rel(c.ConfdDir, file)
		t, warns, ok := c.importResource(file, filepath.ToSlash(rel), p)
		warnings = append(warnings, warns...)
		if ok {
			targets = append(targets, t)
		}
	}
	return targets, warnings
}

// importResource converts one resource file; ok is false when confd
// cannot read it. Its problems are in p, and the target is checked
// further by validateTargets, so that every problem of a resource is
// reported at once.
func (c *Config) importResource(file, rel string, p *problems) (t Target, warnings []string, ok bool) {
	key := "confd_dir[" + rel + "]"
	k := func(field string) string { return key + "." + field }
	warn := func(field, format string, args ...any) {
		warnings = append(warnings, k(field)+": "+fmt.Sprintf(format, args...))
	}
	var r confdResourceFile
	md, err := toml.DecodeFile(file, &r)
	if err != nil {
		p.addf(key, "not a template resource confd can read (confd fails it too): %w", err)
		return t, nil, false
	}
	outside := map[string]bool{}
	for _, u := range md.Undecoded() {
		field, inTemplate := strings.CutPrefix(u.String(), "template.")
		if !inTemplate {
			if top := u[0]; !outside[top] {
				outside[top] = true
				p.addf(key+"."+top, "confd reads only the [template] table of a resource (it ignores this): remove it")
			}
			continue
		}
		if strings.Contains(field, ".") {
			continue // below a field reported already
		}
		if alt, ok := confdSettings[strings.ReplaceAll(strings.ToLower(field), "_", "-")]; ok {
			p.addf(k(field), "a setting of confd itself (a flag or confd.toml), not of a template resource: confd ignores it here; remove it (%s)", alt)
			continue
		}
		msg := "not a field of confd's template resources (confd ignores it): remove it"
		if best := Suggest(strings.ToLower(field), confdFields); best != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", best)
		}
		p.addf(k(field), "%s", msg)
	}
	tr := r.Template
	name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(rel, "conf.d/"), "toml"), ".")
	name = strings.ReplaceAll(name, "/", ".")
	t = Target{
		Name: name, Type: TargetTemplate, Syntax: SyntaxConfd, Origin: rel,
		Dest: tr.Dest, Keys: tr.Keys, Reload: tr.ReloadCmd,
		Prefix:  confd.Resource{Prefix: tr.Prefix}.EffectivePrefix(c.ConfdPrefix),
		Timeout: DefaultTimeout, RenderTimeout: c.RenderTimeout, RenderSteps: c.RenderSteps,
	}
	if t.Keys == nil {
		t.Keys = []string{}
	}
	if !targetNameRE().MatchString(name) {
		p.addf(k("name"), "its target name %q (the file's name without toml) is not usable: use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit; rename the file", name)
	}
	if tr.Src == "" {
		p.addf(k("src"), "required: the template, relative to %s (confd fails the resource: empty src template)", filepath.Join(c.ConfdDir, "templates"))
	} else {
		t.Src = filepath.Join(c.ConfdDir, "templates", tr.Src)
	}
	if tr.Dest != "" && !filepath.IsAbs(tr.Dest) {
		p.addf(k("dest"), "%q is relative: confd writes it below its own working directory; write the absolute path", tr.Dest)
	}
	c.importMode(&t, tr.Mode, k, p, warn)
	c.importOwner(&t, tr.Owner, tr.UID, "owner", "uid", user.LookupId, k, p, warn)
	c.importOwner(&t, tr.Group, tr.GID, "group", "gid", func(id string) (*user.User, error) {
		_, err := user.LookupGroupId(id)
		return nil, err
	}, k, p, warn)
	if tr.CheckCmd != "" {
		check, note, err := confdCheck(tr.CheckCmd)
		if err != nil {
			p.add(k("check_cmd"), err)
		} else if note != "" {
			warn("check_cmd", "%s", note)
		}
		t.Check = check
	}
	return t, warnings, true
}

// importMode sets t.Mode from a resource's mode as confd reads it
// (strconv.ParseUint with base 0, then os.FileMode, whose Chmod keeps
// the permission bits only), refusing what confd reads differently from
// how it reads to a person.
func (c *Config) importMode(t *Target, mode *string, k func(string) string, p *problems, warn func(string, string, ...any)) {
	if mode == nil || *mode == "" {
		// confd: the mode dest has, 0644 for a new file.
		t.Mode = 0o644
		if fi, err := os.Stat(t.Dest); filepath.IsAbs(t.Dest) && err == nil {
			t.Mode = fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
			if t.Mode != 0o644 {
				warn("mode", "not set: confd keeps the mode %s has (%s), and so does this target, from now on even when someone changes it", t.Dest, octal(t.Mode))
			}
		}
		return
	}
	s := *mode
	n, err := strconv.ParseUint(s, 0, 32)
	switch {
	case err != nil:
		p.addf(k("mode"), "invalid mode %q (confd fails the resource: %v): write an octal mode like \"0644\"", s, err)
	case !strings.HasPrefix(s, "0") && n >= 8:
		p.addf(k("mode"), "%q is a decimal number to confd (strconv.ParseUint, base 0), which writes mode %s: write \"0%s\" for octal %s, or %q for what confd wrote",
			s, octal(os.FileMode(n).Perm()), s, s, octal(os.FileMode(n).Perm()))
	case n&^0o777 != 0:
		p.addf(k("mode"), "confd writes %q as mode %s (os.FileMode does not read the setuid, setgid and sticky bits of a number): write %q",
			s, octal(os.FileMode(n).Perm()), octal(os.FileMode(n).Perm()))
	default:
		t.Mode = os.FileMode(n)
	}
}

// importOwner sets t's owner (or group) from a resource's owner and uid
// (or group and gid).
func (c *Config) importOwner(t *Target, name string, id *int64, nameField, idField string,
	lookup func(string) (*user.User, error), k func(string) string, p *problems, warn func(string, string, ...any)) {
	noun := "group"
	if nameField == "owner" {
		noun = "user"
	}
	set := func(v string) {
		if nameField == "owner" {
			t.Owner = v
		} else {
			t.Group = v
		}
	}
	if id != nil && *id != -1 { // -1 is confd's "not set"
		if name != "" {
			p.addf(k(nameField), "both %s and %s are set: keep one (confd reads only %s)", nameField, idField, idField)
			return
		}
		if *id < 0 || *id >= 1<<32-1 {
			p.addf(k(idField), "%d is not a %s id", *id, noun)
			return
		}
		v := strconv.FormatInt(*id, 10)
		set(v)
		var unknownUser user.UnknownUserIdError
		var unknownGroup user.UnknownGroupIdError
		if _, err := lookup(v); errors.As(err, &unknownUser) || errors.As(err, &unknownGroup) {
			warn(idField, "%s names no %s of this host: the file is owned by the bare id, as confd made it", v, noun)
		}
		return
	}
	if name != "" {
		set(name)
		warn(nameField, "confd does not read %s (its resources have %s; the field is in its documentation only), so confd left the file to its own %s: this target gives it to %q",
			nameField, idField, noun, name)
	}
}

// octal formats a mode as confagent's configuration writes it.
func octal(m os.FileMode) string {
	n := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		n |= 0o1000
	}
	return fmt.Sprintf("%04o", n)
}

// srcPlaceholder is the one placeholder of a check command.
const srcPlaceholder = "{{.src}}"

// confdCheck turns a confd check_cmd into a check: confd executes it as
// a text/template with the staged file's path as .src, unquoted; the
// agent replaces {{.src}} with the path quoted for the shell. So the
// template is executed here with {{.src}} for .src (which writes any
// spelling of it, {{ .src }} included, as {{.src}}), and {{.src}} in
// double quotes, where the agent's quotes would end up in the path, is
// refused unless it is all the quotes hold ("{{.src}}" becomes {{.src}},
// noted).
func confdCheck(cmd string) (check, note string, err error) {
	tm, err := texttemplate.New("check_cmd").Option("missingkey=error").Parse(cmd)
	if err != nil {
		return "", "", fmt.Errorf("not a template confd can run (confd fails the check, and so never writes the file): %w", err)
	}
	var b strings.Builder
	if err := tm.Execute(&b, map[string]string{"src": srcPlaceholder}); err != nil {
		return "", "", fmt.Errorf("confd replaces only {{.src}} (it writes <no value> for anything else): remove the rest (%w)", err)
	}
	out := b.String()
	if n := strings.Count(out, `"`+srcPlaceholder+`"`); n > 0 {
		out = strings.ReplaceAll(out, `"`+srcPlaceholder+`"`, srcPlaceholder)
		note = `"{{.src}}" written as {{.src}}: the agent quotes the path for the shell itself`
	}
	if len(doubleQuoted(out, srcPlaceholder)) > 0 {
		return "", "", errors.New(`{{.src}} is inside double quotes with other text: the agent replaces it with the path in single quotes, which would become part of it there; take {{.src}} out of the double quotes`)
	}
	return out, note, nil
}

// doubleQuoted returns the offsets of the occurrences of s in the shell
// command cmd that are inside double quotes (POSIX sh quoting: single
// quotes, double quotes, backslash).
func doubleQuoted(cmd, s string) []int {
	var out []int
	single, double := false, false
	for i := 0; i < len(cmd); i++ {
		if strings.HasPrefix(cmd[i:], s) && double {
			out = append(out, i)
		}
		switch c := cmd[i]; {
		case c == '\\' && !single:
			i++
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		}
	}
	return out
}

// ConfdImport is a confd configuration directory converted into
// confagent targets (confagent import-confd).
type ConfdImport struct {
	// Dir is the confd directory, Prefix confd's -prefix ("" for none),
	// Root the zkconf root the targets read.
	Dir, Prefix, Root string
	// Targets are the converted targets, in confd's order.
	Targets []Target
	// Warnings are what was converted as it is but deserves a look.
	Warnings []string
}

// ImportConfd converts the confd directory dir as confd_dir does, with
// confd's -prefix prefix ("" when confd ran without) and root the root
// the agent follows, and checks the targets as Load does on this host.
// Every problem is reported at once, as Load reports them (a
// *multierror.Error of *FieldError behind "config: "), keyed
// "confd_dir[conf.d/FILE].FIELD"; the import's Warnings are set then
// too, but its targets must not be used.
func ImportConfd(dir, prefix, root string) (*ConfdImport, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", dir, err)
	}
	c := &Config{Root: root, ConfdDir: abs, ConfdPrefix: prefix,
		RenderTimeout: DefaultRenderTimeout, RenderSteps: DefaultRenderSteps}
	p := newProblems()
	if err := checkZKPath(root); err != nil {
		p.add("root", err)
	}
	c.Targets = c.confdTargets(p)
	if len(c.Targets) > 0 {
		c.validateTargets(p, true)
	}
	imp := &ConfdImport{Dir: abs, Prefix: prefix, Root: root, Targets: c.Targets, Warnings: c.Warnings}
	return imp, p.err()
}

// ConfdTOMLPrefix returns the prefix confd.toml in dir sets, and whether
// it sets one (confd reads /etc/confd/confd.toml; import-confd takes its
// prefix when not told one).
func ConfdTOMLPrefix(dir string) (string, bool, error) {
	prefix, set, _, err := readConfdTOML(dir)
	return prefix, set, err
}

// YAML returns the import as confagent configuration: the root and the
// targets, each under a comment naming its resource file, ready to be
// merged into confagent's configuration file.
func (imp *ConfdImport) YAML() ([]byte, error) {
	type target struct {
		Name   string   `yaml:"name"`
		Type   string   `yaml:"type"`
		Syntax string   `yaml:"syntax"`
		Src    string   `yaml:"src"`
		Dest   string   `yaml:"dest"`
		Prefix string   `yaml:"prefix"`
		Keys   []string `yaml:"keys,flow"`
		Mode   string   `yaml:"mode"`
		Owner  string   `yaml:"owner,omitempty"`
		Group  string   `yaml:"group,omitempty"`
		Check  string   `yaml:"check,omitempty"`
		Reload string   `yaml:"reload,omitempty"`
	}
	doc := struct {
		Root    string   `yaml:"root"`
		Targets []target `yaml:"targets"`
	}{Root: imp.Root}
	for _, t := range imp.Targets {
		doc.Targets = append(doc.Targets, target{
			Name: t.Name, Type: string(t.Type), Syntax: t.Syntax, Src: t.Src, Dest: t.Dest,
			Prefix: t.Prefix, Keys: t.Keys, Mode: octal(t.Mode), Owner: t.Owner, Group: t.Group,
			Check: t.Check, Reload: t.Reload,
		})
	}
	var n yaml.Node
	if err := n.Encode(doc); err != nil {
		return nil, err
	}
	prefix := "confd ran without -prefix: each target's prefix is its resource's"
	if imp.Prefix != "" {
		prefix = "confd's -prefix " + imp.Prefix + " replaces every resource's prefix, as in confd"
	}
	n.HeadComment = fmt.Sprintf("Converted by confagent import-confd from %s (%s).\n"+
		"Merge into confagent's configuration; confagent check-config checks it on the host.", imp.Dir, prefix)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "targets" {
			for j, item := range n.Content[i+1].Content {
				item.HeadComment = "from " + imp.Targets[j].Origin
			}
		}
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

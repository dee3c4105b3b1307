package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/zkconf/zkconf/internal/httpguard"
	"github.com/zkconf/zkconf/internal/template"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// maxTemplateSize bounds template files read at load time; a template is
// configuration written by hand, anything bigger is a mistake.
const maxTemplateSize = 1 << 20

// targetNameRE keeps target names usable as file names in state_dir and
// as metric label values without escaping. Compiled at first use, as
// modeRE.
var targetNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// Validate checks c and reports every problem at once (a
// *multierror.Error of *FieldError, see FieldError). It also completes c: it cleans target
// dests, resolves Owner and Group into UID and GID (-1 when unset) and
// parses template sources into Target.Template, because those steps are
// the checks. Load calls it; call it yourself on a Config built in code.
func (c *Config) Validate() error {
	p := newProblems()
	c.validate(p)
	return p.err()
}

func (c *Config) validate(p *problems) {
	c.validateZooKeeper(p)
	c.validateQuiesce(p)
	c.validateExec(p)
	c.validateRoots(p)
	if !p.has("meta") {
		if err := checkZKPath(c.Meta); err != nil {
			p.add("meta", err)
		}
	}
	if !p.has("state_dir") {
		if err := checkAbsPath(c.StateDir); err != nil {
			p.add("state_dir", err)
		} else {
			c.StateDir = filepath.Clean(c.StateDir)
		}
	}
	if !p.has("agent_id") {
		if err := checkAgentID(c.AgentID); err != nil {
			p.add("agent_id", err)
		}
	}
	if !p.has("http.listen") && c.HTTP.Listen != "" {
		if err := checkListen(c.HTTP.Listen); err != nil {
			p.addf("http.listen", "%q: %w (use \"\" to disable)", c.HTTP.Listen, err)
		}
	}
	if !p.has("http.allowed_hosts") {
		for _, h := range c.HTTP.AllowedHosts {
			if err := httpguard.ValidateAllowed([]string{h}); err != nil {
				p.add("http.allowed_hosts", err)
			}
		}
	}
	if !p.has("log.format") && c.Log.Format != LogText && c.Log.Format != LogJSON {
		p.addf("log.format", "unknown format %q: want text or json", c.Log.Format)
	}
	if !p.has("apply") && c.Apply != ApplyAll && c.Apply != ApplyIndependent {
		p.addf("apply", "unknown mode %q: want all or independent", c.Apply)
	}
	// "" is the zero value of a Config built in code: the default, follow.
	if !p.has("incarnation") && c.Incarnation != "" && c.Incarnation != "follow" && c.Incarnation != "refuse" {
		p.addf("incarnation", "unknown policy %q: want follow or refuse", c.Incarnation)
	}
	positive(p, "stale_after", c.StaleAfter)
	if c.MemoryLimit > 0 && c.MemoryLimit < MinMemoryLimit && !p.has("memory_limit") {
		p.addf("memory_limit", "%d bytes is too small: at least %dMiB, or auto, or off", c.MemoryLimit, MinMemoryLimit>>20)
	}
	positive(p, "resync_interval", c.ResyncInterval)
	// 0, in a Config built in code, is the default.
	if c.RenderTimeout < 0 && !p.has("render_timeout") {
		p.addf("render_timeout", "must not be negative")
	}
	if c.RenderSteps < 0 && !p.has("render_steps") {
		p.addf("render_steps", "must not be negative")
	}
	if !p.has("resync_jitter") {
		switch {
		case c.ResyncJitter < 0:
			p.addf("resync_jitter", "must not be negative")
		case !p.has("resync_interval") && c.ResyncInterval > 0 && c.ResyncJitter >= c.ResyncInterval:
			p.addf("resync_jitter", "%v must be shorter than resync_interval %v", c.ResyncJitter, c.ResyncInterval)
		}
	}
	c.validateTargets(p, true)
}

// rootName is what a root may be called (cache.NewGroup's rule): it names
// the root's state directory and its metrics.
var rootNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// validateRoots checks every root: its name, its path (a ZooKeeper path
// that overlaps neither meta nor another root), its auth_file. A Config
// built in code without Roots follows Root, named DefaultRootName.
func (c *Config) validateRoots(p *problems) {
	if c.Roots == nil && !p.has("roots") {
		c.Roots = []Root{{Name: DefaultRootName, Path: c.Root, key: "root"}}
	}
	for i := range c.Roots {
		r := &c.Roots[i]
		if r.key == "" {
			r.key = "roots." + r.Name
		}
		if !rootNameRE().MatchString(r.Name) {
			p.addf("roots."+r.Name, "root name %q: use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", r.Name)
		}
		if p.has(r.key) {
			continue
		}
		if err := checkZKPath(r.Path); err != nil {
			p.add(r.key, err)
			continue
		}
		if checkZKPath(c.Meta) == nil && !p.has("meta") && zkOverlap(r.Path, c.Meta) {
			p.addf("meta", "%q overlaps root %q: zkconf's bookkeeping must live outside the published config tree", c.Meta, r.Path)
		}
		for _, o := range c.Roots[:i] {
			if o.Path != "" && zkOverlap(r.Path, o.Path) {
				p.addf(r.key, "%q overlaps root %s (%q): each root is followed once, and no root may hold another", r.Path, o.Name, o.Path)
			}
		}
		if r.AuthFile != "" && !p.has("roots."+r.Name+".auth_file") {
			if err := checkAuthFile(r.AuthFile); err != nil {
				p.add("roots."+r.Name+".auth_file", err)
			}
		}
	}
}

// rootNames are the names of the configured roots.
func (c *Config) rootNames() []string {
	out := make([]string, len(c.Roots))
	for i, r := range c.Roots {
		out[i] = r.Name
	}
	return out
}

// validateTargetRoots checks which roots t reads: root names a configured
// root (required with several), roots (template targets only) names
// others, and every root the template's helpers name as a literal is one
// of them. It fills in Root when there is one root.
func (c *Config) validateTargetRoots(prefix string, t *Target, p *problems) {
	k := func(key string) string { return prefix + "." + key }
	names := c.rootNames()
	known := func(key, name string) bool {
		if slices.Contains(names, name) {
			return true
		}
		p.addf(key, "unknown root %q (roots: %s)", name, strings.Join(names, ", "))
		return false
	}
	switch {
	case p.has(k("root")) || len(names) == 0:
	case t.Root == "" && len(names) == 1:
		t.Root = names[0]
	case t.Root == "":
		p.addf(k("root"), "required with several roots: one of %s", strings.Join(names, ", "))
	default:
		known(k("root"), t.Root)
	}
	if len(t.Roots) > 0 && t.Type != TargetTemplate && t.Type != "" && !p.has(k("roots")) {
		p.addf(k("roots"), "only valid for type template (this target is %s): the other roots its template reads", t.Type)
	}
	if t.Syntax == SyntaxConfd && len(names) > 1 && !p.has(k("syntax")) {
		p.addf(k(t.fieldName("syntax")), "syntax confd reads one root: not valid in a configuration with several roots (yet)")
	}
	for i, r := range t.Roots {
		key := fmt.Sprintf("%s[%d]", k("roots"), i)
		switch {
		case r == t.Root:
			p.addf(key, "%q is the target's own root (key root): list only the other roots it reads", r)
		case slices.Contains(t.Roots[:i], r):
			p.addf(key, "%q is listed twice", r)
		default:
			known(key, r)
		}
	}
	if t.Template == nil || p.has(k("src")) {
		return
	}
	for _, r := range t.Template.RootRefs() {
		if r != t.Root && !slices.Contains(t.Roots, r) {
			p.addf(k("src"), "the template reads root %q, which the target does not list in roots (roots: [%s])", r, r)
		}
	}
}

func (c *Config) validateZooKeeper(p *problems) {
	zk := &c.ZooKeeper
	if !p.has("zookeeper.servers") {
		if len(zk.Servers) == 0 {
			p.addf("zookeeper.servers", "at least one server (host:port) is required")
		}
		seen := make(map[string]int)
		for i, s := range zk.Servers {
			key := fmt.Sprintf("zookeeper.servers[%d]", i)
			if err := checkHostPort(s); err != nil {
				p.addf(key, "%q: %w", s, err)
				continue
			}
			if j, dup := seen[s]; dup {
				p.addf(key, "%q is listed twice (also zookeeper.servers[%d])", s, j)
			}
			seen[s] = i
		}
	}
	positive(p, "zookeeper.session_timeout", zk.SessionTimeout)
	if zk.TLS.Enabled() || zk.TLS.ServerName != "" {
		if _, err := zk.TLS.Load(); err != nil {
			p.add("zookeeper.tls", err)
		}
	}
	if zk.AuthFile != "" && !p.has("zookeeper.auth_file") {
		if err := checkAuthFile(zk.AuthFile); err != nil {
			p.add("zookeeper.auth_file", err)
		}
	}
}

// checkAuthFile refuses credentials that are missing or readable by group
// or others, as sshd does for private keys.
func checkAuthFile(name string) error {
	if !filepath.IsAbs(name) {
		return fmt.Errorf("%q must be an absolute path", name)
	}
	_, err := zkclient.LoadAuth(name)
	return err
}

// validateTargets checks the targets; onHost adds what only holds on the
// host that runs the agent (owners and groups exist, no target writes the
// agent's own files).
func (c *Config) validateTargets(p *problems, onHost bool) {
	if len(c.Targets) == 0 && !p.has("targets") {
		p.addf("targets", "at least one target is required")
		return
	}
	names := make(map[string]int)
	dests := make(map[string]int)
	for i := range c.Targets {
		t := &c.Targets[i]
		prefix := c.targetKey(i)
		if p.has(prefix) {
			continue // not even a mapping
		}
		validateTarget(prefix, t, p, onHost)
		c.validateSyntax(prefix, t, p)
		c.validateTargetRoots(prefix, t, p)
		key := prefix + ".name"
		if j, dup := names[t.Name]; dup && t.Name != "" && !p.has(key) {
			p.addf(key, "duplicate name %q (also %s)", t.Name, c.targetKey(j))
		} else if !dup {
			names[t.Name] = i
		}
		key = prefix + ".dest"
		if p.has(key) {
			continue
		}
		if j, dup := dests[t.Dest]; dup {
			p.addf(key, "duplicate destination %s (also %s)", t.Dest, c.targetKey(j))
			continue
		}
		dests[t.Dest] = i
		if onHost {
			c.checkProtected(key, t, p)
		}
	}
	// A directory target owns everything under its dest: any other target
	// inside it would be deleted or shadowed at the next swap.
	for i := range c.Targets {
		d := &c.Targets[i]
		if d.Type != TargetDir || d.Dest == "" || p.has(c.targetKey(i)+".dest") {
			continue
		}
		for j := range c.Targets {
			o := &c.Targets[j]
			key := c.targetKey(j) + ".dest"
			if i == j || o.Dest == "" || o.Dest == d.Dest || p.has(key) {
				continue
			}
			if within(d.Dest, o.Dest) {
				p.addf(key, "%s is inside directory target %s (%s)", o.Dest, c.targetKey(i), d.Dest)
			}
		}
	}
}

// protectedPath is a file or directory of the agent's own that no target
// may write: a publisher able to replace the agent's configuration could
// change a check command and run code on every host.
type protectedPath struct {
	what, path string
}

// protected lists the agent's own files and directories: its
// configuration file, credentials, TLS files, template sources and the
// state directory (which holds the state file and its .d directory).
func (c *Config) protected(p *problems) []protectedPath {
	var out []protectedPath
	add := func(key, what, path string) {
		if path != "" && filepath.IsAbs(path) && !p.has(key) {
			out = append(out, protectedPath{what, filepath.Clean(path)})
		}
	}
	add("state_dir", "state_dir", c.StateDir)
	add("", "the configuration file", c.File)
	add("zookeeper.auth_file", "zookeeper.auth_file", c.ZooKeeper.AuthFile)
	for _, r := range c.Roots {
		add("roots."+r.Name+".auth_file", "roots."+r.Name+".auth_file", r.AuthFile)
	}
	add("zookeeper.tls", "zookeeper.tls.ca_file", c.ZooKeeper.TLS.CAFile)
	add("zookeeper.tls", "zookeeper.tls.cert_file", c.ZooKeeper.TLS.CertFile)
	add("zookeeper.tls", "zookeeper.tls.key_file", c.ZooKeeper.TLS.KeyFile)
	// Its resources are configuration: a target writing into it could
	// add a resource with its own commands.
	add("confd_dir", "confd_dir", c.ConfdDir)
	for i := range c.Targets {
		if c.Targets[i].Type == TargetTemplate {
			add("", c.targetKey(i)+".src", c.Targets[i].Src)
		}
	}
	return out
}

// checkProtected refuses a target whose dest is one of the agent's own
// files or directories or inside one, or (a dir target, which replaces its
// whole directory) contains one. Paths are compared cleaned and, where
// they exist, with symlinks resolved.
func (c *Config) checkProtected(key string, t *Target, p *problems) {
	dests := []string{t.Dest}
	if r := resolveExisting(t.Dest, t.FollowSymlink); r != t.Dest {
		dests = append(dests, r)
	}
	for _, pp := range c.protected(p) {
		prots := []string{pp.path}
		if r := resolveExisting(pp.path, true); r != pp.path {
			prots = append(prots, r)
		}
		inside, contains := false, false
		for _, d := range dests {
			for _, q := range prots {
				inside = inside || within(q, d)
				contains = contains || t.Type == TargetDir && within(d, q)
			}
		}
		switch {
		case inside && pp.what == "state_dir":
			p.addf(key, "%s is inside state_dir %s, which the agent manages itself", t.Dest, pp.path)
		case inside:
			p.addf(key, "%s is or is inside %s %s: a target must not write the agent's own configuration, credentials or TLS files (a publisher could change them)", t.Dest, pp.what, pp.path)
		case contains:
			p.addf(key, "directory %s contains %s %s: a dir target replaces everything under it", t.Dest, pp.what, pp.path)
		default:
			continue
		}
		return // one problem per dest is enough to fix it
	}
}

// resolveExisting returns path with the symlinks of its longest existing
// prefix resolved; the last component is resolved only when last is set
// (a target without follow_symlink replaces a symlink at its dest rather
// than what it points to). Whatever cannot be resolved is kept as is.
func resolveExisting(path string, last bool) string {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if last {
		if r, err := filepath.EvalSymlinks(path); err == nil {
			return r
		}
	}
	if dir == path {
		return path
	}
	return filepath.Join(resolveExisting(dir, true), base)
}

func validateTarget(prefix string, t *Target, p *problems, onHost bool) {
	k := func(key string) string { return prefix + "." + t.fieldName(key) }
	switch {
	case p.has(k("name")):
	case t.Name == "":
		p.add(k("name"), errRequired)
	case !targetNameRE().MatchString(t.Name):
		p.addf(k("name"), "%q: use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", t.Name)
	}
	switch t.Type {
	case TargetFile, TargetDir, TargetTemplate:
	case "":
		p.addf(k("type"), "required: file, dir or template")
	default:
		p.addf(k("type"), "unknown type %q: want file, dir or template", t.Type)
	}
	if !p.has(k("dest")) {
		if err := checkAbsPath(t.Dest); err != nil {
			p.add(k("dest"), err)
		} else if t.Dest = filepath.Clean(t.Dest); t.Dest == "/" {
			p.addf(k("dest"), "must not be the root directory")
		}
	}

	onlyFor := func(key string, set bool, want TargetType) {
		if set && t.Type != want && t.Type != "" && !p.has(k(key)) {
			p.addf(k(key), "only valid for type %s (this target is %s)", want, t.Type)
		}
	}
	onlyFor("src", t.Src != "", TargetTemplate)
	onlyFor("dir_mode", t.DirMode != 0, TargetDir)
	onlyFor("item", t.Item != "", TargetFile)
	onlyFor("items", len(t.Items) > 0, TargetDir)
	onlyFor("grace_period", t.GracePeriod != 0, TargetDir)
	onlyFor("render_timeout", t.RenderTimeout != 0, TargetTemplate)
	onlyFor("render_steps", t.RenderSteps != 0, TargetTemplate)
	onlyFor("missing_key", t.MissingKey != "", TargetTemplate)
	if _, err := template.ParseMissingKey(t.MissingKey); err != nil && !p.has(k("missing_key")) {
		p.add(k("missing_key"), err)
	}
	if t.GracePeriod < 0 && !p.has(k("grace_period")) {
		p.addf(k("grace_period"), "must not be negative (0 removes the previous directory at once)")
	}
	if t.FollowSymlink && t.Type == TargetDir {
		p.addf(k("follow_symlink"), "not valid for type dir: the directory's links are managed by the agent")
	}
	switch t.Type {
	case TargetTemplate:
		if !p.has(k("src")) {
			if err := t.parseTemplate(); err != nil {
				p.add(k("src"), err)
			}
		}
	case TargetFile:
		switch {
		case p.has(k("item")):
		case t.Item == "":
			p.addf(k("item"), "required for type file: the name of the item to write")
		default:
			if err := manifest.ValidatePath(t.Item); err != nil {
				p.add(k("item"), err)
			}
		}
	case TargetDir:
		if t.Items != nil && len(t.Items) == 0 && !p.has(k("items")) {
			p.addf(k("items"), "selects no item: omit the key to select all items")
		}
		if t.SrcDir != "" && !p.has(k("src")) {
			if dir, ok := strings.CutSuffix(t.SrcDir, "/"); !ok || manifest.ValidatePath(dir) != nil {
				msg := fmt.Sprintf("%q: for a dir target, the directory of the items to render, as an item path ending in '/' (conf.d/)", t.SrcDir)
				if err := manifest.ValidatePath(dir); ok && err != nil {
					msg += ": " + err.Error()
				}
				p.add(k("src"), errors.New(msg))
			}
		}
		if t.DirMode != 0 && !p.has(k("dir_mode")) {
			switch {
			case t.DirMode&^(os.ModePerm|os.ModeSetgid|os.ModeSticky) != 0:
				p.addf(k("dir_mode"), "%v: only permission, setgid and sticky bits are allowed", t.DirMode)
			case t.DirMode.Perm()&0o700 != 0o700:
				p.addf(k("dir_mode"), "%04o: the owner needs rwx (the agent removes old generations)", t.DirMode.Perm())
			}
		}
		for i, g := range t.Items {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				p.addf(fmt.Sprintf("%s[%d]", k("items"), i), "invalid glob %q", g)
			}
		}
	}

	if !p.has(k("mode")) {
		switch {
		case t.Mode&^(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0:
			p.addf(k("mode"), "%v: only permission bits are allowed", t.Mode)
		case t.Mode.Perm() == 0:
			p.addf(k("mode"), "0000 would make the file unreadable to everyone but root")
		}
	}
	t.UID, t.GID = -1, -1
	if onHost {
		var err error
		if t.UID, err = resolveID(t.Owner, lookupUser); err != nil {
			p.add(k("owner"), err)
		}
		if t.GID, err = resolveID(t.Group, lookupGroup); err != nil {
			p.add(k("group"), err)
		}
	}
	if t.Check != "" && !p.has(k("check")) {
		if _, err := expandCheck(t.Check, "'/staged'"); err != nil {
			p.addf(k("check"), "invalid placeholder (only {{.src}} is available): %w", err)
		}
	}
	positive(p, k("timeout"), t.Timeout)
	if t.RenderTimeout < 0 && !p.has(k("render_timeout")) {
		p.addf(k("render_timeout"), "must not be negative")
	}
	if t.RenderSteps < 0 && !p.has(k("render_steps")) {
		p.addf(k("render_steps"), "must not be negative")
	}
}

// parseTemplate reads and parses Src with the render helpers, so that a
// template error stops the agent at start-up rather than at the first
// generation.
func (t *Target) parseTemplate() error {
	if t.Src == "" {
		return errors.New("required for type template: the template file")
	}
	if !filepath.IsAbs(t.Src) {
		return fmt.Errorf("%q must be an absolute path", t.Src)
	}
	f, err := os.Open(t.Src)
	if err != nil {
		return fmt.Errorf("cannot read template: %w", err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxTemplateSize+1))
	if err != nil {
		return fmt.Errorf("cannot read template: %w", err)
	}
	if len(text) > maxTemplateSize {
		return fmt.Errorf("template %s is larger than %d bytes", t.Src, maxTemplateSize)
	}
	switch t.Syntax {
	case SyntaxConfd:
		return parseConfd(filepath.Base(t.Src), string(text))
	case "", SyntaxGo:
	default:
		return nil // an unknown syntax is reported under its own key
	}
	// An unknown missing_key is reported under its own key.
	mk, _ := template.ParseMissingKey(t.MissingKey)
	tmpl, err := template.ParseWith(filepath.Base(t.Src), string(text), template.Options{MissingKey: mk})
	if err != nil {
		return fmt.Errorf("cannot parse template: %w", err)
	}
	t.Template = tmpl
	return nil
}

func lookupUser(name string) (string, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return "", fmt.Errorf("unknown user %q", name)
	}
	if err != nil {
		return "", fmt.Errorf("look up user %q: %w", name, err)
	}
	return u.Uid, nil
}

func lookupGroup(name string) (string, error) {
	g, err := user.LookupGroup(name)
	var unknown user.UnknownGroupError
	if errors.As(err, &unknown) {
		return "", fmt.Errorf("unknown group %q", name)
	}
	if err != nil {
		return "", fmt.Errorf("look up group %q: %w", name, err)
	}
	return g.Gid, nil
}

// resolveID turns a user or group name or numeric id into a numeric id;
// "" means unset (-1). Numeric ids are taken as they are, without lookup:
// a container may well use ids that /etc/passwd does not list.
func resolveID(s string, lookup func(string) (string, error)) (int, error) {
	if s == "" {
		return -1, nil
	}
	id := s
	if _, err := strconv.ParseUint(s, 10, 32); err != nil {
		if id, err = lookup(s); err != nil {
			return -1, err
		}
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil || n == 1<<32-1 { // (uid_t)-1 means "no change" to chown
		return -1, fmt.Errorf("%q: invalid numeric id %q", s, id)
	}
	return int(n), nil
}

func positive(p *problems, key string, d time.Duration) {
	if !p.has(key) && d <= 0 {
		p.addf(key, "must be a positive duration, like \"10s\"")
	}
}

func positiveCount(p *problems, key string, n int64) {
	if !p.has(key) && n <= 0 {
		p.addf(key, "must be a positive number, like 10000000")
	}
}

func checkAbsPath(s string) error {
	switch {
	case s == "":
		return errRequired
	case !filepath.IsAbs(s):
		return fmt.Errorf("%q must be an absolute path", s)
	case strings.ContainsRune(s, 0):
		return errors.New("must not contain NUL")
	}
	return nil
}

// within reports whether child is parent or below it; both are clean and
// absolute.
func within(parent, child string) bool {
	parent, child = filepath.Clean(parent), filepath.Clean(child)
	if parent == child {
		return true
	}
	if parent != string(filepath.Separator) {
		parent += string(filepath.Separator)
	}
	return strings.HasPrefix(child, parent)
}

// checkHostPort validates "host:port" with a numeric port in 1-65535. The
// host may be empty (all interfaces) for listen addresses.
func checkHostPort(s string) error { return checkAddr(s, 1) }

// checkListen validates a listen address: like checkHostPort, and port 0
// asks for any free port (the agent logs the one it got).
func checkListen(s string) error { return checkAddr(s, 0) }

func checkAddr(s string, minPort int) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port")
	}
	if strings.ContainsAny(host, " /") {
		return errors.New("invalid host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < minPort || n > 65535 {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}

// checkZKPath validates an absolute ZooKeeper path.
func checkZKPath(s string) error {
	switch {
	case s == "":
		return errRequired
	case !strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q: a ZooKeeper path must start with /", s)
	case s == "/":
		return errors.New("must not be the ZooKeeper root")
	case strings.HasSuffix(s, "/"):
		return fmt.Errorf("%q: must not end with /", s)
	}
	for i, seg := range strings.Split(s[1:], "/") {
		switch {
		case seg == "":
			return fmt.Errorf("%q: empty path segment", s)
		case seg == "." || seg == "..":
			return fmt.Errorf("%q: relative segments (. or ..) are not allowed", s)
		case i == 0 && seg == "zookeeper":
			return fmt.Errorf("%q: /zookeeper is reserved by ZooKeeper", s)
		}
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%q: control characters are not allowed", s)
	}
	return nil
}

// zkOverlap reports whether one ZooKeeper path is the other or below it.
func zkOverlap(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// checkAgentID keeps the agent id usable as a single ZooKeeper node name.
func checkAgentID(s string) error {
	switch {
	case s == "":
		return errRequired
	case s == "." || s == "..":
		return fmt.Errorf("%q is not a valid node name", s)
	case strings.Contains(s, "/"):
		return fmt.Errorf("%q must not contain /", s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%q must not contain control characters", s)
	case len(s) > 255:
		return errors.New("longer than 255 bytes")
	}
	return nil
}

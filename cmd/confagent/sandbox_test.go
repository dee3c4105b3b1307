package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/cmd/internal/config"
)

// This file holds a small evaluator of systemd's file-system sandbox, for
// the tests that prove the shipped units let the documented configuration
// write what it writes.
//
// Scope: the [Service] directives the shipped units and their drop-ins
// use: ProtectSystem= (no, yes, full, strict), ProtectHome= (no, yes,
// read-only, tmpfs), PrivateTmp=, PrivateDevices=, ReadWritePaths=,
// ReadOnlyPaths=, InaccessiblePaths= (with their "-" and "+" prefixes), and
// StateDirectory=, CacheDirectory=, LogsDirectory=, RuntimeDirectory=
// (writable below /var/lib, /var/cache, /var/log, /run). Lists accumulate
// across the unit and its drop-ins, and an empty assignment resets them, as
// in systemd; other keys take the last value; %i expands to the instance.
// A path's access is that of the most specific rule covering it, except
// that an inaccessible or private tree stays so below (systemd's
// ReadWritePaths= remounts a path of the tree the service sees; it cannot
// reach into a tree replaced by an empty or private one). Not modelled:
// BindPaths=, TemporaryFileSystem=, RootDirectory=, mount propagation and
// the paths systemd itself adds for other options; a unit using them must
// grow the evaluator first (sandboxOf fails on them).

// access is what a sandboxed service may do at a path.
type access int

const (
	accessWrite        access = iota // the host's file, writable
	accessReadOnly                   // the host's file, read-only
	accessPrivate                    // writable, but a tree of the service's own: the host never sees it
	accessInaccessible               // hidden
)

func (a access) String() string {
	return [...]string{"writable", "read-only", "private to the service", "inaccessible"}[a]
}

type pathRule struct {
	path   string
	access access
	from   string // the directive, for messages
}

// sandbox is the evaluated file-system view of one unit.
type sandbox struct {
	rules []pathRule
}

// unitDirectives reads the [Service] section of a unit file and its
// drop-ins in order and returns each key's values as systemd accumulates
// them (an empty assignment resets the list).
func unitDirectives(t *testing.T, instance string, files ...string) map[string][]string {
	t.Helper()
	d := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		section := ""
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || line[0] == '#' || line[0] == ';':
				continue
			case line[0] == '[':
				section = line
				continue
			case section != "[Service]":
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not a key=value line: %q", f, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			v = strings.ReplaceAll(strings.ReplaceAll(v, "%i", instance), "%%", "%")
			if v == "" {
				d[k] = nil
				continue
			}
			d[k] = append(d[k], v)
		}
	}
	return d
}

// last is the value that wins for a single-valued key.
func last(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	return vals[len(vals)-1]
}

// splitPaths splits a path-list value (whitespace-separated, double quotes
// group) and strips systemd's "-" (ignore if missing) and "+" prefixes.
func splitPaths(v string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	flush := func() {
		if have {
			out = append(out, strings.TrimLeft(cur.String(), "-+"))
		}
		cur.Reset()
		have = false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted, have = !quoted, true
		case c == '\\' && quoted && i+1 < len(v):
			i++
			cur.WriteByte(v[i])
		case (c == ' ' || c == '\t') && !quoted:
			flush()
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	flush()
	return out
}

func yes(v string) bool {
	switch strings.ToLower(v) {
	case "yes", "true", "on", "1":
		return true
	}
	return false
}

// sandboxOf evaluates the unit file and its drop-ins (in order).
func sandboxOf(t *testing.T, instance string, files ...string) *sandbox {
	t.Helper()
	d := unitDirectives(t, instance, files...)
	for _, k := range []string{"BindPaths", "BindReadOnlyPaths", "TemporaryFileSystem", "RootDirectory", "RootImage", "PrivateMounts", "MountAPIVFS"} {
		if len(d[k]) > 0 {
			t.Fatalf("%s is set: the sandbox evaluator does not model it (sandbox_test.go)", k)
		}
	}
	s := &sandbox{}
	add := func(from string, a access, paths ...string) {
		for _, p := range paths {
			s.rules = append(s.rules, pathRule{path: filepath.Clean(p), access: a, from: from})
		}
	}
	switch ps := strings.ToLower(last(d["ProtectSystem"])); {
	case ps == "strict":
		add("ProtectSystem=strict", accessReadOnly, "/")
	case ps == "full":
		add("ProtectSystem=full", accessReadOnly, "/usr", "/boot", "/efi", "/etc")
	case yes(ps):
		add("ProtectSystem=yes", accessReadOnly, "/usr", "/boot", "/efi")
	}
	switch ph := strings.ToLower(last(d["ProtectHome"])); {
	case ph == "read-only":
		add("ProtectHome=read-only", accessReadOnly, "/home", "/root", "/run/user")
	case ph == "tmpfs":
		add("ProtectHome=tmpfs", accessPrivate, "/home", "/root", "/run/user")
	case yes(ph):
		add("ProtectHome=yes", accessInaccessible, "/home", "/root", "/run/user")
	}
	if yes(last(d["PrivateTmp"])) {
		add("PrivateTmp=yes", accessPrivate, "/tmp", "/var/tmp")
	}
	if yes(last(d["PrivateDevices"])) {
		add("PrivateDevices=yes", accessPrivate, "/dev")
	}
	for key, a := range map[string]access{"ReadWritePaths": accessWrite, "ReadOnlyPaths": accessReadOnly, "InaccessiblePaths": accessInaccessible} {
		for _, v := range d[key] {
			add(key+"="+v, a, splitPaths(v)...)
		}
	}
	for key, base := range map[string]string{"StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "LogsDirectory": "/var/log", "RuntimeDirectory": "/run"} {
		for _, v := range d[key] {
			for _, p := range splitPaths(v) {
				add(key+"="+v, accessWrite, filepath.Join(base, strings.SplitN(p, ":", 2)[0]))
			}
		}
	}
	return s
}

// access returns what the service may do at p, and the rule that decides.
func (s *sandbox) access(p string) (access, string) {
	p = filepath.Clean(p)
	var covering []pathRule
	for _, r := range s.rules {
		if within(p, r.path) {
			covering = append(covering, r)
		}
	}
	// Longest path first; for one path the more restrictive rule first.
	sort.SliceStable(covering, func(i, j int) bool {
		if len(covering[i].path) != len(covering[j].path) {
			return len(covering[i].path) > len(covering[j].path)
		}
		return covering[i].access > covering[j].access
	})
	for i := len(covering) - 1; i >= 0; i-- { // outermost first
		if r := covering[i]; r.access >= accessPrivate {
			return r.access, r.from
		}
	}
	if len(covering) == 0 {
		return accessWrite, "no rule"
	}
	return covering[0].access, covering[0].from
}

// exampleConfig writes examples/agent/confagent.yaml to a temporary file
// with its template path pointed at the shipped template (the one path
// that is not on this host), and returns its path.
func exampleConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/agent/confagent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := filepath.Abs("../../examples/agent/templates/upstreams.conf.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "/etc/confagent/templates/upstreams.conf.tmpl", tmpl, 1)
	if text == string(b) {
		t.Fatal("the example no longer names /etc/confagent/templates/upstreams.conf.tmpl, the path make install installs the shipped template to")
	}
	p := filepath.Join(t.TempDir(), "confagent.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeDropin runs `confagent systemd-dropin --write` for the unit into a
// temporary systemd directory and returns the unit's copy there and the
// drop-in file.
func writeDropin(t *testing.T, cfg, unit, instance string, extra ...string) (unitFile, dropin string) {
	t.Helper()
	sd := t.TempDir()
	name := unit
	if instance != "" {
		name = strings.Replace(unit, "@.", "@"+instance+".", 1)
	}
	var out, errb bytes.Buffer
	args := append([]string{"systemd-dropin", "--config", cfg, "--unit", name, "--write", "--systemd-dir", sd}, extra...)
	if code := run(args, &out, &errb); code != exitOK {
		t.Fatalf("confagent %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "systemd", unit))
	if err != nil {
		t.Fatal(err)
	}
	unitFile = filepath.Join(sd, name)
	if err := os.WriteFile(unitFile, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/confagent", binary)), 0o644); err != nil {
		t.Fatal(err)
	}
	dropin = filepath.Join(sd, name+".d", dropinName)
	if _, err := os.Stat(dropin); err != nil {
		t.Fatalf("--write did not write the drop-in: %v\n%s", err, out.String())
	}
	return unitFile, dropin
}

// writeDirs are the directories a target writes in: a file or template
// target renames a temporary file into dest's directory; a dir target
// creates dest in its parent and swaps links inside dest.
func writeDirs(typ, dest string) []string {
	if typ == "dir" {
		return []string{filepath.Dir(dest), dest}
	}
	return []string{filepath.Dir(dest)}
}

// exampleDests parses the example's targets through the config package
// (the same loader the agent uses).
func exampleDests(t *testing.T, cfg string) (dests map[string][]string, stateDir string) {
	t.Helper()
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dests = map[string][]string{}
	for _, tg := range c.Targets {
		dests[tg.Name] = writeDirs(string(tg.Type), tg.Dest)
	}
	return dests, c.StateDir
}

// TestExampleWritableUnderUnits: with the drop-in that systemd-dropin makes
// from examples/agent/confagent.yaml, every directory the example writes in
// (each target's, and state_dir) is writable under both shipped units, and
// systemd-analyze verify accepts the units with the drop-in.
func TestExampleWritableUnderUnits(t *testing.T) {
	cfg := exampleConfig(t)
	dests, stateDir := exampleDests(t, cfg)
	if len(dests) != 3 {
		t.Fatalf("example has %d targets, want one of each kind", len(dests))
	}
	for _, unit := range []string{"confagent.service", "confagent@.service"} {
		instance := ""
		if strings.Contains(unit, "@") {
			instance = "web"
		}
		unitFile, dropin := writeDropin(t, cfg, unit, instance)
		sb := sandboxOf(t, instance, unitFile, dropin)
		for name, dirs := range dests {
			for _, d := range dirs {
				if a, why := sb.access(d); a != accessWrite {
					t.Errorf("%s: target %s writes in %s, which is %s (%s)", unit, name, d, a, why)
				}
			}
		}
		if a, why := sb.access(stateDir); a != accessWrite {
			t.Errorf("%s: state_dir %s is %s (%s)", unit, stateDir, a, why)
		}
		verifyUnit(t, unitFile)
	}
}

// TestUnitAloneDoesNotCoverExample: without the drop-in, the shipped unit
// keeps /etc/nginx/conf.d (the example's template target) read-only, which
// is what the drop-in is for and what shows the evaluator can say no.
func TestUnitAloneDoesNotCoverExample(t *testing.T) {
	sb := sandboxOf(t, "", filepath.Join("..", "..", "systemd", "confagent.service"))
	for _, p := range []string{"/etc/nginx/conf.d", "/etc/myapp"} {
		if a, why := sb.access(p); a != accessReadOnly {
			t.Errorf("%s without the drop-in is %s (%s), want read-only", p, a, why)
		}
	}
	if a, _ := sb.access("/var/lib/confagent"); a != accessWrite {
		t.Errorf("the state directory is %s without the drop-in, want writable (StateDirectory=)", a)
	}
	for p, want := range map[string]access{"/home/ops/x": accessInaccessible, "/tmp/x": accessPrivate, "/usr/bin": accessReadOnly} {
		if a, why := sb.access(p); a != want {
			t.Errorf("%s is %s (%s), want %s", p, a, why, want)
		}
	}
}

// TestSandboxEvaluatorRules pins the evaluator's precedence rules on a
// synthetic unit, so the tests above cannot pass by a lenient evaluator.
func TestSandboxEvaluatorRules(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "u.service")
	drop := filepath.Join(dir, "d.conf")
	if err := os.WriteFile(unit, []byte("[Unit]\nReadWritePaths=/ignored\n[Service]\nProtectSystem=strict\nProtectHome=yes\nReadWritePaths=/etc/a\nReadWritePaths=-/etc/b \"/etc/with space\"\nReadOnlyPaths=/etc/a/ro\nReadWritePaths=/home/x\nStateDirectory=st/%i\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(drop, []byte("[Service]\nReadWritePaths=\nReadWritePaths=/etc/c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := sandboxOf(t, "i1", unit)
	for p, want := range map[string]access{
		"/etc/a/f": accessWrite, "/etc/b": accessWrite, "/etc/with space/f": accessWrite,
		"/etc/a/ro/f": accessReadOnly, "/etc/ab": accessReadOnly, "/ignored": accessReadOnly,
		"/home/x": accessInaccessible, "/var/lib/st/i1": accessWrite, "/var/lib/st": accessReadOnly,
	} {
		if a, why := sb.access(p); a != want {
			t.Errorf("%s is %s (%s), want %s", p, a, why, want)
		}
	}
	sb = sandboxOf(t, "i1", unit, drop) // the empty assignment resets the list
	for p, want := range map[string]access{"/etc/a": accessReadOnly, "/etc/c/f": accessWrite} {
		if a, why := sb.access(p); a != want {
			t.Errorf("with the drop-in: %s is %s (%s), want %s", p, a, why, want)
		}
	}
}

// verifyUnit runs systemd-analyze verify on a unit (its drop-in directory
// beside it is read too) and fails on any complaint.
func verifyUnit(t *testing.T, unitFile string) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is required (scripts/ensure-zookeeper.sh installs it): ", err)
	}
	cmd := exec.Command(sa, "verify", "./"+filepath.Base(unitFile))
	cmd.Dir = filepath.Dir(unitFile)
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/internal/errlist"
)

// dropinName is the file systemd-dropin --write creates in the unit's
// drop-in directory. systemd reads every *.conf there, in lexical order.
const dropinName = "zkconf-paths.conf"

// unitStateDir is the directory the shipped units create with
// StateDirectory=confagent (confagent@NAME: a directory below it). systemd
// creates it before it builds the sandbox, so a ReadWritePaths= entry for
// it never fails for lack of the directory.
const unitStateDir = "/var/lib/confagent"

// hiddenBySandbox returns the trees the shipped units' ProtectHome=yes,
// PrivateTmp=yes and PrivateDevices=yes (and the kernel file systems) hide
// or replace: a ReadWritePaths= entry cannot make a destination there
// reach the host.
func hiddenBySandbox() []struct{ dir, why string } {
	return []struct{ dir, why string }{
		{"/home", "ProtectHome=yes makes it inaccessible"},
		{"/root", "ProtectHome=yes makes it inaccessible"},
		{"/run/user", "ProtectHome=yes makes it inaccessible"},
		{"/tmp", "PrivateTmp=yes gives the service its own /tmp: nothing else would see the file"},
		{"/var/tmp", "PrivateTmp=yes gives the service its own /var/tmp: nothing else would see the file"},
		{"/dev", "PrivateDevices=yes gives the service its own /dev"},
		{"/proc", "a kernel file system"},
		{"/sys", "a kernel file system"},
	}
}

// grant is one directory the drop-in makes writable, and why.
type grant struct {
	path    string
	reasons []string
}

type dropinFlags struct {
	write      bool
	unit       string
	systemdDir string
	readWrite  []string
}

// dropinCommand is `confagent systemd-dropin`.
func dropinCommand(f *flags, stdout, stderr io.Writer, code *int) *cobra.Command {
	var df dropinFlags
	cmd := &cobra.Command{
		Use:   "systemd-dropin",
		Short: "Print (or write) the systemd drop-in that lets the unit write this configuration's targets",
		Long: `systemd-dropin prints a systemd drop-in for the confagent unit with one
ReadWritePaths= line per directory the configuration writes, so that the
agent can write its targets under the unit's ProtectSystem=strict:

  - a file or template target: the directory of dest (the new content is a
    temporary file there, renamed over dest), and with follow_symlink the
    directory of the file an existing symlink at dest points to;
  - a dir target: the parent of dest (the agent creates dest and swaps the
    ..data symlink inside it);
  - state_dir;
  - every --read-write PATH: what check and reload commands write (they run
    inside the same sandbox: a checker that writes a cache, lock, pid or log
    file needs its directory; "nginx -t" of a whole nginx.conf opens nginx's
    pid and log files, the example's check avoids that).

With --write it writes the drop-in to
<systemd-dir>/<unit>.d/zkconf-paths.conf instead of printing it; then run
"systemctl daemon-reload" and restart the unit. Run it again whenever targets
or state_dir change. A destination under /home, /root, /run/user, /tmp,
/var/tmp, /dev, /proc or /sys is an error: the unit's sandbox hides those
trees whatever the drop-in says. A directory that does not exist yet is
reported (systemd refuses to start a unit whose ReadWritePaths= names a
missing path): create it first.

Exit codes: 0 success, 1 the drop-in could not be written, 2 usage, 3 invalid
configuration or a destination the sandbox hides.`,
		Example: `  # review what the unit would be allowed to write
  confagent systemd-dropin --config /etc/confagent/confagent.yaml

  # install it, with a checker's cache directory, and apply it
  confagent systemd-dropin --read-write /var/cache/myapp --write
  systemctl daemon-reload && systemctl restart confagent

  # an instance of the template unit: confagent@web.service
  confagent systemd-dropin --config /etc/confagent/web.yaml --unit confagent@web.service --write`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			*code = runDropin(f.config, df, stdout, stderr)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&df.write, "write", false, "write the drop-in into the unit's drop-in directory instead of printing it")
	fl.StringVar(&df.unit, "unit", "confagent.service", "the unit the drop-in is for")
	fl.StringVar(&df.systemdDir, "systemd-dir", "/etc/systemd/system", "with --write: the directory holding the unit's drop-in directory")
	fl.StringArrayVar(&df.readWrite, "read-write", nil, "also make this absolute path writable (repeatable): what check and reload commands write")
	return cmd
}

func runDropin(path string, df dropinFlags, stdout, stderr io.Writer) int {
	if !strings.HasSuffix(df.unit, ".service") || strings.ContainsRune(df.unit, '/') {
		fmt.Fprintf(stderr, "confagent systemd-dropin: --unit %q: want a service unit name such as confagent.service or confagent@web.service\n", df.unit)
		return exitUsage
	}
	cfg, err := config.Load(path)
	if err != nil {
		printConfigErr(stderr, path, err)
		return exitConfig
	}
	grants, err := dropinGrants(cfg, df.readWrite)
	if err != nil {
		fmt.Fprintf(stderr, "confagent systemd-dropin: %s: %v\n", path, err)
		return exitConfig
	}
	for _, g := range grants {
		if _, err := os.Stat(g.path); errors.Is(err, os.ErrNotExist) && !within(g.path, unitStateDir) {
			fmt.Fprintf(stderr, "warning: %s does not exist: create it before starting the unit (systemd refuses to start a unit whose ReadWritePaths= names a missing path)\n", g.path)
		}
	}
	text := dropinText(regenerateCommand(path, df), grants)
	if !df.write {
		fmt.Fprint(stdout, text)
		return exitOK
	}
	dir := filepath.Join(df.systemdDir, df.unit+".d")
	// #nosec G301 -- systemd's drop-in directories are world-readable
	err = os.MkdirAll(dir, 0o755)
	if err != nil {
		fmt.Fprintf(stderr, "confagent systemd-dropin: %v\n", err)
		return exitError
	}
	file := filepath.Join(dir, dropinName)
	if err := durable.Replace(file, "."+dropinName+".tmp", []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "confagent systemd-dropin: %s: %v\n", file, err)
		return exitError
	}
	if err := durable.SyncDir(dir); err != nil {
		fmt.Fprintf(stderr, "confagent systemd-dropin: %s: %v\n", dir, err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s (%d paths); apply it with: systemctl daemon-reload && systemctl restart %s\n", file, len(grants), df.unit)
	return exitOK
}

// dropinGrants returns the directories cfg writes, each once, sorted, a
// directory inside another one listed left out (the outer grant covers
// it). It reports every destination the sandbox hides at once.
func dropinGrants(cfg *config.Config, extra []string) ([]grant, error) {
	byPath := map[string]*grant{}
	var errs []error
	add := func(p, reason string) {
		p = filepath.Clean(p)
		for _, h := range hiddenBySandbox() {
			if within(p, h.dir) {
				errs = append(errs, fmt.Errorf("%s: %s is under %s, which the unit's sandbox hides (%s)", reason, p, h.dir, h.why))
				return
			}
		}
		if p == "/" {
			errs = append(errs, fmt.Errorf("%s: would make the whole file system writable", reason))
			return
		}
		g := byPath[p]
		if g == nil {
			g = &grant{path: p}
			byPath[p] = g
		}
		g.reasons = append(g.reasons, reason)
	}
	for _, t := range cfg.Targets {
		what := fmt.Sprintf("target %s (%s %s)", t.Name, t.Type, t.Dest)
		add(filepath.Dir(t.Dest), what)
		if t.Type != config.TargetDir && t.FollowSymlink {
			if real := followLinks(t.Dest); real != t.Dest {
				add(filepath.Dir(real), what+" through its symlink to "+real)
			}
		}
	}
	add(cfg.StateDir, "state_dir")
	for _, p := range extra {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("--read-write %q: must be an absolute path", p))
			continue
		}
		add(p, "--read-write")
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var out []grant
	for _, p := range paths {
		if n := len(out); n > 0 && within(p, out[n-1].path) {
			out[n-1].reasons = append(out[n-1].reasons, byPath[p].reasons...)
			continue
		}
		out = append(out, *byPath[p])
	}
	return out, errlist.Join(errs...)
}

// followLinks follows symlinks at p, as the agent does for a target with
// follow_symlink, to the file it replaces (which need not exist yet); p
// itself when it is not a symlink or cannot be followed (the agent reports
// that when it writes).
func followLinks(p string) string {
	for hops := 0; hops < 40; hops++ {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
	}
	return p
}

// within reports whether p is dir or inside it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// regenerateCommand is the command line that makes the same drop-in again.
func regenerateCommand(configPath string, df dropinFlags) string {
	args := []string{"confagent", "systemd-dropin", "--config", configPath}
	if df.unit != "confagent.service" {
		args = append(args, "--unit", df.unit)
	}
	for _, p := range df.readWrite {
		args = append(args, "--read-write", p)
	}
	return strings.Join(args, " ")
}

// dropinText renders the drop-in: a header saying where it comes from,
// then one commented ReadWritePaths= line per grant.
func dropinText(command string, grants []grant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by: %s\n", command)
	b.WriteString("# The directories this configuration writes, made writable under the\n")
	b.WriteString("# unit's ProtectSystem=strict. Generate it again after changing targets\n")
	b.WriteString("# or state_dir; see docs/install.md.\n")
	b.WriteString("[Service]\n")
	for _, g := range grants {
		for _, r := range g.reasons {
			fmt.Fprintf(&b, "# %s\n", r)
		}
		fmt.Fprintf(&b, "ReadWritePaths=%s\n", systemdEscapePath(g.path))
	}
	return b.String()
}

// systemdEscapePath quotes a path for a ReadWritePaths= line: systemd
// splits the value on whitespace and expands % specifiers and C escapes.
func systemdEscapePath(p string) string {
	if !strings.ContainsAny(p, " \t\"'\\%") {
		return p
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%")
	return `"` + r.Replace(p) + `"`
}

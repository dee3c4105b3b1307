package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// confdCase is testdata/confd-migration: items (flat keys) confpush
// publishes to /myapp, a confd directory whose resources read them (an
// nginx upstream from gets, application properties from getv with
// defaults, getenv and seq, a value with newlines and UTF-8), and what
// confd renders from them, written out from confd's semantics.
const confdCase = "testdata/confd-migration"

// copyConfdDir copies testdata's confd directory src below dir, with
// @OUT@ in the resources replaced by out, and returns the copy.
func copyConfdDir(t *testing.T, src, dir, out string) string {
	t.Helper()
	dst := filepath.Join(dir, "confd")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), bytes.ReplaceAll(b, []byte("@OUT@"), []byte(out)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestConfdDirectoryRendersAsConfd is the migration of a confd host:
// confpush publishes the keys to /myapp on a real ZooKeeper, and a real
// confagent renders the confd directory's resources from that root, once
// through import-confd's configuration and once reading the directory
// itself (confd_dir). Both write exactly what confd renders for the same
// keys and environment, with the resources' modes; the check ran on the
// staged file, the reload after the commit, and a second run changes
// nothing and runs neither.
func TestConfdDirectoryRendersAsConfd(t *testing.T) {
	c := sharedZooKeeper.For(t)
	if out, err := exec.Command(buildConfpush(t), "--zk", c.ConnString(), "--root", "/myapp", "publish", filepath.Join(confdCase, "items")).CombinedOutput(); err != nil {
		t.Fatalf("confpush publish: %v\n%s", err, out)
	}
	t.Setenv("APP_REGION", "eu-west-1")
	t.Setenv("APP_ZONE", "") // empty is unset to confd's getenv
	for _, how := range []string{"import-confd", "confd_dir"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			confdDir := copyConfdDir(t, filepath.Join(confdCase, "confd"), dir, out)
			cfg := fmt.Sprintf("zookeeper:\n  servers: [%s]\nstate_dir: %s\nagent_id: confd-host\nhttp:\n  listen: \"\"\n",
				c.ConnString(), filepath.Join(dir, "state"))
			var stdout, stderr bytes.Buffer
			if how == "import-confd" {
				frag := filepath.Join(dir, "targets.yaml")
				if code := run([]string{"import-confd", confdDir, "--root", "/myapp", "--out", frag}, &stdout, &stderr); code != 0 {
					t.Fatalf("import-confd exit %d: %s", code, stderr.String())
				}
				if want := "3 targets written to " + frag + "\n"; stderr.String() != want {
					t.Fatalf("import-confd said %q, want %q (no warning)", stderr.String(), want)
				}
				b, err := os.ReadFile(frag)
				if err != nil {
					t.Fatal(err)
				}
				cfg += string(b)
			} else {
				cfg += "root: /myapp\nconfd_dir: " + confdDir + "\n"
			}
			cfgPath := filepath.Join(dir, "confagent.yaml")
			writeAtomic(t, cfgPath, cfg)
			if code := run([]string{"--config", cfgPath, "--once"}, &stdout, &stderr); code != 0 {
				t.Fatalf("--once exit %d: %s", code, stderr.String())
			}
			for name, mode := range map[string]os.FileMode{"nginx.conf": 0o644, "app.properties": 0o640, "motd": 0o644} {
				want, err := os.ReadFile(filepath.Join(confdCase, "want", name))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from what confd renders:\n got %q\nwant %q", name, got, want)
				}
				if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Mode().Perm() != mode {
					t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, mode)
				}
			}
			checked := readLines(t, filepath.Join(out, "checked"))
			if len(checked) != 1 || filepath.Dir(checked[0]) != out || checked[0] == filepath.Join(out, "nginx.conf") {
				t.Fatalf("the check examined %q, want one staged file beside %s", checked, filepath.Join(out, "nginx.conf"))
			}
			if _, err := os.Stat(checked[0]); !os.IsNotExist(err) {
				t.Fatalf("the staged file %s is still there: %v", checked[0], err)
			}
			if r := readLines(t, filepath.Join(out, "reloads")); len(r) != 1 {
				t.Fatalf("reloads %q, want one", r)
			}
			if code := run([]string{"--config", cfgPath, "--once"}, &stdout, &stderr); code != 0 {
				t.Fatalf("second --once exit %d: %s", code, stderr.String())
			}
			if c, r := readLines(t, filepath.Join(out, "checked")), readLines(t, filepath.Join(out, "reloads")); len(c) != 1 || len(r) != 1 {
				t.Fatalf("an unchanged output was checked (%q) or reloaded (%q) again", c, r)
			}
		})
	}
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestConfdFieldsNotHonoured: a resource field confagent cannot honour
// is reported by import-confd and by check-config (confd_dir), naming
// the file and the field, with every other problem and warning, and
// nothing is written.
func TestConfdFieldsNotHonoured(t *testing.T) {
	dir := t.TempDir()
	bad, err := filepath.Abs(filepath.Join(confdCase, "bad"))
	if err != nil {
		t.Fatal(err)
	}
	wantProblems := []string{
		"  - confd_dir[conf.d/app.toml].noop: a setting of confd itself (a flag or confd.toml), not of a template resource: confd ignores it here; remove it (`confagent --dry-run` shows what a generation would change, writing nothing)\n",
		`  - confd_dir[conf.d/app.toml].mode: "644" is a decimal number to confd (strconv.ParseUint, base 0), which writes mode 0204: write "0644" for octal 644, or "0204" for what confd wrote` + "\n",
		"  - confd_dir[conf.d/app.toml].check_cmd: {{.src}} is inside double quotes with other text",
		"  - confd_dir[conf.d/app.toml].src: cannot parse template: app.tmpl:1:8: datetime is not available in zkconf",
	}
	warning := "confd_dir[conf.d/app.toml].uid: 4242420 names no user of this host: the file is owned by the bare id, as confd made it\n"

	frag := filepath.Join(dir, "targets.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import-confd", bad, "--prefix", "/myapp", "--out", frag}, &stdout, &stderr); code != exitConfig {
		t.Fatalf("import-confd exit %d, want %d: %s", code, exitConfig, stderr.String())
	}
	if !strings.Contains(stderr.String(), bad+": 4 problem(s):\n") || !strings.Contains(stderr.String(), "warning: "+warning) {
		t.Fatalf("import-confd:\n%s", stderr.String())
	}
	for _, w := range wantProblems {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("import-confd does not say %q:\n%s", w, stderr.String())
		}
	}
	if _, err := os.Stat(frag); !os.IsNotExist(err) || stdout.Len() > 0 {
		t.Fatalf("import-confd wrote something: %v, %q", err, stdout.String())
	}

	cfgPath := filepath.Join(dir, "confagent.yaml")
	writeAtomic(t, cfgPath, "zookeeper:\n  servers: [127.0.0.1:1]\nroot: /myapp\nconfd_dir: "+bad+"\nconfd_prefix: /myapp\n")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"check-config", "--config", cfgPath}, &stdout, &stderr); code != exitConfig {
		t.Fatalf("check-config exit %d, want %d: %s", code, exitConfig, stderr.String())
	}
	for _, w := range wantProblems {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("check-config does not say %q:\n%s", w, stderr.String())
		}
	}
}

// TestImportConfdUsage: import-confd without a root to read, or asked to
// overwrite a file, refuses before reading anything.
func TestImportConfdUsage(t *testing.T) {
	confd, err := filepath.Abs(filepath.Join(confdCase, "confd"))
	if err != nil {
		t.Fatal(err)
	}
	exists := filepath.Join(t.TempDir(), "targets.yaml")
	writeAtomic(t, exists, "keep me\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import-confd", confd}, "confagent import-confd: --root is required when confd runs without a prefix: the zkconf root whose items the resources read\n"},
		{[]string{"import-confd", confd, "--root", "/myapp", "--out", exists}, "confagent import-confd: --out " + exists + " exists: choose another file, or --force to replace it\n"},
		{[]string{"import-confd"}, "confagent: accepts 1 arg(s), received 0\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitUsage || stderr.String() != tt.want || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", tt.args, code, stderr.String(), exitUsage, tt.want)
		}
	}
	if b, err := os.ReadFile(exists); err != nil || string(b) != "keep me\n" {
		t.Fatalf("--out without --force changed the file: %q, %v", b, err)
	}
}

package packaging

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

func TestMain(m *testing.M) {
	if os.Getenv("ZKCONF_PACKAGING_TEST") == "" {
		fmt.Println("packaging tests not run: make deb-test runs them (ZKCONF_PACKAGING_TEST=1)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// repo is the repository root.
func repo(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func command(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// throwAway is a throw-away root: an overlay whose lower layer is this
// host's own root file system and whose upper layer is a temporary
// directory, mounted afresh (in a private mount namespace, with /proc and
// /dev) for every command run in it. dpkg and the maintainer scripts run
// for real in it, and change nothing of the host; what they wrote is in
// upper.
type throwAway struct {
	upper, work, merged string
}

func newThrowAway(t *testing.T) *throwAway {
	t.Helper()
	dir := t.TempDir()
	r := &throwAway{upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work"), merged: filepath.Join(dir, "merged")}
	for _, d := range []string{r.upper, r.work, r.merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// run runs script with sh in the root and returns its output and error.
func (r *throwAway) run(script string) (string, error) {
	mount := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=/,upperdir=%[1]s,workdir=%[2]s %[3]s
mount -t proc proc %[3]s/proc
mount --rbind /dev %[3]s/dev
exec chroot %[3]s /bin/sh -ec "$0"`, r.upper, r.work, r.merged)
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", mount, script).CombinedOutput()
	return string(out), err
}

func (r *throwAway) must(t *testing.T, script string) string {
	t.Helper()
	out, err := r.run(script)
	if err != nil {
		t.Fatalf("in the throw-away root: %s: %v\n%s", script, err, out)
	}
	return out
}

// TestDebPackage builds the package, checks it with lintian, installs it
// with dpkg -i into a throw-away root and checks what it installed: files,
// modes, conffiles, the confagent user, units that systemd-analyze accepts,
// nothing enabled or started, documentation whose links all resolve; then
// reinstalls it (the upgrade path) and purges it.
func TestDebPackage(t *testing.T) {
	out := t.TempDir()
	buildStart := time.Now()
	// xz at its fastest preset: what lintian and dpkg see is the same
	// data.tar.xz of the same files; the release preset costs 28 more
	// CPU-seconds beside make test's other tests.
	t.Setenv("DEB_XZ_LEVEL", "0")
	deb := strings.TrimSpace(command(t, repo(t), "packaging/deb/build.sh", out))
	t.Logf("build.sh: %v", time.Since(buildStart).Round(time.Second))
	if !strings.HasSuffix(deb, ".deb") {
		t.Fatalf("build.sh printed %q", deb)
	}
	t.Logf("built %s", filepath.Base(deb))

	// lintian with every level shown; overrides are the package's own
	// (each justified in packaging/deb/lintian-overrides).
	lintStart := time.Now()
	lint := exec.Command("lintian", "--pedantic", "-I", "--fail-on", "error,warning,info,pedantic", deb)
	lintOut, err := lint.CombinedOutput()
	if err != nil {
		t.Fatalf("lintian: %v\n%s", err, lintOut)
	}
	t.Logf("lintian: %v", time.Since(lintStart).Round(time.Second))
	for _, l := range strings.Split(string(lintOut), "\n") {
		if len(l) > 2 && strings.Contains("EWIPX", l[:1]) && l[1] == ':' {
			t.Errorf("lintian: %s", l)
		}
	}

	r := newThrowAway(t)
	if err := os.MkdirAll(filepath.Join(r.upper, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	command(t, "", "cp", deb, filepath.Join(r.upper, "tmp", "zkconf.deb"))
	// man-db's trigger (rebuilding the whole manual index) costs a minute
	// per dpkg run here, and proves nothing about this package.
	installStart := time.Now()
	r.must(t, "rm -f /var/lib/man-db/auto-update; dpkg -i /tmp/zkconf.deb")
	t.Logf("dpkg -i: %v", time.Since(installStart).Round(time.Second))

	// Files and modes, as the installed system sees them (on a merged-/usr
	// system /lib is /usr/lib).
	want := map[string]string{
		"/usr/bin/confagent":                                 "755 root root",
		"/usr/bin/confpush":                                  "755 root root",
		"/lib/systemd/system/confagent.service":              "644 root root",
		"/lib/systemd/system/confagent@.service":             "644 root root",
		"/etc/confagent/confagent.yaml":                      "640 root confagent",
		"/etc/confagent/templates/upstreams.conf.tmpl":       "644 root root",
		"/usr/share/man/man1/confagent.1.gz":                 "644 root root",
		"/usr/share/man/man1/confpush.1.gz":                  "644 root root",
		"/usr/share/bash-completion/completions/confagent":   "644 root root",
		"/usr/share/bash-completion/completions/confpush":    "644 root root",
		"/usr/share/zsh/vendor-completions/_confagent":       "644 root root",
		"/usr/share/fish/vendor_completions.d/confpush.fish": "644 root root",
		"/usr/share/doc/zkconf/README.md":                    "644 root root",
		"/usr/share/doc/zkconf/copyright":                    "644 root root",
		"/usr/share/doc/zkconf/changelog.Debian.gz":          "644 root root",
		"/usr/share/doc/zkconf/docs/install.md":              "644 root root",
	}
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, l := range strings.Split(strings.TrimSpace(r.must(t, "stat -L -c '%n %a %U %G' "+strings.Join(paths, " ")+" 2>&1 || true")), "\n") {
		p, got, _ := strings.Cut(l, " ")
		if w, ok := want[p]; !ok || got != w {
			t.Errorf("installed: %s", l)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("not installed: %s", p)
	}
	// The units name the installed binary, never /usr/local.
	unit := r.must(t, "cat /lib/systemd/system/confagent.service")
	if strings.Contains(unit, "/usr/local") || !strings.Contains(unit, "ExecStart=/usr/bin/confagent --config /etc/confagent/confagent.yaml") {
		t.Errorf("confagent.service does not run /usr/bin/confagent:\n%s", unit)
	}

	checks := r.must(t, `dpkg-query -W -f='${Conffiles}\n' zkconf
echo "user: $(getent passwd confagent)"
echo "group: $(stat -c %G /etc/confagent/confagent.yaml)"
echo "enabled: $(ls /etc/systemd/system/multi-user.target.wants/ 2>/dev/null | grep confagent || true)"
/usr/bin/confagent --version
/usr/bin/confagent check-config; echo "check-config: $?"
for d in $(sed -n 's/^Documentation=//p' /lib/systemd/system/confagent.service /lib/systemd/system/confagent@.service); do
	[ -e "${d#file://}" ] || echo "documentation not installed: $d"; done
systemd-analyze verify /lib/systemd/system/confagent.service 2>&1 | grep -v -e 'Failed to .*bus' -e 'not been booted' || true
echo verified`)
	for _, want := range []string{
		"/etc/confagent/confagent.yaml ", "/etc/confagent/templates/upstreams.conf.tmpl ",
		"user: confagent:x:", ":/var/lib/confagent:/usr/sbin/nologin",
		"group: confagent", "enabled: \n", "check-config: 0", "verified",
	} {
		if !strings.Contains(checks, want) {
			t.Errorf("installed package: no %q in:\n%s", want, checks)
		}
	}
	if v := regexp.MustCompile(`(?m)^confagent .*$`).FindString(checks); v == "" || strings.Contains(v, "dev") {
		t.Errorf("--version does not name the build: %q", v)
	}
	if strings.Contains(checks, "documentation not installed") {
		t.Errorf("a unit's Documentation= is not installed:\n%s", checks)
	}
	if regexp.MustCompile(`(?m)^/lib/systemd/system/confagent.service:`).MatchString(checks) {
		t.Errorf("systemd-analyze verify complains:\n%s", checks)
	}
	checkDocLinks(t, filepath.Join(r.upper, "usr/share/doc/zkconf"))

	// The upgrade path: configure with the old version given.
	r.must(t, "dpkg -i /tmp/zkconf.deb")
	// Purge: files, conffiles and the agent's state go, the user stays.
	r.must(t, "install -d -m 0700 /var/lib/confagent && touch /var/lib/confagent/snapshot.state && dpkg --purge zkconf")
	gone := r.must(t, `for p in /usr/bin/confagent /etc/confagent/confagent.yaml /lib/systemd/system/confagent.service /var/lib/confagent; do
	[ -e "$p" ] && echo "left behind: $p"; done
getent passwd confagent >/dev/null && echo "user kept"; true`)
	if strings.Contains(gone, "left behind") || !strings.Contains(gone, "user kept") {
		t.Errorf("after purge:\n%s", gone)
	}
}

// checkDocLinks: every relative link of every installed Markdown file leads
// to an installed file or directory.
func checkDocLinks(t *testing.T, doc string) {
	t.Helper()
	link := regexp.MustCompile(`\]\(([^)\s]+)`)
	n := 0
	err := filepath.WalkDir(doc, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				rel, _ := filepath.Rel(doc, p)
				t.Errorf("installed %s links to %s, which is not installed", rel, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("only %d relative links checked in %s", n, doc)
	}
}

// TestContainerImage builds the Dockerfile's final stage as written, with
// buildah and without a network: the build stage, which needs the golang
// image from a registry, is replaced by one holding what its script
// (packaging/docker/rootfs.sh) makes, run here with this host's Go. It
// checks the image's configuration and contents, then runs it with runc:
// confagent exec as PID 1, as user 65532, against a real ZooKeeper, renders
// a target, starts a child (a static test program mounted into the
// container) that leaves an orphan, and reaps the orphan.
func TestContainerImage(t *testing.T) {
	root := repo(t)
	dir := t.TempDir()
	ctxDir := filepath.Join(dir, "context")
	if err := os.Mkdir(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	command(t, root, "packaging/docker/rootfs.sh", filepath.Join(ctxDir, "out"))
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := strings.LastIndex(string(dockerfile), "\nFROM ")
	if final < 0 || !strings.HasPrefix(string(dockerfile[final+1:]), "FROM scratch\n") {
		t.Fatal("the Dockerfile's last stage is not FROM scratch")
	}
	containerfile := "FROM scratch AS build\nCOPY out /out\n" + string(dockerfile[final:])
	if err := os.WriteFile(filepath.Join(ctxDir, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	// A storage of the test's own, removed with it.
	b := func(args ...string) string {
		t.Helper()
		return command(t, "", "buildah", append([]string{"--storage-driver", "vfs", "--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run")}, args...)...)
	}
	t.Cleanup(func() {
		_ = exec.Command("buildah", "--storage-driver", "vfs", "--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"), "rm", "--all").Run()
	})
	b("build", "--quiet", "-f", filepath.Join(ctxDir, "Containerfile"), "-t", "localhost/zkconf-test", ctxDir)
	var img struct {
		OCIv1 struct {
			Config struct {
				User       string   `json:"User"`
				Entrypoint []string `json:"Entrypoint"`
				Cmd        []string `json:"Cmd"`
			} `json:"config"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal([]byte(b("inspect", "--type", "image", "localhost/zkconf-test")), &img); err != nil {
		t.Fatal(err)
	}
	if c := img.OCIv1.Config; c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/confagent"}) || !slices.Equal(c.Cmd, []string{"--config", "/etc/confagent/confagent.yaml"}) {
		t.Errorf("image configuration: %+v", c)
	}
	ctr := strings.TrimSpace(b("from", "--quiet", "localhost/zkconf-test"))
	mnt := strings.TrimSpace(b("mount", ctr))
	for p, want := range map[string]struct {
		mode fs.FileMode
		uid  uint32
	}{
		"confagent": {0o755, 0}, "confpush": {0o755, 0}, "etc/ssl/certs/ca-certificates.crt": {0o644, 0},
		"etc/passwd": {0o644, 0}, "var/lib/confagent": {fs.ModeDir | 0o755, 65532}, "tmp": {fs.ModeDir | fs.ModeSticky | 0o777, 0},
	} {
		st, err := os.Lstat(filepath.Join(mnt, p))
		if err != nil {
			t.Errorf("image: /%s: %v", p, err)
			continue
		}
		if st.Mode() != want.mode || st.Sys().(*syscall.Stat_t).Uid != want.uid {
			t.Errorf("image: /%s: %v uid %d, want %v uid %d", p, st.Mode(), st.Sys().(*syscall.Stat_t).Uid, want.mode, want.uid)
		}
	}
	entries, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"confagent", "confpush", "etc", "tmp", "var"}; !slices.Equal(names, want) {
		t.Errorf("image root holds %q, want %q (no shell, nothing else)", names, want)
	}

	// Run it: a ZooKeeper on this host (the container shares its network),
	// a work directory mounted at /work, writable by 65532.
	zk := zktest.Start(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zk.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pub, err := publish.New(zkclient.Fixed(conn, sess), "/config")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := pub.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte("generation one")}}); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(filepath.Join(work, "out"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{work, filepath.Join(work, "out")} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(work, "child"), "./testdata/child")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the child: %v\n%s", err, out)
	}
	cfg := fmt.Sprintf(`zookeeper:
  servers: [%s]
root: /config
agent_id: in-a-container
http:
  listen: ""
targets:
  - name: app
    type: file
    item: app.conf
    dest: /work/out/app.conf
    mode: "0644"
`, strings.Join(zk.Addrs(), ", "))
	if err := os.WriteFile(filepath.Join(work, "confagent.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command("buildah", "--storage-driver", "vfs", "--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"),
		"run", "--runtime", "runc", "--network", "host", "--volume", work+":/work", ctr, "--",
		"/confagent", "--config", "/work/confagent.yaml", "exec", "--start-timeout", "1m", "--", "/work/child", "/work/child.log", "/work/out/app.conf")
	runOut, err := run.CombinedOutput()
	log, _ := os.ReadFile(filepath.Join(work, "child.log"))
	if err != nil {
		t.Fatalf("confagent exec in the image: %v\n%s\nchild log:\n%s", err, runOut, log)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	// The child is PID 2 or more (confagent exec's init is PID 1), runs as
	// 65532 and sees the rendered file; the orphan is adopted by PID 1.
	if len(lines) != 2 || !regexp.MustCompile(`^pid=\d+ ppid=\d+ uid=65532 file=generation one$`).MatchString(lines[0]) ||
		lines[1] != "orphan adopted by 1 and reaped" {
		t.Fatalf("child log:\n%s\nconfagent:\n%s", log, runOut)
	}
	if !strings.Contains(string(runOut), "exec: child exited") {
		t.Errorf("confagent's log:\n%s", runOut)
	}
}

// TestDockerfileDownloadsModules replays the Dockerfile's build stage up
// to its `go mod download`: only what the COPY lines before it bring into
// the context, then the download, through the module proxy `make test`
// uses for everything else (GOPROXY as the environment has it). Not
// against the module cache alone: `go mod download` wants every module
// of the graph, and a fresh machine's cache lacks those no Linux build
// needs (cobra's mousetrap, say): that failed the first fresh clone of
// session 38, with every Dockerfile line right. TestContainerImage replaces the build
// stage, so without this test a replace directive naming a directory the
// early COPY lines leave out (third_party/semver was one) breaks the
// image's build unnoticed.
func TestDockerfileDownloadsModules(t *testing.T) {
	root := repo(t)
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.TempDir()
	downloaded := false
	for _, line := range strings.Split(string(dockerfile), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "RUN" && strings.Join(f[1:], " ") == "go mod download" {
			downloaded = true
			break
		}
		if f[0] != "COPY" || len(f) < 3 || strings.HasPrefix(f[1], "--") {
			continue
		}
		if f[1] == "." {
			t.Fatal("the Dockerfile copies the whole context before go mod download: the module layer is no longer cached apart from the sources")
		}
		dest := f[len(f)-1]
		for _, src := range f[1 : len(f)-1] {
			to := filepath.Join(ctx, dest) // COPY dir/ dir/
			if dest == "./" || dest == "." {
				to = filepath.Join(ctx, filepath.Base(src)) // COPY go.mod go.sum ./
			}
			command(t, "", "cp", "-a", filepath.Join(root, strings.TrimSuffix(src, "/")), to)
		}
	}
	if !downloaded {
		t.Fatal("the Dockerfile has no RUN go mod download")
	}
	cmd := exec.Command("go", "mod", "download")
	cmd.Dir = ctx
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod download with what the Dockerfile copied before it: %v\n%s", err, out)
	}
}

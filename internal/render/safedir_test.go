//go:build unix

package render

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkFixture is a directory that others may write to (shared, mode 0777
// like a careless /srv/app), a directory of the agent's (victim) holding
// a file the agent may replace, and the paths a target below shared uses.
type linkFixture struct {
	shared, victim, precious string
}

func newLinkFixture(t *testing.T) linkFixture {
	t.Helper()
	base := t.TempDir()
	f := linkFixture{shared: filepath.Join(base, "shared"), victim: filepath.Join(base, "victim")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(f.shared, 0o755))
	must(os.Chmod(f.shared, 0o777)) // umask-proof
	must(os.Mkdir(f.victim, 0o755))
	f.precious = filepath.Join(f.victim, "important.conf")
	mustWrite(t, f.precious, "precious", 0o600)
	return f
}

// swap replaces the directory shared/name with a symbolic link to victim,
// as a user who may write to shared can.
func (f linkFixture) swap(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(f.shared, name)
	if err := os.Rename(p, p+".orig"); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(f.victim, p); err != nil {
		t.Fatal(err)
	}
}

// untouched fails unless victim holds exactly what it held.
func (f linkFixture) untouched(t *testing.T) {
	t.Helper()
	if got, err := os.ReadFile(f.precious); err != nil || string(got) != "precious" {
		t.Fatalf("the file behind the link was replaced: %q %v", got, err)
	}
	entries, err := os.ReadDir(f.victim)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"important.conf"}) {
		t.Fatalf("something was written behind the link: %v", names)
	}
}

// TestWriteFileRefusesUntrustedParentLink: a directory on the way to the
// destination that has become a symbolic link in a directory others may
// write to is not written through, by WriteFile, Stage (with CreateDirs)
// or a Commit whose directory was swapped after Stage; Matches reports
// it. The error names the link, its target and why it is not trusted.
func TestWriteFileRefusesUntrustedParentLink(t *testing.T) {
	f := newLinkFixture(t)
	dest := filepath.Join(f.shared, "linkdir", "important.conf")
	if err := os.Mkdir(filepath.Join(f.shared, "linkdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(dest, []byte("v1"), opts(0o640)); err != nil {
		t.Fatalf("the first write, no link yet: %v", err)
	}
	f.swap(t, "linkdir")

	o := opts(0o640)
	o.CreateDirs = true
	_, err := WriteFile(dest, []byte("evil"), o)
	var ue *UntrustedLinkError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUntrustedLink) || ue.Link != filepath.Join(f.shared, "linkdir") || ue.Target != f.victim {
		t.Fatalf("WriteFile through the link: %v, want an UntrustedLinkError for %s", err, filepath.Join(f.shared, "linkdir"))
	}
	for _, want := range []string{filepath.Join(f.shared, "linkdir") + " is a symbolic link (to " + f.victim + ") in " + f.shared,
		"every user may write to (mode 0777)", "not followed, nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if _, err := Stage(dest, []byte("evil"), o); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("Stage: %v", err)
	}
	if s, err := StageIfChanged(dest, []byte("evil"), o); s != nil || !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("StageIfChanged: %v", err)
	}
	if _, err := Matches(dest, []byte("precious"), o); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("Matches: %v", err)
	}
	if _, err := RemoveStaleTemps(dest, false); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("RemoveStaleTemps: %v", err)
	}
	// A link in a missing part of the path: not created through either.
	deep := filepath.Join(f.shared, "linkdir", "sub", "app.conf")
	if _, err := WriteFile(deep, []byte("evil"), o); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("CreateDirs through the link: %v", err)
	}
	f.untouched(t)

	// Swapped between Stage and Commit.
	other := filepath.Join(f.shared, "other", "important.conf")
	if err := os.Mkdir(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Stage(other, []byte("evil"), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	f.swap(t, "other")
	if changed, err := s.Commit(); changed || !errors.Is(err, ErrUntrustedLink) {
		t.Fatalf("Commit after the swap: %v %v", changed, err)
	}
	f.untouched(t)
	if left := tempFiles(t, filepath.Join(f.shared, "other.orig")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteFileFollowsTrustedLinks: a link that only root or the process's
// user could have made (in a directory only they may write to, or their
// own link in a sticky one) is followed, like /etc/nginx ->
// /opt/nginx/etc; as root, links in a directory another user owns, and
// another user's link in a sticky directory, are not.
func TestWriteFileFollowsTrustedLinks(t *testing.T) {
	base := t.TempDir()
	etc, opt := filepath.Join(base, "etc"), filepath.Join(base, "opt", "nginx", "etc")
	for _, d := range []string{etc, opt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(opt, filepath.Join(etc, "nginx")); err != nil {
		t.Fatal(err)
	}
	o := opts(0o644)
	o.CreateDirs = true
	if _, err := WriteFile(filepath.Join(etc, "nginx", "conf.d", "app.conf"), []byte("server {}"), o); err != nil {
		t.Fatalf("a trusted link: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(opt, "conf.d", "app.conf")); err != nil || string(got) != "server {}" {
		t.Fatalf("not written through the trusted link: %q %v", got, err)
	}
	// A relative link with "..", and the destination itself as a link
	// (FollowSymlink) in a trusted directory.
	if err := os.Symlink("../opt/nginx/etc", filepath.Join(etc, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf.d/app.conf", filepath.Join(opt, "app.conf")); err != nil {
		t.Fatal(err)
	}
	o.FollowSymlink = true
	if _, err := WriteFile(filepath.Join(etc, "rel", "app.conf"), []byte("v2"), o); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(opt, "conf.d", "app.conf")); string(got) != "v2" {
		t.Fatalf("not written through the relative links: %q", got)
	}

	// A sticky world-writable directory (like /tmp): our own link is
	// followed.
	sticky := filepath.Join(base, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(opt, filepath.Join(sticky, "mine")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(filepath.Join(sticky, "mine", "x.conf"), []byte("x"), o); err != nil {
		t.Fatalf("our link in a sticky directory: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: links owned by other users are not made")
		return
	}
	if err := os.Symlink(opt, filepath.Join(sticky, "theirs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(sticky, "theirs"), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := WriteFile(filepath.Join(sticky, "theirs", "y.conf"), []byte("y"), o)
	if !errors.Is(err, ErrUntrustedLink) || !strings.Contains(err.Error(), "holds the link as uid 4242's") {
		t.Errorf("another user's link in a sticky directory: %v", err)
	}
	owned := filepath.Join(base, "owned")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(opt, filepath.Join(owned, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(owned, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err = WriteFile(filepath.Join(owned, "link", "z.conf"), []byte("z"), o)
	if !errors.Is(err, ErrUntrustedLink) || !strings.Contains(err.Error(), "is owned by uid 4242") {
		t.Errorf("a link in another user's directory: %v", err)
	}
	// The destination itself, followed only when trusted.
	if err := os.Symlink(filepath.Join(opt, "conf.d", "app.conf"), filepath.Join(owned, "dest.conf")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(filepath.Join(owned, "dest.conf"), []byte("evil"), o); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("FollowSymlink of a link in another user's directory: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(opt, "conf.d", "app.conf")); string(got) != "v2" {
		t.Fatalf("written through an untrusted link: %q", got)
	}
}

// TestDirWriterRefusesUntrustedLink: a dir target whose directory, or a
// parent of it, has become a symbolic link in a directory others may
// write to writes, links and removes nothing behind it; a trusted link
// is followed.
func TestDirWriterRefusesUntrustedLink(t *testing.T) {
	f := newLinkFixture(t)
	files := map[string][]byte{"a.conf": []byte("a"), "important.conf": []byte("evil")}
	for _, dest := range []string{filepath.Join(f.shared, "parent", "d"), filepath.Join(f.shared, "d")} {
		w := NewDirWriter(dest)
		if _, err := w.Write(map[string][]byte{"a.conf": []byte("v1")}, opts(0o644)); err != nil {
			t.Fatalf("the first write, no link yet: %v", err)
		}
		rel, _ := filepath.Rel(f.shared, dest)
		f.swap(t, strings.Split(rel, string(filepath.Separator))[0])
		if dest == filepath.Join(f.shared, "parent", "d") {
			// victim/d: what the write would go to.
			if err := os.Mkdir(filepath.Join(f.victim, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Write(files, opts(0o644)); !errors.Is(err, ErrUntrustedLink) {
			t.Fatalf("Write to %s: %v", dest, err)
		}
		if s, err := w.StageIfChanged(files, opts(0o644)); s != nil || !errors.Is(err, ErrUntrustedLink) {
			t.Fatalf("StageIfChanged to %s: %v", dest, err)
		}
		if _, err := w.Matches(files, opts(0o644)); !errors.Is(err, ErrUntrustedLink) {
			t.Fatalf("Matches of %s: %v", dest, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(f.victim, "d")); len(entries) > 0 {
			t.Fatalf("written behind the link: %v", entries)
		}
		_ = os.Remove(filepath.Join(f.victim, "d"))
		f.untouched(t)
	}

	// Swapped between Stage and Commit.
	dest := filepath.Join(f.shared, "late", "d")
	w := NewDirWriter(dest)
	s, err := w.Stage(files, opts(0o644))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	f.swap(t, "late")
	if changed, err := s.Commit(); changed || !errors.Is(err, ErrUntrustedLink) {
		t.Fatalf("Commit after the swap: %v %v", changed, err)
	}
	f.untouched(t)

	// Trusted: the link in a directory only we may write to.
	if err := os.Chmod(f.shared, 0o755); err != nil {
		t.Fatal(err)
	}
	w = NewDirWriter(filepath.Join(f.shared, "late", "d"))
	if _, err := w.Write(files, opts(0o644)); err != nil {
		t.Fatalf("through a trusted link: %v", err)
	}
	got, err := ReadCurrent(filepath.Join(f.victim, "d"))
	if err != nil || string(got["a.conf"]) != "a" {
		t.Fatalf("not written through the trusted link: %v %v", got, err)
	}
}

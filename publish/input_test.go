package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
)

// secret is content that must never appear in an error message.
const secret = "hunter2-SECRET"

// TestBadInput is the table of bad inputs: each gets its message, every
// problem of an input is reported at once, and nothing is written (the
// root, published once before, is unchanged; a root never published stays
// absent).
func TestBadInput(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/bad", withMaxSetSize(200<<10))
	mustPublish(t, p, Request{Items: items(2, 10, "good")})
	fresh := newPub(t, c, "/bad-fresh", withMaxSetSize(200<<10))
	snapshot := func(t *testing.T) map[string]string {
		return treeSnapshot(t, p.conn(), "/bad", "/bad-fresh", p.paths.Base(), fresh.paths.Base())
	}

	write := func(dir, name string, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", ItemLimit+1)

	type input struct {
		items map[string][]byte
		err   error
	}
	for _, tc := range []struct {
		name     string
		load     func(t *testing.T, dir string) input
		validate ValidateOptions
		want     []string // every one must appear in the message
		tooLarge bool
	}{
		{
			name: "MissingPath",
			load: func(t *testing.T, dir string) input {
				m, err := LoadDir(filepath.Join(dir, "nope"), LoadOptions{})
				return input{m, err}
			},
			want: []string{"nope: does not exist"},
		},
		{
			name: "MissingFile",
			load: func(t *testing.T, dir string) input {
				write(dir, "a.conf", "a")
				m, err := LoadFiles([]string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "gone.conf")})
				return input{m, err}
			},
			want: []string{"gone.conf: does not exist"},
		},
		{
			name: "UnreadableFile",
			load: func(t *testing.T, dir string) input {
				write(dir, "a.conf", "a")
				write(dir, "locked.conf", secret)
				opts := LoadOptions{}
				if os.Geteuid() == 0 {
					// root reads anything: make the read fail the way a
					// permission problem does.
					opts.readFile = func(name string) ([]byte, error) {
						if strings.HasSuffix(name, "locked.conf") {
							return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
						}
						return os.ReadFile(name)
					}
				} else if err := os.Chmod(filepath.Join(dir, "locked.conf"), 0); err != nil {
					t.Fatal(err)
				}
				m, err := LoadDir(dir, opts)
				return input{m, err}
			},
			want: []string{`item "locked.conf"`, "cannot read: permission denied"},
		},
		{
			name: "NameZooKeeperCannotHold",
			load: func(t *testing.T, dir string) input {
				write(dir, "bad\x01name", "a")
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			want: []string{`"bad\x01name"`, "U+0001", "ZooKeeper"},
		},
		{
			name: "ReservedNames",
			load: func(t *testing.T, dir string) input {
				write(dir, "invalid", "a")
				write(dir, "zookeeper", "a")
				write(dir, "..data", "a")
				m, err := LoadFiles([]string{filepath.Join(dir, "invalid"), filepath.Join(dir, "zookeeper"), filepath.Join(dir, "..data")})
				return input{m, err}
			},
			want: []string{"3 problems", `"invalid" is reserved`, `"zookeeper" is reserved`, `"..data"`},
		},
		{
			name: "EmptySet",
			load: func(t *testing.T, dir string) input {
				write(dir, ".hidden", "skipped")
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			want: []string{"the set is empty", "--allow-empty"},
		},
		{
			name: "OversizeItem",
			load: func(t *testing.T, dir string) input {
				return input{items: map[string][]byte{"huge.bin": []byte(big), "ok.conf": []byte("ok")}}
			},
			want:     []string{`item "huge.bin" is 1032193 bytes, more than the 1032192-byte limit`},
			tooLarge: true,
		},
		{
			name: "OversizeFileNotRead",
			load: func(t *testing.T, dir string) input {
				write(dir, "huge.bin", big)
				m, err := LoadDir(dir, LoadOptions{readFile: func(string) ([]byte, error) {
					return nil, errors.New("an oversize file must not be read")
				}})
				return input{m, err}
			},
			want:     []string{`item "huge.bin" is 1032193 bytes, more than the 1032192-byte limit`},
			tooLarge: true,
		},
		{
			name: "SetTooLarge",
			load: func(t *testing.T, dir string) input {
				return input{items: items(3, 100<<10, "x")}
			},
			validate: ValidateOptions{MaxSetSize: 200 << 10},
			want:     []string{"the set is 307200 bytes in total, more than the 204800-byte limit"},
			tooLarge: true,
		},
		{
			name: "ManifestTooLarge",
			load: func(t *testing.T, dir string) input {
				m := map[string][]byte{}
				for i := range 4000 {
					m[fmt.Sprintf("%0200d", i)] = []byte{byte(i)}
				}
				return input{items: m}
			},
			want:     []string{"the manifest", "more than the", "fewer items"},
			tooLarge: true,
		},
		{
			name: "SyntaxJSONYAMLTOML",
			load: func(t *testing.T, dir string) input {
				write(dir, "a.json", "{\n  \"password\": \""+secret+"\" oops\n}")
				write(dir, "b.yaml", "key: value\n  bad: [\""+secret+"\"\n")
				write(dir, "c.toml", "password = \""+secret+"\" "+secret+"\n")
				write(dir, "ok.json", `{"fine": true}`)
				write(dir, "d.yml", "ok: 1\n---\n- a\nb: "+secret+"\n")
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			validate: ValidateOptions{Syntax: true},
			want: []string{"4 problems",
				`item "a.json": invalid JSON at line 2, column 32`,
				`item "b.yaml": invalid YAML at line 2`,
				`item "c.toml": invalid TOML at line 1`,
				`item "d.yml": invalid YAML at line 2 (document 2)`},
		},
		{
			name: "YAMLDuplicateKey",
			load: func(t *testing.T, dir string) input {
				write(dir, "e.yaml", "user: app\npassword: "+secret+"\nuser: "+secret+"\n")
				write(dir, "f.yml", "ok: 1\n---\nlist:\n  - {k: 1, k: "+secret+"}\n")
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			validate: ValidateOptions{Syntax: true},
			want: []string{"2 problems",
				`item "e.yaml": invalid YAML (document 1): YAML mapping has a duplicate key at line 3`,
				`item "f.yml": invalid YAML (document 2): YAML mapping has a duplicate key at line 4`},
		},
		{
			// A tree whose paths break the rules: every path problem at
			// once, each naming its component.
			name: "BadTreePaths",
			load: func(t *testing.T, dir string) input {
				write(dir, "a.conf", "a")
				write(dir, "invalid/b.conf", "b")
				write(dir, "sub/zookeeper/ok", "nested names may be reserved ones")
				write(dir, "sub/tab\there/x", "x")
				write(dir, ".git/config", "skipped")
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			want: []string{"2 problems", `item path "invalid/b.conf": component 1 "invalid" is reserved at the top level`,
				`item path "sub/tab\there/x": component 2 "tab\there": character 4 is U+0009`},
		},
		{
			name: "FileAndDirectoryOfOneName",
			load: func(t *testing.T, dir string) input {
				return input{items: map[string][]byte{"conf.d": []byte("x"), "conf.d/a": []byte("a"), "conf.d/b": []byte("b"), "x/y": nil, "x/y/z": nil}}
			},
			want: []string{"2 problems", `item path "conf.d" is both a file and a directory (of "conf.d/a")`, `item path "x/y" is both a file and a directory (of "x/y/z")`},
		},
		{
			name: "FlattenCollision",
			load: func(t *testing.T, dir string) input {
				write(dir, "a_b.conf", "a")
				write(dir, "a/b.conf", "b")
				m, err := LoadDir(dir, LoadOptions{Flatten: true})
				return input{m, err}
			},
			want: []string{`item "a_b.conf": both`, "map to this item name"},
		},
		{
			name: "LinksAndSpecialFiles",
			load: func(t *testing.T, dir string) input {
				write(dir, "a.conf", "a")
				must(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "broken.conf")))
				must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
				must(t, os.Symlink(filepath.Join(dir, "d"), filepath.Join(dir, "dirlink")))
				must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
				m, err := LoadDir(dir, LoadOptions{Flatten: true})
				return input{m, err}
			},
			want: []string{"3 problems", "broken.conf: broken symbolic link", "dirlink: symbolic link to a directory", "fifo: named pipe, not a regular file"},
		},
		{
			name: "DirectoryAndDuplicateInFileList",
			load: func(t *testing.T, dir string) input {
				write(dir, "x/same.conf", "1")
				write(dir, "y/same.conf", "2")
				m, err := LoadFiles([]string{filepath.Join(dir, "x/same.conf"), filepath.Join(dir, "y/same.conf"), filepath.Join(dir, "x")})
				return input{m, err}
			},
			want: []string{"3 problems", `item "same.conf": both`, "x: is a directory", "the set is empty"},
		},
		{
			name: "AllProblemsAtOnce",
			load: func(t *testing.T, dir string) input {
				write(dir, "invalid", "a")
				write(dir, "bad.json", "{"+secret)
				write(dir, "sub/del\x7f/x", "x")
				write(dir, "huge", big)
				m, err := LoadDir(dir, LoadOptions{})
				return input{m, err}
			},
			validate: ValidateOptions{Syntax: true},
			want:     []string{"4 problems", `"invalid" is reserved`, `item "bad.json": invalid JSON`, `item path "sub/del\x7f/x": component 2 "del\x7f": character 4 is U+007F`, `item "huge" is 1032193 bytes`},
			tooLarge: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t)
			in := tc.load(t, t.TempDir())
			vopts := tc.validate
			err := errlist.Join(in.err, Validate(in.items, vopts))
			if err == nil {
				t.Fatal("bad input accepted")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "oops") {
				t.Errorf("message quotes item content:\n%s", msg)
			}
			if !errors.Is(err, ErrInvalidInput) {
				t.Errorf("not ErrInvalidInput: %v", err)
			}
			if tc.tooLarge != errors.Is(err, ErrTooLarge) {
				t.Errorf("errors.Is(ErrTooLarge) = %v, want %v", !tc.tooLarge, tc.tooLarge)
			}
			// Publish refuses every set whose problem is in the items
			// themselves, before writing anything.
			if in.err == nil && !vopts.Syntax {
				for _, pub := range []*Publisher{p, fresh} {
					_, perr := pub.Publish(testCtx(t), Request{Items: in.items})
					if perr == nil || !errors.Is(perr, ErrInvalidInput) {
						t.Errorf("Publish accepted the bad set: %v", perr)
					} else {
						for _, w := range tc.want {
							if !strings.Contains(perr.Error(), w) {
								t.Errorf("Publish message lacks %q:\n%s", w, perr)
							}
						}
					}
				}
			}
			if after := snapshot(t); !equalSnap(before, after) {
				t.Fatalf("bad input wrote to ZooKeeper")
			}
			t.Logf("message:\n%s", msg)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestValidateMessages pins the exact wording of a few messages.
func TestValidateMessages(t *testing.T) {
	for _, tc := range []struct {
		items map[string][]byte
		want  string
	}{
		{map[string][]byte{"a.json": []byte(`{"a": 1,}`)}, `item "a.json": invalid JSON at line 1, column 9: invalid character '}' looking for beginning of object key string`},
		{map[string][]byte{"a.json": []byte(`{"a": 1} x`)}, `item "a.json": invalid JSON at line 1, column 10: data after the top-level value`},
		{map[string][]byte{"a.json": nil}, `item "a.json": invalid JSON at line 1, column 1: unexpected end of input`},
		{map[string][]byte{"a.toml": []byte("a = \n")}, `item "a.toml": invalid TOML at line 1`},
		{map[string][]byte{"/a/b": []byte("x")}, `bad item name: item path "/a/b" starts with '/': paths are relative to the root`},
		{map[string][]byte{"a//b": []byte("x")}, `bad item name: item path "a//b": component 2 is empty ("//")`},
		{map[string][]byte{"": []byte("x")}, "bad item name: item name is empty"},
	} {
		err := Validate(tc.items, ValidateOptions{Syntax: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q): %v\nwant %q", sortedNames(tc.items), err, tc.want)
		}
	}
	ok := map[string][]byte{"a.json": []byte(`{"a": [1, 2]}`), "b.yaml": []byte("a: 1\n---\nb: 2\n"), "c.toml": []byte("a = 1\n[t]\nb = 'x'\n"), "d.txt": []byte("{not json")}
	if err := Validate(ok, ValidateOptions{Syntax: true}); err != nil {
		t.Errorf("valid set refused: %v", err)
	}
}

// TestLoadDirAccepts checks what LoadDir and LoadFiles do accept: symbolic
// links to regular files inside the directory (named by the link, also
// absolute ones and chains that leave the directory and come back),
// flattened sub-directories, and hidden entries skipped at every level;
// LoadFiles follows a link wherever it points (the operator named it).
func TestLoadDirAccepts(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.conf": "a", "sub/b.conf": "b", "sub/deeper/c.conf": "c", "sub/.hidden": "h", ".git/config": "g"}
	for name, data := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	must(t, os.Symlink("a.conf", filepath.Join(dir, "rel.conf")))
	must(t, os.Symlink(filepath.Join(dir, "sub", "b.conf"), filepath.Join(dir, "abs.conf")))
	outside := t.TempDir()
	must(t, os.Symlink(filepath.Join(dir, "sub", "deeper", "c.conf"), filepath.Join(outside, "hop")))
	must(t, os.Symlink(filepath.Join(outside, "hop"), filepath.Join(dir, "chain.conf")))
	target := filepath.Join(outside, "target.conf")
	must(t, os.WriteFile(target, []byte("t"), 0o644))
	must(t, os.Symlink(target, filepath.Join(dir, "link.conf")))

	got, err := LoadDir(dir, LoadOptions{Flatten: true, FollowExternalSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a.conf": []byte("a"), "sub_b.conf": []byte("b"), "sub_deeper_c.conf": []byte("c"), "link.conf": []byte("t"),
		"rel.conf": []byte("a"), "abs.conf": []byte("b"), "chain.conf": []byte("c")}
	if !sameItems(got, want) {
		t.Fatalf("LoadDir: %v, want %v", sortedNames(got), sortedNames(want))
	}
	got, err = LoadFiles([]string{filepath.Join(dir, "link.conf"), filepath.Join(dir, "sub/b.conf")})
	if err != nil || !sameItems(got, map[string][]byte{"link.conf": []byte("t"), "b.conf": []byte("b")}) {
		t.Fatalf("LoadFiles: %v %v", sortedNames(got), err)
	}
}

// TestLoadDirExternalSymlinks: a link resolving outside the directory
// (directly, or through a chain) is refused, named with its target, and
// nothing of it is read; FollowExternalSymlinks reads it.
func TestLoadDirExternalSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "app.conf"), []byte("app"), 0o644))
	shadow := filepath.Join(outside, "shadow")
	must(t, os.WriteFile(shadow, []byte(secret), 0o600))
	must(t, os.Symlink(shadow, filepath.Join(dir, "shadow.conf")))
	// A chain: an innocent-looking link inside to a link inside to the
	// file outside.
	must(t, os.Symlink(shadow, filepath.Join(dir, "hop")))
	must(t, os.Symlink("hop", filepath.Join(dir, "chain.conf")))

	got, err := LoadDir(dir, LoadOptions{})
	if err == nil {
		t.Fatal("external links accepted")
	}
	msg := err.Error()
	for _, w := range []string{"3 problems", filepath.Join(dir, "shadow.conf") + ": symbolic link to " + shadow + ", outside the directory: not read",
		filepath.Join(dir, "chain.conf") + ": symbolic link to " + shadow, "--follow-external-symlinks"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, secret) || !errors.Is(err, ErrInvalidInput) {
		t.Errorf("message quotes the content, or is not ErrInvalidInput: %v", err)
	}
	if !sameItems(got, map[string][]byte{"app.conf": []byte("app")}) {
		t.Errorf("items read: %v, want app.conf alone", sortedNames(got))
	}

	got, err = LoadDir(dir, LoadOptions{FollowExternalSymlinks: true})
	if err != nil || string(got["shadow.conf"]) != secret || string(got["chain.conf"]) != secret || len(got) != 4 {
		t.Fatalf("FollowExternalSymlinks: %v %v", sortedNames(got), err)
	}
}

// TestLoadDirIgnore: editors' backup, swap, autosave and temporary files
// are skipped by default and listed; Ignore adds patterns (by name at
// every level, or by relative path), NoDefaultIgnore drops the defaults,
// and a malformed pattern is refused.
func TestLoadDirIgnore(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"app.conf", "app.conf~", "#app.conf#", "app.conf.swp", "4913", "app.conf.tmp", "app.conf.bak",
		"app.conf.dpkg-old", "keep.local", "sub/b.conf", "sub/b.conf~", "sub/b.local", "cache/x"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644))
	}
	c, err := LoadDirContents(dir, LoadOptions{Flatten: true, Ignore: []string{"sub/*.local", "cache"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sortedNames(c.Items), " "); got != "app.conf keep.local sub_b.conf" {
		t.Errorf("items %q, want app.conf keep.local sub_b.conf", got)
	}
	wantIgnored := "#app.conf# 4913 app.conf.bak app.conf.dpkg-old app.conf.swp app.conf.tmp app.conf~ cache/ sub/b.conf~ sub/b.local"
	if got := strings.Join(c.Ignored, " "); got != wantIgnored {
		t.Errorf("ignored %q\nwant    %q", got, wantIgnored)
	}

	c, err = LoadDirContents(dir, LoadOptions{Flatten: true, NoDefaultIgnore: true, Ignore: []string{"*.swp"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Items) != 12 || c.Items["app.conf~"] == nil || strings.Join(c.Ignored, " ") != "app.conf.swp" {
		t.Errorf("NoDefaultIgnore: items %v, ignored %v", sortedNames(c.Items), c.Ignored)
	}

	_, err = LoadDirContents(dir, LoadOptions{Ignore: []string{"[", "ok", "a[b"}})
	if err == nil || !strings.Contains(err.Error(), "2 problems") || !strings.Contains(err.Error(), `ignore pattern "["`) ||
		!strings.Contains(err.Error(), `ignore pattern "a[b"`) || CheckIgnore(LoadOptions{Ignore: []string{"["}}) == nil {
		t.Errorf("malformed patterns: %v", err)
	}
}

// TestReadOpenRefusesSpecialFiles: a named pipe reaching the read (swapped
// in after the listing) is refused at once, not waited on.
func TestReadOpenRefusesSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := readOpen(func() (*os.File, error) { return os.OpenFile(fifo, openFlags, 0) }, ItemLimit)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe, not a regular file") {
			t.Fatalf("readOpen(fifo): %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading a named pipe blocked")
	}
}

// TestLoadDirTree: without Flatten the tree is kept (a/b.conf is the item
// path "a/b.conf"); the rules of the top level hold in every
// sub-directory: hidden entries and ignore patterns skipped, symbolic
// links to files inside followed, links outside and links to directories
// refused; directories left without items are listed as empty, not
// published; a tree deeper than 16 levels is refused; Flatten keeps its
// meaning.
func TestLoadDirTree(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"app.json": "{}", "conf.d/site.conf": "s", "conf.d/sub/deep/x.conf": "x",
		"conf.d/site.conf~": "backup", "conf.d/.hidden": "h", "empty/.gitkeep": "", "cache/tmp.bin": "c"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	must(t, os.Mkdir(filepath.Join(dir, "bare"), 0o755))
	must(t, os.Symlink("../app.json", filepath.Join(dir, "conf.d", "app-link.json")))
	c, err := LoadDirContents(dir, LoadOptions{Ignore: []string{"cache"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"app.json": []byte("{}"), "conf.d/site.conf": []byte("s"), "conf.d/sub/deep/x.conf": []byte("x"), "conf.d/app-link.json": []byte("{}")}
	if !sameItems(c.Items, want) {
		t.Fatalf("items %v, want %v", sortedNames(c.Items), sortedNames(want))
	}
	if got := strings.Join(c.EmptyDirs, " "); got != "bare/ empty/" {
		t.Errorf("empty dirs %q", got)
	}
	if got := strings.Join(c.Ignored, " "); got != "cache/ conf.d/site.conf~" {
		t.Errorf("ignored %q", got)
	}
	if got := strings.Join(c.Dirs, " "); got != "bare conf.d conf.d/sub conf.d/sub/deep empty" {
		t.Errorf("dirs %q", got)
	}
	if err := Validate(c.Items, ValidateOptions{Syntax: true}); err != nil {
		t.Fatal(err)
	}

	flat, err := LoadDir(dir, LoadOptions{Flatten: true, Ignore: []string{"cache"}})
	if err != nil || flat["conf.d_sub_deep_x.conf"] == nil || flat["conf.d/site.conf"] != nil {
		t.Fatalf("Flatten: %v %v", sortedNames(flat), err)
	}

	// Links in a sub-directory: outside the tree, and to a directory.
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o600))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "conf.d", "sub", "leak.conf")))
	must(t, os.Symlink("..", filepath.Join(dir, "conf.d", "sub", "loop")))
	_, err = LoadDir(dir, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "2 problems") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "conf.d/sub/leak.conf")+": symbolic link to "+filepath.Join(outside, "secret")+", outside the directory") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "conf.d/sub/loop")+": symbolic link to a directory") || strings.Contains(err.Error(), secret) {
		t.Fatalf("links in a sub-directory: %v", err)
	}

	deep := t.TempDir()
	p := filepath.Join(deep, filepath.FromSlash(strings.Repeat("d/", manifest.MaxDepth)))
	must(t, os.MkdirAll(p, 0o755))
	must(t, os.WriteFile(filepath.Join(p, "f"), []byte("f"), 0o644))
	must(t, os.WriteFile(filepath.Join(filepath.Dir(p), "ok"), []byte("ok"), 0o644))
	c, err = LoadDirContents(deep, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "nested more than 15 levels deep") {
		t.Fatalf("a 17-level tree: %v", err)
	}
	if _, ok := c.Items[strings.Repeat("d/", manifest.MaxDepth-1)+"ok"]; !ok || len(c.Items) != 1 {
		t.Fatalf("items of the deep tree: %v", sortedNames(c.Items))
	}
}

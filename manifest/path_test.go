package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/fuzzdir"
	"github.com/zkconf/zkconf/internal/render"
)

func TestValidatePath(t *testing.T) {
	good := []string{"app.json", "conf.d/site.conf", "a/b/c", "a/invalid", "a/zookeeper", "sites-enabled/.hidden",
		strings.Repeat("d/", MaxDepth-1) + "f", strings.Repeat("n", MaxNameLen) + "/x", "日本/語.txt"}
	for _, p := range good {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string][]string{
		"":                                     {"item name is empty"},
		"/etc/passwd":                          {"starts with '/'"},
		"conf.d/":                              {"ends with '/'"},
		"a//b":                                 {`component 2 is empty ("//")`},
		"a/./b":                                {`component 2 "." is not a file name`},
		"a/../b":                               {`component 2 ".." is not a file name`},
		"a/..data/b":                           {`component 2 "..data": names starting with ".." are reserved`},
		"invalid/x":                            {`component 1 "invalid" is reserved at the top level`},
		"zookeeper/x":                          {`component 1 "zookeeper" is reserved at the top level by ZooKeeper`},
		"a/tab\there":                          {`component 2`, "character 4 is U+0009"},
		"a/b\U0001F600/c":                      {"component 2", "character 2 is U+1F600"},
		"a/\xff":                               {"not valid UTF-8"},
		"a/" + strings.Repeat("n", 256):        {"component 2", "more than 255"},
		strings.Repeat("d/", MaxDepth) + "f":   {"17 components, more than 16"},
		strings.Repeat("abcdefgh/", 120) + "f": {"bytes, more than 1024"},
		strings.Repeat("x", 1025):              {"bytes, more than 1024"},
		// Every problem at once, each with its position.
		"a//../..x/ok": {`component 2 is empty`, `component 3 ".." is not a file name`, `component 4 "..x"`},
	}
	for p, wants := range bad {
		err := ValidatePath(p)
		if err == nil {
			t.Errorf("ValidatePath(%q) = nil", p)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidatePath(%q) = %v, want it to contain %q", p, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ValidatePath(%q): error spans lines: %q", p, err)
		}
	}
	// A flat name gets ValidateName's messages, unchanged.
	for _, n := range []string{"invalid", "a\x00", "..data", ""} {
		if a, b := ValidatePath(n), ValidateName(n); a == nil || a.Error() != b.Error() {
			t.Errorf("ValidatePath(%q) = %v, ValidateName = %v", n, a, b)
		}
	}
}

func TestTreeConflicts(t *testing.T) {
	set := map[string]int{"a": 1, "a/b": 1, "a/c/d": 1, "x/y": 1, "x/y/z": 1, "q": 1, "q.d/r": 1}
	got := TreeConflicts(set)
	want := []Conflict{{File: "a", Below: "a/b"}, {File: "x/y", Below: "x/y/z"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TreeConflicts = %v, want %v", got, want)
	}
	if !strings.Contains(got[0].Error(), `item path "a" is both a file and a directory (of "a/b")`) {
		t.Fatalf("message: %v", got[0])
	}
	if c := TreeConflicts(map[string]int{"a.b": 1, "a/b": 1, "ab/c": 1}); len(c) != 0 {
		t.Fatalf("no conflict expected: %v", c)
	}
}

func TestDirsAndFormatFor(t *testing.T) {
	if d := Dirs("a/b/c"); !reflect.DeepEqual(d, []string{"a", "a/b"}) {
		t.Fatalf("Dirs = %v", d)
	}
	if d := Dirs("flat"); d != nil {
		t.Fatalf("Dirs(flat) = %v", d)
	}
	if f := FormatFor(map[string]Item{"a": {}, "b": {}}); f != FormatVersion {
		t.Fatalf("flat: %d", f)
	}
	if f := FormatFor(map[string][]byte{"a": nil, "b/c": nil}); f != FormatTree {
		t.Fatalf("tree: %d", f)
	}
}

// TestDecodeTree: format 2 takes paths through both decoders; format 1
// refuses them (as the previous release does); format 2 refuses a file
// that is also a directory and bad components, as foreign.
func TestDecodeTree(t *testing.T) {
	sha := ItemOf([]byte("x")).SHA256
	m := &Manifest{Format: FormatTree, Generation: 3, PublishID: "p", PublishedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Publisher: "u", Mode: ModeMarker, Items: map[string]Item{"a/b": {SHA256: sha, Size: 1}, "a/c/d": {SHA256: sha, Size: 1}, "a.b": {SHA256: sha, Size: 1}}}
	enc := m.Encode()
	if _, ok := decodeCanonical(enc); !ok {
		t.Fatalf("the fast path declines a tree: %s", enc)
	}
	got, err := Decode(enc)
	if err != nil || !got.SameContent(m) || got.Format != FormatTree {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	if j, err := decodeJSON(enc); err != nil || !reflect.DeepEqual(j, got) {
		t.Fatalf("decodeJSON = %+v, %v", j, err)
	}
	checkCanonical(t, enc)
	// A format-2 manifest of flat names is valid too.
	flat := *m
	flat.Items = map[string]Item{"a": {SHA256: sha, Size: 1}}
	if _, err := Decode(flat.Encode()); err != nil {
		t.Fatal(err)
	}
	for what, items := range map[string]map[string]Item{
		`is both a file and a directory`:      {"a": {SHA256: sha, Size: 1}, "a/b": {SHA256: sha, Size: 1}},
		`component 2 ".." is not a file name`: {"a/..": {SHA256: sha, Size: 1}},
		`component 1 "invalid" is reserved`:   {"invalid/x": {SHA256: sha, Size: 1}},
	} {
		bad := *m
		bad.Items = items
		enc := bad.Encode()
		if _, ok := decodeCanonical(enc); ok {
			t.Errorf("%s: the fast path accepted it", what)
		}
		_, err := Decode(enc)
		if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: Decode = %v", what, err)
		}
		checkCanonical(t, enc)
	}
	one := *m
	one.Format = FormatVersion
	if _, err := Decode(one.Encode()); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "contains '/'") {
		t.Fatalf("paths in format 1: %v", err)
	}
	three := *m
	three.Format = 3
	if _, err := Decode(three.Encode()); !errors.Is(err, ErrFutureFormat) || !strings.Contains(err.Error(), "reads up to 2") {
		t.Fatalf("format 3: %v", err)
	}
}

// FuzzValidatePath: every path ValidatePath accepts is one every layer
// can hold: each component is a name a dir target can write, the path
// creates a file below the directory and nowhere else, and no component is
// one ZooKeeper refuses.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"a/b", "conf.d/site.conf", "/a", "a/", "a//b", "a/../b", "a/./b", "../x", "a/..data", "invalid/x", "a/invalid",
		"zookeeper/a", "a/zookeeper", strings.Repeat("a/", 16) + "b", "a/\x00", "a/\U0001F600", "a\\b/c", "ü/ö", " / "} {
		f.Add(s)
	}
	dir := fuzzdir.Temp(f)
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error for %q spans lines: %q", p, err)
			}
			return
		}
		comps := strings.Split(p, "/")
		if len(comps) > MaxDepth || len(p) > MaxPathLen {
			t.Fatalf("path %q over the bounds accepted", p)
		}
		for i, c := range comps {
			if rerr := render.ValidateName(c); rerr != nil {
				t.Fatalf("path %q accepted but component %q cannot be written: %v", p, c, rerr)
			}
			if i == 0 && (c == MarkerName || c == "zookeeper") {
				t.Fatalf("reserved top-level name in %q accepted", p)
			}
			for _, r := range c {
				if zkRefuses(r) {
					t.Fatalf("path %q with %U accepted", p, r)
				}
			}
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		rel, rerr := filepath.Rel(dir, full)
		if rerr != nil || rel != filepath.FromSlash(p) || strings.HasPrefix(rel, "..") {
			t.Fatalf("path %q does not stay below its directory (%s)", p, full)
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatalf("path %q accepted but its directories cannot be made: %v", p, err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatalf("path %q accepted but no file can have it: %v", p, err)
		}
		if err := os.RemoveAll(filepath.Join(dir, comps[0])); err != nil {
			t.Fatal(err)
		}
	})
}

package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zkconf/zkconf/internal/fuzzdir"
	"github.com/zkconf/zkconf/internal/render"
)

// FuzzDecode: Decode never panics; whatever it accepts is safe to act on
// (every field valid, as its documentation promises) and survives an
// Encode/Decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	valid := &Manifest{Format: 1, Generation: 42, PublishID: "p-1", PublishedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Publisher: "u@h", Mode: ModeMulti, Items: map[string]Item{"app.json": ItemOf([]byte("{}")), "empty": ItemOf(nil)}}
	f.Add(valid.Encode())
	marker := *valid
	marker.Mode, marker.RollbackOf, marker.Items = ModeMarker, 7, nil
	f.Add(marker.Encode())
	inc := *valid
	inc.Incarnation = NewIncarnation()
	f.Add(inc.Encode())
	tree := *valid
	tree.Format, tree.Items = FormatTree, map[string]Item{"conf.d/a": ItemOf(nil), "b": ItemOf([]byte("b"))}
	f.Add(tree.Encode())
	for _, s := range []string{"", " \n", "{}", `{"format":2}`, `{"format":3}`, `{"format":0}`, `{"format":1}`, `{"format":1.5}`,
		`{"format":1,"generation":1,"publish_id":"x","mode":"multi","items":{"a/b":{"sha256":"","size":1}}}`,
		`{"format":1,"generation":-1}`, `null`, `[1,2]`, `{"format":1,"generation":1,"publish_id":"x","mode":"multi","published_at":"0000-01-01T00:00:00+23:59"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned a manifest with error %v", err)
			}
			return
		}
		checkValid(t, m)
		enc := m.Encode()
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("a decoded manifest does not decode after Encode: %v\ninput:   %q\nencoded: %q", err, data, enc)
		}
		checkValid(t, m2)
		if enc2 := m2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode/Decode is not stable:\n%q\n%q", enc, enc2)
		}
		if !m.SameContent(m2) || m.Generation != m2.Generation || m.PublishID != m2.PublishID || m.Mode != m2.Mode ||
			m.RollbackOf != m2.RollbackOf || m.Incarnation != m2.Incarnation || !m.PublishedAt.Equal(m2.PublishedAt) {
			t.Fatalf("round trip changed the manifest: %+v -> %+v", m, m2)
		}
	})
}

func checkValid(t *testing.T, m *Manifest) {
	t.Helper()
	if (m.Format != FormatVersion && m.Format != FormatTree) || m.Generation < 1 || m.PublishID == "" || (m.Mode != ModeMulti && m.Mode != ModeMarker) || m.Items == nil ||
		(m.Incarnation != "" && !ValidIncarnation(m.Incarnation)) {
		t.Fatalf("Decode accepted an invalid manifest: %+v", m)
	}
	check := ValidateName
	if m.Format == FormatTree {
		check = ValidatePath
		if c := TreeConflicts(m.Items); len(c) > 0 {
			t.Fatalf("Decode accepted a file that is a directory: %v", c)
		}
	}
	for name, it := range m.Items {
		if err := check(name); err != nil {
			t.Fatalf("Decode accepted item name %q: %v", name, err)
		}
		if len(it.SHA256) != 64 || it.Size < 0 {
			t.Fatalf("Decode accepted item %q = %+v", name, it)
		}
	}
}

// FuzzValidateName: every name manifest.ValidateName accepts is a name
// every other layer can hold: render.ValidateName accepts it (a dir target
// can write it), it is one plain file name that creates a file inside its
// directory and nowhere else, and it is a legal ZooKeeper node name.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"app.json", "a", ".hidden", "..data", "..", ".", "invalid", "zookeeper", "a/b", "a\x00b",
		"ünï cödé.conf", "with space", strings.Repeat("x", 255), strings.Repeat("x", 256), strings.Repeat("é", 128),
		"\u007f", "\u0085", "emoji \U0001F600", "\U00010000", "\ufff0", "\ud7ff", "\ue000", "\xff\xfe", "-rf", "~", "*", "a\\b", "\t", " "} {
		f.Add(s)
	}
	dir := fuzzdir.Temp(f)
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		if err2 := ValidateName(name); (err == nil) != (err2 == nil) {
			t.Fatalf("ValidateName(%q) is not deterministic", name)
		}
		if cerr := checkName(name); (err == nil) != (cerr == nil) || (err != nil && err.Error() != cerr.Error()) {
			t.Fatalf("ValidateName(%q) = %v, its checks one by one %v", name, err, cerr)
		}
		rerr := render.ValidateName(name)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error for %q spans lines: %q", name, err)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("item name %q is valid but a dir target cannot write it: %v", name, rerr)
		}
		switch {
		case name == "" || name == "." || name == ".." || strings.HasPrefix(name, ".."):
			t.Fatalf("reserved name %q accepted", name)
		case strings.ContainsAny(name, "/\x00") || !utf8.ValidString(name) || len(name) > MaxNameLen:
			t.Fatalf("name %q accepted", name)
		case name == MarkerName || name == "zookeeper":
			t.Fatalf("reserved name %q accepted", name)
		}
		for _, r := range name {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
				t.Fatalf("name %q with %U accepted: ZooKeeper refuses it", name, r)
			}
		}
		p := filepath.Join(dir, name)
		if filepath.Dir(p) != filepath.Clean(dir) || filepath.Base(p) != name {
			t.Fatalf("name %q does not stay one file name in its directory (%s)", name, p)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatalf("name %q accepted but no file can have it: %v", name, err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	})
}

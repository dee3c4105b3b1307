package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/internal/fuzzdir"
)

// FuzzDirName: a name ValidateName accepts is one file directly in
// the target directory (never a path out of it, never a reserved entry),
// and DirWriter can write it.
func FuzzDirName(f *testing.F) {
	for _, s := range []string{"a", ".a", "..a", "..data", "..data_tmp", ".", "..", "a/b", "/", "a\x00", strings.Repeat("n", 256), "é", "\xff"} {
		f.Add(s)
	}
	dir := fuzzdir.Temp(f)
	n := 0
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateName(name) != nil {
			return
		}
		if strings.HasPrefix(name, "..") || name == "." || strings.ContainsAny(name, "/\x00") || len(name) > 255 || name == "" {
			t.Fatalf("ValidateName accepted %q", name)
		}
		p := filepath.Join(dir, name)
		if filepath.Dir(p) != filepath.Clean(dir) {
			t.Fatalf("name %q escapes its directory: %s", name, p)
		}
		n++
		d := filepath.Join(dir, fmt.Sprint("w", n))
		w := NewDirWriter(d)
		if _, err := w.Write(map[string][]byte{name: []byte("x")}, DefaultFileOptions()); err != nil {
			t.Fatalf("DirWriter cannot write accepted name %q: %v", name, err)
		}
		got, err := ReadCurrent(d)
		if err != nil || string(got[name]) != "x" || len(got) != 1 {
			t.Fatalf("read back %q: %v %q", name, err, got)
		}
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	})
}

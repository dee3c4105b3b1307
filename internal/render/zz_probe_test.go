package render

import (
	"path/filepath"
	"testing"
)

func BenchmarkProbeWriteFileUnchanged(b *testing.B) {
	dest := filepath.Join(b.TempDir(), "a", "b", "c.conf")
	o := DefaultFileOptions()
	if err := mkdirs(filepath.Dir(dest)); err != nil {
		b.Fatal(err)
	}
	if _, err := WriteFile(dest, []byte("x"), o); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := WriteFile(dest, []byte("x"), o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProbeDirMatches(b *testing.B) {
	w := NewDirWriter(filepath.Join(b.TempDir(), "a", "d"))
	files := map[string][]byte{"x": []byte("x"), "y": []byte("y")}
	if _, err := w.Write(files, DefaultFileOptions()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.Matches(files, DefaultFileOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

package confagentbin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildCachedRebuildsChangedSource: the cached binary is copied out
// while its sources are unchanged, and rebuilt when they change; every copy
// is a separate, complete executable.
func TestBuildCachedRebuildsChangedSource(t *testing.T) {
	cache := t.TempDir()
	mod := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.25\n")
	program := func(word string) string {
		return "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + word + "\") }\n"
	}
	run := func(bin string) string {
		t.Helper()
		out, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		return strings.TrimSpace(string(out))
	}
	ctx := context.Background()
	out := t.TempDir()
	write("main.go", program("one"))
	first, second, third := filepath.Join(out, "first"), filepath.Join(out, "second"), filepath.Join(out, "third")
	for _, bin := range []string{first, second} {
		if err := buildCached(ctx, cache, mod, ".", bin); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", program("two"))
	if err := buildCached(ctx, cache, mod, ".", third); err != nil {
		t.Fatal(err)
	}
	for bin, want := range map[string]string{first: "one", second: "one", third: "two"} {
		if got := run(bin); got != want {
			t.Errorf("%s printed %q, want %q", filepath.Base(bin), got, want)
		}
	}
	cached, err := filepath.Glob(filepath.Join(cache, "*", "*"))
	if err != nil || len(cached) != 2 { // the binary and its lock
		t.Errorf("cache holds %q (%v), want the binary and its lock", cached, err)
	}
}

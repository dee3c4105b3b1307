package clidocgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/clidoc"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	root.AddCommand(&cobra.Command{Use: "get NAME", Short: "Get", Run: func(*cobra.Command, []string) {}},
		&cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}})
	return root
}

// TestStale: a fresh generation is not stale; a changed, a missing and an
// extra file of the binary are, and another binary's files are ignored.
func TestStale(t *testing.T) {
	md, man := t.TempDir(), t.TempDir()
	if err := Generate(tree(), md, man); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(md, "other_get.md"), []byte("another binary's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stale, err := Stale(tree(), md, man); err != nil || len(stale) != 0 {
		t.Fatalf("fresh reference: %v %v", stale, err)
	}
	if err := os.WriteFile(filepath.Join(md, "tool_get.md"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(man, "tool.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(md, "tool_removed.md"), []byte("gone"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := Stale(tree(), md, man)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(stale, "\n")
	for _, want := range []string{"tool_get.md: differs", "tool.1: missing", "tool_removed.md: no such command"} {
		if !strings.Contains(got, want) {
			t.Errorf("stale list lacks %q:\n%s", want, got)
		}
	}
	if len(stale) != 3 {
		t.Errorf("stale list: %q", stale)
	}
	// Regenerating repairs all three.
	if err := Generate(tree(), md, man); err != nil {
		t.Fatal(err)
	}
	if stale, err := Stale(tree(), md, man); err != nil || len(stale) != 0 {
		t.Fatalf("after regenerating: %v %v", stale, err)
	}
}

// TestExamples tests package clidoc, which the binaries link, on the
// same command tree (clidoc has no test of its own).
func TestExamples(t *testing.T) {
	root := tree()
	unknown := clidoc.SetExamples(root, map[string]string{"": "  tool get x", "gone": "  tool gone"})
	if strings.Join(unknown, ",") != "gone" {
		t.Errorf("unknown keys: %q", unknown)
	}
	if missing := clidoc.MissingExamples(root); strings.Join(missing, ",") != `"get"` {
		t.Errorf("missing: %q (the hidden command needs none)", missing)
	}
}

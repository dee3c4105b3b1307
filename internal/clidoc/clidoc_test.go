package clidoc

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	root.AddCommand(&cobra.Command{Use: "get NAME", Short: "Get", Run: func(*cobra.Command, []string) {}},
		&cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}})
	return root
}

func TestExamples(t *testing.T) {
	root := tree()
	unknown := SetExamples(root, map[string]string{"": "  tool get x", "gone": "  tool gone"})
	if strings.Join(unknown, ",") != "gone" {
		t.Errorf("unknown keys: %q", unknown)
	}
	if missing := MissingExamples(root); strings.Join(missing, ",") != `"get"` {
		t.Errorf("missing: %q (the hidden command needs none)", missing)
	}
}

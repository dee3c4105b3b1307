package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkconf/zkconf/agent"
)

// TestRepairRendersTemplateAgain: a template target's output is not kept
// in memory (only its digest), so drift repair renders the applied
// snapshot again: an output edited by hand gets back the applied bytes.
// When the applied snapshot no longer renders to those bytes (a host fact
// the template reads changed: confd's fileExists), repair writes nothing:
// it runs no reload, and the service would be left with an output it
// never loaded (the next publish's apply renders it, with its reload).
func TestRepairRendersTemplateAgain(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "flag")
	dest := filepath.Join(dir, "out.conf")
	spec := confdSpec("c", dest, `v={{ getv "/v" }} flag={{ if fileExists "`+flag+`" }}yes{{ else }}no{{ end }}`+"\n", "/zk", "/zk", "/")
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := r.Apply(context.Background(), agent.NewSnapshot(1, map[string][]byte{"v": []byte("1")})); out.Err != nil {
		t.Fatal(out.Err)
	}
	const applied = "v=1 flag=no\n"
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != applied {
		t.Fatalf("applied output %q, want %q", got, applied)
	}
	if fixed := r.Repair(); len(fixed) != 0 {
		t.Fatalf("repair without drift fixed %v", fixed)
	}

	// Drift, same size and different size: restored to the applied bytes.
	for _, edit := range []string{"v=2 flag=no\n", "edited by hand, longer\n"} {
		if err := os.WriteFile(dest, []byte(edit), 0o644); err != nil {
			t.Fatal(err)
		}
		if fixed := r.Repair(); len(fixed) != 1 || fixed[0] != "c" {
			t.Fatalf("repair of %q fixed %v, want [c]", edit, fixed)
		}
		if got := read(); got != applied {
			t.Fatalf("repaired output %q, want %q", got, applied)
		}
	}

	// The host changed: the applied snapshot renders "flag=yes" now.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fixed := r.Repair(); len(fixed) != 0 {
		t.Fatalf("repair wrote an output never applied: fixed %v", fixed)
	}
	if got := read(); got != "edited\n" {
		t.Fatalf("output %q after a refused repair, want the edit kept", got)
	}
}

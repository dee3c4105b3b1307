package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProbeInodes checks the inode-creation probe: it times each of its n
// creations, leaves nothing behind, and fails (leaving nothing either)
// where it cannot create.
func TestProbeInodes(t *testing.T) {
	dir := t.TempDir()
	p, err := probeInodes(dir, 25)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 25 || p.Create.N != 25 {
		t.Errorf("probe of 25 files: N %d, %d creations timed", p.N, p.Create.N)
	}
	if p.Create.P50 <= 0 || p.Create.P90 < p.Create.P50 || p.Create.Max < p.Create.P90 || p.Total < p.Create.Max {
		t.Errorf("probe times out of order: %+v", p)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the probe left %d files", len(left))
	}

	// A file of the probe's name already there: the exclusive creation
	// fails, and what the probe made before it is removed.
	taken := filepath.Join(dir, ".inode-probe-3")
	if err := os.WriteFile(taken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := probeInodes(dir, 10); err == nil {
		t.Error("the probe succeeded over a file of its own name")
	}
	left, err = os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != ".inode-probe-3" {
		t.Errorf("after a failed probe the directory holds %v, want the one file that was there", left)
	}
}

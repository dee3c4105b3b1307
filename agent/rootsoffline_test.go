package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkconf/zkconf/agent"
)

// TestRenderToRootsSnapshot: RenderTo of NewRootsSnapshot renders each
// target from its own root's set, and a target whose root has no set
// fails with *MissingRootError (a dir target too, which would otherwise
// render an empty directory).
func TestRenderToRootsSnapshot(t *testing.T) {
	dest := t.TempDir()
	specs := []agent.TargetSpec{
		{Name: "c", Kind: agent.KindFile, Root: "common", Item: "v", Dest: filepath.Join(dest, "c")},
		{Name: "site", Kind: agent.KindDir, Root: "web", Dest: filepath.Join(dest, "site")},
	}
	r, err := agent.NewRenderer(specs, agent.ApplyIndependent, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := r.RenderTo(context.Background(), agent.NewRootsSnapshot(0, map[string]map[string][]byte{"common": {"v": []byte("C")}}), out, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatalf("target c: %v", res[0].Err)
	}
	if b, err := os.ReadFile(res[0].Path); err != nil || string(b) != "C" {
		t.Errorf("target c rendered %q, %v", b, err)
	}
	var missing *agent.MissingRootError
	if !errors.As(res[1].Err, &missing) || missing.Root != "web" || missing.Target != "site" ||
		res[1].Err.Error() != `target "site" reads root "web", and no set of that root was given` {
		t.Errorf("target site without web's set: %v", res[1].Err)
	}
}

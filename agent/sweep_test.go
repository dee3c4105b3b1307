package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
)

// TestApplySweepsAfterSwap: a dir target's previous generation directory
// whose grace period has passed is removed by the apply that follows,
// after its swap, not in its stage: the apply's check command (run between
// the two) still finds it, and once Apply returns it is gone, without a
// timer (an embedder's Renderer, confagent --once).
//
// The grace period is long enough that generation 2's apply, which sweeps
// too, ends well inside it even on a loaded machine (with a millisecond,
// a slow swap let that sweep remove generation 1 itself, and the test
// failed for a reason that is not the one it names); the test then waits
// the period out, measured from when generation 2's apply returned, which
// is after generation 1 was retired.
func TestApplySweepsAfterSwap(t *testing.T) {
	const grace = time.Second
	out := t.TempDir()
	d, listing := join(out, "d"), join(out, "listing")
	spec := dirSpec(d)
	spec.Grace = grace
	spec.Check = fmt.Sprintf("ls -a %s > %s", d, listing)
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	apply := func(g int64) string {
		t.Helper()
		snap := publishedSnapshot{agent.NewSnapshot(g, map[string][]byte{"a": fmt.Appendf(nil, "a%d", g)}), fmt.Sprintf("p%d", g)}
		if o := r.Apply(ctx, snap); o.Err != nil || o.Skipped {
			t.Fatalf("apply %d: %+v", g, o)
		}
		cur, err := render.CurrentPath(d)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(cur)
	}
	first := apply(1)
	apply(2) // retires first, for the grace period
	retired := time.Now()
	if _, err := os.Lstat(join(d, first)); err != nil {
		t.Fatalf("generation 1's directory %s is gone right after generation 2's apply (inside its grace period of %v): %v", first, grace, err)
	}
	time.Sleep(time.Until(retired.Add(grace + 10*time.Millisecond)))
	apply(3)
	b, err := os.ReadFile(listing)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), first+"\n") {
		t.Errorf("generation 1's directory %s was removed before generation 3's swap; the check saw:\n%s", first, b)
	}
	if _, err := os.Lstat(join(d, first)); err == nil {
		t.Errorf("generation 1's directory %s is still there after generation 3's apply", first)
	}
}

// publishedSnapshot is a snapshot with a publish id of its own.
type publishedSnapshot struct {
	agent.Snapshot
	id string
}

func (s publishedSnapshot) PublishID() string { return s.id }

package agent_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet/fleettest"
)

// TestWaitingTargetSurvivesFailedRender: a template over two roots that
// had no cut yet at its first apply (after a restart: the output in place
// is kept, and recorded as nothing to render) and whose first render then
// fails must stay out of drift repair. Repair restores the last recorded
// output, and none was recorded: before the fix, the failed stage had
// already cleared the target's waiting, and repair wrote an empty file
// over the kept output (found by make chaos: "R1" on agent-2's cut
// template, an empty file for 0.7 s after a full disk was freed).
func TestWaitingTargetSurvivesFailedRender(t *testing.T) {
	c := sharedZooKeeper.For(t)
	follow := func(rootPath string, items map[string]string) *cache.Snapshot {
		t.Helper()
		p, _ := fleettest.NewPublisher(t, c.Addrs(), rootPath)
		mustPublish(t, p, items)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cc, err := cache.New(ctx, rootPath, cache.WithServers(c.Addrs(), 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		s, err := cc.Wait(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	web := follow("/web", map[string]string{"a": "w1"})
	// common's set lacks the item the template reads: its render fails.
	common := follow("/common", map[string]string{"other": "c1"})

	dest := join(t.TempDir(), "cut.conf")
	if err := os.WriteFile(dest, []byte("rendered before the restart"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := agent.TargetSpec{Name: "cut", Kind: agent.KindTemplate, Root: "web", Roots: []string{"common"},
		Template: `{{ item "a" }} {{ item "common" "x" }}`, Dest: dest, Mode: 0o644, UID: -1, GID: -1}
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := []string{"common", "web"}

	// 1. The first apply after a restart: web's snapshot, no cut yet.
	if out := r.Apply(ctx, agent.NewLiveRootsSnapshot(names, map[string]*cache.Snapshot{"web": web}, cache.Cut{})); out.Err != nil {
		t.Fatalf("apply without a cut: %v", out.Err)
	}
	// 2. The first cut: the template's render fails.
	cut := cache.Cut{"web": web, "common": common}
	if out := r.Apply(ctx, agent.NewLiveRootsSnapshot(names, map[string]*cache.Snapshot{"web": web, "common": common}, cut)); out.Err == nil {
		t.Fatal("the render of a missing item succeeded")
	}
	// 3. Drift repair (any event in the output's directory) must leave
	// the kept output alone: nothing was ever rendered for this target.
	if fixed := r.Repair(); len(fixed) != 0 {
		t.Errorf("drift repair restored %v, which never rendered", fixed)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "rendered before the restart" {
		t.Fatalf("the kept output became %q (%v)", b, err)
	}
}

package rollout

import (
	"errors"
	"github.com/zkconf/zkconf/fleet"
	"testing"

	"github.com/zkconf/zkconf/manifest"
)

// TestClassify: selection by the trusted status node's labels,
// else the registry's; states from what trusted nodes report.
func TestClassify(t *testing.T) {
	c := &manifest.Canary{Generation: 5, Selection: manifest.Selection{Selector: "zone=a"}, RolloutID: "r"}
	st := func(gen int64, zone string) fleet.Status {
		return fleet.Status{Generation: gen, Ready: true, Labels: map[string]string{"zone": zone}}
	}
	failing := st(5, "a")
	failing.Targets = []fleet.TargetResult{{OK: false}}
	rejected := st(4, "a")
	rejected.Attempted, rejected.LastError = 5, "check failed"
	notReady := st(5, "a")
	notReady.Ready = false
	agents := []fleet.Agent{
		{ID: "on-stable", HasNode: true, Status: st(4, "b"), Expected: true},
		{ID: "pending", HasNode: true, Status: st(4, "a"), Expected: true},
		{ID: "applied", HasNode: true, Status: st(5, "a"), Expected: true},
		{ID: "failing", HasNode: true, Status: failing, Expected: true},
		{ID: "rejected", HasNode: true, Status: rejected, Expected: true},
		{ID: "not-ready", HasNode: true, Status: notReady, Expected: true},
		{ID: "relabelled", HasNode: true, Status: st(5, "b"), Expected: true},
		{ID: "gone", Expected: true, Registration: &fleet.Registration{Labels: map[string]string{"zone": "a"}}},
		{ID: "forged", HasNode: true, Status: st(5, "a"), Untrusted: "bad acl", Expected: true,
			Registration: &fleet.Registration{Labels: map[string]string{"zone": "b"}}},
		{ID: "unreadable", HasNode: true, Err: errors.New("x")},
	}
	want := map[string]struct {
		sel   bool
		state string
	}{
		"on-stable": {false, StateStable}, "pending": {true, StateCandidate}, "applied": {true, StateApplied},
		"failing": {true, StateFailing}, "rejected": {true, StateFailing}, "not-ready": {true, StateCandidate},
		"relabelled": {false, StateApplied}, "gone": {true, StateGone}, "forged": {false, StateGone},
	}
	got := Classify(agents, 4, "", c)
	if len(got) != len(want) {
		t.Fatalf("got %d agents, want %d: %+v", len(got), len(want), got)
	}
	for _, g := range got {
		w := want[g.ID]
		if g.Selected != w.sel || g.State != w.state {
			t.Errorf("%s: selected %v state %s, want %v %s", g.ID, g.Selected, g.State, w.sel, w.state)
		}
	}
	for _, g := range Classify(agents, 4, "", nil) {
		if g.State != StateStable && g.State != StateGone {
			t.Errorf("without a rollout %s is %s", g.ID, g.State)
		}
	}
}

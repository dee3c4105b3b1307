package rollout

import (
	"errors"
	"testing"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// TestViewDriver: one rule for whether a rollout's driver is gone, which
// `confpush rollout status` and the dashboard used to judge apart (the
// CLI looked at Auto only, the dashboard at any plan): a rollout whose
// record carries a plan (auto, steps or a bake time) and whose driver's
// node is gone lost its driver; a record of another rollout says nothing.
func TestViewDriver(t *testing.T) {
	c := &manifest.Canary{RolloutID: "r1", Generation: 3}
	state := func(rec *publish.RolloutRecord, alive bool) *publish.RolloutState {
		return &publish.RolloutState{Stable: &manifest.Manifest{Generation: 2}, Canary: c, Record: rec, DriverAlive: alive}
	}
	for _, tc := range []struct {
		name string
		rs   *publish.RolloutState
		want string
	}{
		{"alive", state(&publish.RolloutRecord{RolloutID: "r1", Auto: true}, true), DriverAlive},
		{"auto, gone", state(&publish.RolloutRecord{RolloutID: "r1", Auto: true}, false), DriverGone},
		{"steps without auto, gone", state(&publish.RolloutRecord{RolloutID: "r1", Steps: []float64{10, 50}}, false), DriverGone},
		{"by hand", state(&publish.RolloutRecord{RolloutID: "r1"}, false), DriverNone},
		{"another rollout's record", state(&publish.RolloutRecord{RolloutID: "r0", Auto: true}, false), DriverNone},
		{"no record", state(nil, false), DriverNone},
	} {
		if got := NewView(tc.rs, nil).Driver; got != tc.want {
			t.Errorf("%s: driver %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCheckSelects: a selection must select an expected agent, judged by
// the labels agents report (the trusted status node's, else the
// registry's); agents nobody expects do not count.
func TestCheckSelects(t *testing.T) {
	agents := []fleet.Agent{
		{ID: "a1", HasNode: true, Expected: true, Status: fleet.Status{AgentID: "a1", Labels: map[string]string{"zone": "a"}}},
		{ID: "b1", Expected: true, Registration: &fleet.Registration{Labels: map[string]string{"zone": "b"}}},
		{ID: "c1", HasNode: true, Untrusted: "forged", Status: fleet.Status{Labels: map[string]string{"zone": "c"}}},
	}
	for sel, want := range map[string]bool{"zone=a": true, "zone=b": true, "zone=c": false, "zone=d": false} {
		err := checkSelects(agents, manifest.Selection{Selector: sel})
		var empty *EmptySelectionError
		if got := err == nil; got != want || (err != nil && (!errors.As(err, &empty) || empty.Expected != 2)) {
			t.Errorf("%s: %v", sel, err)
		}
	}
}

package rollout

import (
	"slices"
	"testing"
	"time"
)

// TestEvaluate: one failing agent fails at once; pending and gone
// selected agents hold the bake (the clock restarts); every selected
// agent applied passes only after the bake time; unselected agents on the
// stable side do not count; no selected agent never passes.
func TestEvaluate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bake := 10 * time.Second
	ra := func(id, state string, selected bool) Agent {
		return Agent{ID: id, State: state, Selected: selected, Expected: true}
	}
	stable := ra("b1", StateStable, false)

	h := Evaluate([]Agent{ra("a1", StateApplied, true), ra("a2", StateFailing, true), stable}, t0, t0.Add(time.Hour), bake)
	if h.Verdict != VerdictFail || !slices.Equal(h.Failing, []string{"a2"}) {
		t.Fatalf("failing: %+v", h)
	}
	h = Evaluate([]Agent{ra("a1", StateApplied, true), ra("a2", StateCandidate, true), stable}, t0, t0.Add(time.Hour), bake)
	if h.Verdict != VerdictWait || !h.HealthySince.IsZero() || !slices.Equal(h.Pending, []string{"a2"}) || h.Applied != 1 || h.Selected != 2 {
		t.Fatalf("pending: %+v", h)
	}
	h = Evaluate([]Agent{ra("a1", StateApplied, true), ra("a2", StateGone, true), stable}, t0, t0.Add(time.Hour), bake)
	if h.Verdict != VerdictWait || !h.HealthySince.IsZero() || !slices.Equal(h.Gone, []string{"a2"}) {
		t.Fatalf("gone: %+v", h)
	}
	all := []Agent{ra("a1", StateApplied, true), ra("a2", StateApplied, true), stable, ra("b2", StateGone, false)}
	h = Evaluate(all, time.Time{}, t0, bake)
	if h.Verdict != VerdictWait || !h.HealthySince.Equal(t0) || h.BakeLeft != bake || h.Applied != 2 || h.Selected != 2 {
		t.Fatalf("bake start: %+v", h)
	}
	h = Evaluate(all, h.HealthySince, t0.Add(4*time.Second), bake)
	if h.Verdict != VerdictWait || h.BakeLeft != 6*time.Second {
		t.Fatalf("baking: %+v", h)
	}
	if h = Evaluate(all, h.HealthySince, t0.Add(bake), bake); h.Verdict != VerdictPass {
		t.Fatalf("baked: %+v", h)
	}
	// An agent that went back to pending restarts the clock.
	h = Evaluate([]Agent{ra("a1", StateApplied, true), ra("a2", StateCandidate, true)}, t0, t0.Add(time.Hour), bake)
	if !h.HealthySince.IsZero() || h.Verdict != VerdictWait {
		t.Fatalf("restart: %+v", h)
	}
	if h = Evaluate([]Agent{stable}, t0, t0.Add(time.Hour), bake); h.Verdict != VerdictWait || h.Selected != 0 {
		t.Fatalf("none selected: %+v", h)
	}
}

package bench

import (
	"strings"
	"testing"
)

// TestOutsideUnchangedFiresOnADifference feeds fabricated results: the
// check passes when outside followers pay a root read per step (plus the
// promote's changed items) and reports each way of paying more.
func TestOutsideUnchangedFiresOnADifference(t *testing.T) {
	cost := func(root, items, cand float64) GroupCost {
		return GroupCost{Requests: root + items + cand, RootReads: root, ItemReads: items, CandidateReads: cand, Other: root + cand}
	}
	good := func() *CanaryResult {
		return &CanaryResult{Changed: 2, Rows: []CanaryRow{
			{Step: stepPlain, Steps: 5, Outside: cost(1, 2, 0)},
			{Step: stepStart, Steps: 2, Outside: cost(1, 0, 0)},
			{Step: stepWiden, Steps: 2, Outside: cost(1, 0, 0)},
			{Step: stepPromote, Steps: 1, Outside: cost(1, 2, 0)},
			{Step: stepAbort, Steps: 1, Outside: cost(1, 0, 0)},
		}}
	}
	if d := good().OutsideUnchanged(); len(d) != 0 {
		t.Fatalf("a clean result reported: %v", d)
	}
	if !strings.Contains(good().Markdown(), "Target met") {
		t.Fatal("the markdown of a clean result does not say the target is met")
	}
	for name, spoil := range map[string]func(*CanaryResult){
		"outside reads the candidate": func(c *CanaryResult) { c.Rows[1].Outside = cost(1, 0, 1) },
		"two root reads on a widen":   func(c *CanaryResult) { c.Rows[2].Outside = cost(2, 0, 0) },
		"items read on an abort":      func(c *CanaryResult) { c.Rows[4].Outside = cost(1, 2, 0) },
		"promote reads every item":    func(c *CanaryResult) { c.Rows[3].Outside = cost(1, 20, 0) },
	} {
		c := good()
		spoil(c)
		if d := c.OutsideUnchanged(); len(d) == 0 {
			t.Errorf("%s: not reported", name)
		}
		if strings.Contains(c.Markdown(), "Target met") {
			t.Errorf("%s: the markdown says the target is met", name)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/tools/bench"
)

// TestCanaryRequests runs the canary measurement alone (own ZooKeeper,
// four labelled caches) and checks the protocol's cost property, not
// timing: followers outside the canary make, for every rollout step, the
// requests they make for a plain publish (one root read, and item reads
// only for content that changed for them), and the report has the rows.
func TestCanaryRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper; run without -short (make test)")
	}
	rep, out := runSmoke(t, "--quick", "--canary-only")
	c := rep.Canary
	if c == nil || c.Followers != 4 || c.Outside != 2 || c.Canary != 2 {
		t.Fatalf("canary result %+v, want 4 followers, 2 on each side", c)
	}
	for _, step := range []string{"plain publish", "canary start", "widen", "promote", "abort", "every rollout step"} {
		r, ok := c.Row(step)
		if !ok || r.Steps == 0 {
			t.Errorf("no %q row", step)
		}
	}
	plain, _ := c.Row("plain publish")
	if want := float64(1 + rep.Settings.Changed); plain.Outside.Requests != want {
		t.Errorf("a plain publish cost an outside follower %v requests, want %v (one root read and the changed items)", plain.Outside.Requests, want)
	}
	for _, step := range []string{"canary start", "widen", "abort", "every rollout step"} {
		if r, _ := c.Row(step); r.Outside.Other != plain.Outside.Other || r.Outside.CandidateReads != 0 {
			t.Errorf("%s: outside followers made %v requests besides item reads (%v candidate reads), a plain publish %v",
				step, r.Outside.Other, r.Outside.CandidateReads, plain.Outside.Other)
		}
	}
	if r, _ := c.Row("promote"); r.Outside.Requests != plain.Outside.Requests {
		t.Errorf("a promote (the outside followers' content changes as by a plain publish) cost %v requests, a plain publish %v", r.Outside.Requests, plain.Outside.Requests)
	}
	if d := c.OutsideUnchanged(); len(d) > 0 {
		t.Errorf("outside followers' cost differs: %v", d)
	}
	if r, _ := c.Row("canary start"); r.Canary.CandidateReads == 0 && r.Canary.Requests == r.Outside.Requests {
		t.Log("no canary-side follower was in the 50 % start (bucket draw); the widen row covers them")
	}
	if r, _ := c.Row("widen"); r.Canary.CandidateReads+mustRow(t, c, "canary start").Canary.CandidateReads == 0 {
		t.Errorf("no canary-side follower read the candidate: the measurement did not exercise the canary")
	}
	md, err := os.ReadFile(filepath.Join(out, "canary-requests.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| plain publish |", "| canary start |", "| widen |", "| promote |", "| abort |", "| every rollout step |", "Target met", "load average"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("canary-requests.md lacks %q:\n%s", want, md)
		}
	}
}

func mustRow(t *testing.T, c *bench.CanaryResult, step string) bench.CanaryRow {
	t.Helper()
	r, ok := c.Row(step)
	if !ok {
		t.Fatalf("no %q row", step)
	}
	return r
}

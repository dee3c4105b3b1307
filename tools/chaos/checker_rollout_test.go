package chaos

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
)

// rolloutHistory is g1 (stable), g2 (candidate of g1, its own content),
// g3 (the end of the rollout: a promote or an abort of 2, carrying
// content end).
func rolloutHistory(g1, g2, end map[string][]byte, promote bool) map[int64]*histEntry {
	h := history(g1, g2, end)
	h[2].Candidate = true
	if promote {
		h[3].PromoteOf = 2
	} else {
		h[3].AbortOf = 2
	}
	return h
}

func TestCheckHistoryReportsRolloutViolations(t *testing.T) {
	g1, g2, g4 := sampleItems(1, 1), sampleItems(2, 2), sampleItems(4, 4)
	rec := func(seq int, kind string, items map[string][]byte, gen int64) *pubRecord {
		return &pubRecord{Seq: seq, Kind: kind, Nonce: nonceOf(items), Items: sigs(items), Outcome: outAcked, Gen: gen,
			PublishID: fmt.Sprint("p", gen), ResMode: "multi"}
	}
	records := func(endKind string, end map[string][]byte) []*pubRecord {
		e := rec(3, endKind, end, 3)
		e.EndOf = 2
		return []*pubRecord{rec(1, kindNormal, g1, 1), rec(2, kindCanary, g2, 2), e}
	}
	view := func(h map[int64]*histEntry) *zkView {
		return &zkView{history: h, live: h[int64(len(h))], liveItems: h[int64(len(h))].Items, blobs: blobSet(h)}
	}
	check := func(h map[int64]*histEntry, rs []*pubRecord, v *zkView) []string {
		t.Helper()
		c := newChecker(h, rs, nil)
		c.checkHistory(v, rs, nil, time.Now())
		for _, v := range c.violations {
			t.Log(v.Property, v.Msg)
		}
		return props(c.violations)
	}
	t.Run("clean promote and abort", func(t *testing.T) {
		if got := check(rolloutHistory(g1, g2, g2, true), records(kindPromote, g2), view(rolloutHistory(g1, g2, g2, true))); len(got) != 0 {
			t.Fatalf("promote: %v", got)
		}
		h := rolloutHistory(g1, g2, g1, false)
		if got := check(h, records(kindAbort, g1), view(h)); len(got) != 0 {
			t.Fatalf("abort: %v", got)
		}
	})
	t.Run("promote with the stable content, abort with the candidate's", func(t *testing.T) {
		h := rolloutHistory(g1, g2, g1, true)
		if got := check(h, records(kindPromote, g1), view(h)); !slices.Contains(got, "P4-publish") {
			t.Fatalf("promote carrying the stable content not reported: %v", got)
		}
		h = rolloutHistory(g1, g2, g2, false)
		if got := check(h, records(kindAbort, g2), view(h)); !slices.Contains(got, "P4-publish") {
			t.Fatalf("abort carrying the candidate's content not reported: %v", got)
		}
	})
	t.Run("a candidate ended twice, an end nobody asked for", func(t *testing.T) {
		h := history(g1, g2, g2, g1)
		h[2].Candidate = true
		h[3].PromoteOf = 2
		h[4].AbortOf = 2
		rs := records(kindPromote, g2)
		if got := check(h, rs, view(h)); !reflect.DeepEqual(got, []string{"P4-publish", "P4-publish"}) {
			t.Fatalf("got %v, want the second end and the unasked abort", got)
		}
	})
	t.Run("the root announces a candidate the history does not end with", func(t *testing.T) {
		h := rolloutHistory(g1, g2, g2, true)
		delete(h, 3)
		v := view(h)
		v.live, v.liveItems = h[1], h[1].Items
		v.live = &histEntry{Gen: 1, PublishID: "p1", Mode: "multi", Items: h[1].Items, Canary: &wireCanary{Generation: 2, Selector: "zone=a", RolloutID: "r1"}}
		rs := records(kindPromote, g2)[:2]
		if got := check(h, rs, v); len(got) != 0 {
			t.Fatalf("open rollout reported: %v", got)
		}
		v.live.Canary.Generation = 5
		if got := check(h, rs, v); !reflect.DeepEqual(got, []string{"P4-publish"}) {
			t.Fatalf("a canary naming no history entry: got %v", got)
		}
	})
	t.Run("a plain publish during a rollout that was not refused", func(t *testing.T) {
		h := history(g1, g2, g4)
		h[2].Candidate = true
		rs := []*pubRecord{rec(1, kindNormal, g1, 1), rec(2, kindCanary, g2, 2), rec(3, kindRefused, g4, 3)}
		rs[2].DuringRollout = "r1"
		if got := check(h, rs, view(h)); !reflect.DeepEqual(got, []string{"P7-rollout-refusal"}) {
			t.Fatalf("got %v", got)
		}
		rs[2].Outcome, rs[2].Gen, rs[2].Err = outFailed, 0, "a canary rollout is in progress"
		delete(h, 3)
		if got := check(h, rs, view(h)); len(got) != 0 {
			t.Fatalf("a refused publish reported: %v", got)
		}
	})
}

// TestCheckerFollowsHostsThroughARollout checks never torn and never
// backwards per host with candidate generations in the history: a host
// may show a candidate, then the abort (the stable content at a higher
// generation); it may not show a mix, nor go from the candidate back to
// the stable generation itself.
func TestCheckerFollowsHostsThroughARollout(t *testing.T) {
	g1, g2 := sampleItems(1, 1), sampleItems(2, 2)
	hist := rolloutHistory(g1, g2, g1, false) // 3 aborts 2
	now := time.Now()
	state := func(items map[string][]byte, gen int64) *obsState { return obsAt(now, items, gen, 0) }
	newC := func() *checker {
		c := newChecker(hist, nil, nil)
		for _, g := range []map[string][]byte{g1, g2} {
			c.nonceOf[sigOf(g["app.json"]).SHA] = nonceOf(g)
		}
		return c
	}
	t.Run("canary host: stable, candidate, abort", func(t *testing.T) {
		o := newAgentObs(0)
		o.states[tDir] = []*obsState{state(g1, 0), state(g2, 0), state(g1, 0)}
		o.states[tTmpl] = []*obsState{state(g1, 1), state(g2, 2), state(g1, 3)}
		c := newC()
		c.checkAgent(o, false)
		if len(c.violations) != 0 {
			t.Fatalf("%+v", c.violations)
		}
		if a := o.states[tDir][2].Assigned; a != 3 {
			t.Fatalf("the aborted set was assigned %d, want 3", a)
		}
	})
	t.Run("torn between candidate and stable, back from the candidate", func(t *testing.T) {
		mixed := tornOf(t, g2, g1)
		o := newAgentObs(1)
		o.states[tDir] = []*obsState{state(g2, 0), state(mixed, 0)}
		o.states[tTmpl] = []*obsState{state(g2, 2), state(g1, 1)}
		c := newC()
		c.checkAgent(o, false)
		if got := props(c.violations); !reflect.DeepEqual(got, []string{"P1-torn", "P2-backwards"}) {
			t.Fatalf("got %v", got)
		}
	})
}

func TestCheckFinalSelection(t *testing.T) {
	g1, g2 := sampleItems(1, 1), sampleItems(2, 2)
	hist := history(g1, g2)
	hist[2].Candidate = true
	now := time.Now()
	state := func(items map[string][]byte, gen int64) *obsState { return obsAt(now, items, gen, gen) }
	open := &histEntry{Gen: 1, PublishID: "p1", Items: hist[1].Items, Canary: &wireCanary{Generation: 2, Selector: "zone=a", RolloutID: "r1"}}
	closed := &histEntry{Gen: 1, PublishID: "p1", Items: hist[1].Items}
	host := func(items map[string][]byte, gen int64) *agentObs {
		o := newAgentObs(0)
		o.states[tDir] = []*obsState{state(items, gen)}
		o.states[tTmpl] = []*obsState{state(items, gen)}
		return o
	}
	for _, tc := range []struct {
		name  string
		live  *histEntry
		zone  string
		items map[string][]byte
		gen   int64
		want  int
	}{
		{"selected on the candidate", open, "a", g2, 2, 0},
		{"outside on stable", open, "b", g1, 1, 0},
		{"outside but already on the candidate (relabelled)", open, "b", g2, 2, 0},
		{"selected but left on stable", open, "a", g1, 1, 2},
		{"no rollout, left on a candidate", closed, "a", g2, 2, 2},
		{"no rollout, on live", closed, "b", g1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(hist, nil, nil)
			c.checkFinalSelection(0, tc.live, host(tc.items, tc.gen), "agent-7", map[string]string{"zone": tc.zone}, now)
			if len(c.violations) != tc.want {
				t.Fatalf("%d violations, want %d: %+v", len(c.violations), tc.want, c.violations)
			}
			for _, v := range c.violations {
				if v.Property != "P8-selection" {
					t.Fatalf("property %s", v.Property)
				}
			}
		})
	}
}

// TestSelectsAgreesWithTheDesign compares the checker's own selection
// with the manifest package's, over the selectors and percents the
// workload draws.
func TestSelectsAgreesWithTheDesign(t *testing.T) {
	sels := []manifest.Selection{
		{Selector: "zone=a"}, {Selector: "zone=b"}, {Percent: 10}, {Percent: 37}, {Percent: 59},
		{Selector: "zone in (a,b)", Percent: 25}, {Selector: "agent in (agent-1,agent-3)"},
		{Selector: "zone!=a"}, {Selector: "zone notin (b)", Percent: 50}, {Selector: "zone,!role"},
	}
	in := 0
	for _, s := range sels {
		for i := range 40 {
			id := fmt.Sprintf("agent-%d", i)
			labels := agentLabels(i)
			want := s.Selects(id, labels)
			got := selects(&wireCanary{Selector: s.Selector, Percent: s.Percent}, id, labels)
			if got != want {
				t.Fatalf("selection %+v, %s %v: checker says %v, manifest %v", s, id, labels, got, want)
			}
			if got {
				in++
			}
		}
	}
	if in == 0 || in == len(sels)*40 {
		t.Fatalf("degenerate: %d selected", in)
	}
}

// obsAt is an observed state of items at now, naming generation gen (a
// template output) and assigned generation assigned.
func obsAt(now time.Time, items map[string][]byte, gen, assigned int64) *obsState {
	s := &obsState{First: now, Last: now, Items: itemObsOf(items), Gen: gen, Nonce: nonceOf(items), Assigned: assigned}
	s.key = stateKey(s)
	return s
}

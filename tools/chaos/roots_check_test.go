package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/template"
)

// rootsSnap is a snapshot of common that offers main as another root, as
// confagent's renderer does for a template with roots: [main].
type rootsSnap struct {
	fakeSnap
	main fakeSnap
}

func (s rootsSnap) Root(name string) (template.Snapshot, bool) {
	if name == "main" {
		return s.main, true
	}
	return nil, false
}

func commonSet(nonce string, extra map[string]string) map[string][]byte {
	items := map[string][]byte{commonNonceItem: fmt.Appendf(nil, `{"nonce": %q}`, nonce)}
	for k, v := range extra {
		items[k] = []byte(v)
	}
	return items
}

func mainSet(nonce string) map[string][]byte {
	return map[string][]byte{"app.json": fmt.Appendf(nil, `{"request": %q}`, nonce), "a.conf": []byte("a " + nonce)}
}

// TestCutOutputRoundTrip: the template over both roots, rendered by the
// agent's template package, parses back to both generations, both
// nonces and common's items; no proper prefix parses.
func TestCutOutputRoundTrip(t *testing.T) {
	common := commonSet("c-1-9", map[string]string{"db/replicas/r1.conf": "r1\n\"quoted\"", "sp ace/ü.conf": "u"})
	snap := rootsSnap{fakeSnap{gen: 9, items: common}, fakeSnap{gen: 41, items: mainSet("r-1-77")}}
	out, err := template.Render("cut", cutTemplate, snap)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCutOutput(out)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	if c.mainGen != 41 || c.mainNonce != "r-1-77" || c.gen != 9 || c.nonce != "c-1-9" {
		t.Fatalf("parsed main %d %q, common %d %q", c.mainGen, c.mainNonce, c.gen, c.nonce)
	}
	if d := compareTemplate(sigs(common), c.items); d != "" {
		t.Fatalf("items differ: %s", d)
	}
	for n := 0; n < len(out); n++ {
		if _, err := parseCutOutput(out[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of a %d-byte output parsed", n, len(out))
		}
	}
}

// cutFixture: main's history 1 [zxid 10, 30), 2 [30, 70) (a canary's
// candidate 3 at zxid 50 leaves it live for hosts it does not select),
// candidate 3 [50, 70), promote 4 [70, -); common's 1 [20, 40),
// 2 [40, 60), 3 [60, -).
func cutFixture(t *testing.T) (*rootsChecker, map[int64]map[string][]byte) {
	t.Helper()
	mainHist := map[int64]*histEntry{}
	var records []*pubRecord
	for g, z := range map[int64]int64{1: 10, 2: 30, 3: 50, 4: 70} {
		items := mainSet(fmt.Sprint("r-", g))
		mainHist[gkey(0, g)] = &histEntry{Gen: g, Items: sigs(items), Czxid: z, Candidate: g == 3, Format: 1}
		records = append(records, &pubRecord{Kind: kindNormal, Nonce: fmt.Sprint("r-", g), Items: sigs(items)})
	}
	c := newChecker(mainHist, records, nil)
	commonHist := map[int64]*histEntry{}
	sets := map[int64]map[string][]byte{}
	var crecs []*commonRecord
	for g, z := range map[int64]int64{1: 20, 2: 40, 3: 60} {
		items := commonSet(fmt.Sprint("c-", g), map[string]string{"db/primary.conf": fmt.Sprint("primary ", g)})
		sets[g] = items
		commonHist[gkey(0, g)] = &histEntry{Gen: g, Items: sigs(items), Czxid: z, Format: 2}
		crecs = append(crecs, &commonRecord{Nonce: fmt.Sprint("c-", g), Items: sigs(items), Outcome: outAcked, Gen: g})
	}
	return newRootsChecker(c, commonHist, crecs), sets
}

// cutObs builds the observations of one agent's template over both roots
// from (main, common) generation pairs.
func cutObs(sets map[int64]map[string][]byte, pairs ...[2]int64) *agentObs {
	o := newAgentObs(2)
	at := time.Unix(1000, 0)
	for i, p := range pairs {
		s := &obsState{First: at.Add(time.Duration(i) * time.Second), MainGen: p[0], MainNonce: fmt.Sprint("r-", p[0]),
			Gen: p[1], Nonce: fmt.Sprint("c-", p[1]), Items: map[string]itemObs{}}
		for n, sg := range sigs(sets[p[1]]) {
			s.Items[n] = itemObs{SHA: sg.SHA, Size: sg.Size}
		}
		s.key = fmt.Sprint(i)
		o.states[tCut] = append(o.states[tCut], s)
	}
	return o
}

func vprops(vs []Violation) string {
	var p []string
	for _, v := range vs {
		p = append(p, v.Property+": "+v.Msg)
	}
	return strings.Join(p, "\n")
}

// TestCheckerProvesCuts is the mutation check of the cut: an agent that
// rendered only cuts (including the stable generation beside common's
// newer ones while a canary's candidate is out) passes; the same history
// with one combination that was never live at one moment injected fails
// with R4-cut, and so does a step back or a torn common part.
func TestCheckerProvesCuts(t *testing.T) {
	rc, sets := cutFixture(t)
	rc.checkAgent(cutObs(sets, [2]int64{1, 1}, [2]int64{2, 1}, [2]int64{2, 2}, [2]int64{2, 3}, [2]int64{3, 3}, [2]int64{4, 3}))
	if len(rc.violations) != 0 {
		t.Fatalf("cuts only, yet:\n%s", vprops(rc.violations))
	}

	for _, tc := range []struct {
		name  string
		pairs [][2]int64
		want  string
	}{
		// main 1 ended at zxid 30, common 2 began at 40.
		{"main 1 with common 2", [][2]int64{{1, 1}, {1, 2}, {2, 2}}, "R4-cut"},
		// main 4 began at 70, common 1 ended at 40.
		{"main 4 with common 1", [][2]int64{{4, 1}}, "R4-cut"},
		// the candidate began at 50, common 1 ended at 40.
		{"candidate with common 1", [][2]int64{{3, 1}}, "R4-cut"},
		{"common goes back", [][2]int64{{2, 2}, {2, 1}}, "R2-backwards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, sets := cutFixture(t)
			rc.checkAgent(cutObs(sets, tc.pairs...))
			if len(rc.violations) != 1 || rc.violations[0].Property != tc.want {
				t.Fatalf("want one %s, got:\n%s", tc.want, vprops(rc.violations))
			}
		})
	}

	t.Run("torn common part", func(t *testing.T) {
		rc, sets := cutFixture(t)
		o := cutObs(sets, [2]int64{2, 2})
		o.states[tCut][0].Items["db/primary.conf"] = itemObs{SHA: hexSum([]byte("primary 1")), Size: 9}
		rc.checkAgent(o)
		if len(rc.violations) != 1 || rc.violations[0].Property != "R1-torn" {
			t.Fatalf("want one R1-torn, got:\n%s", vprops(rc.violations))
		}
	})
}

// TestCheckerCommonDir: common's dir target must hold one generation's
// set, never going back; a set mixing two generations is torn.
func TestCheckerCommonDir(t *testing.T) {
	rc, sets := cutFixture(t)
	o := newAgentObs(3)
	add := func(items map[string][]byte) {
		s := &obsState{First: time.Unix(int64(2000+len(o.states[tDir])), 0), Items: map[string]itemObs{}}
		for n, sg := range sigs(items) {
			s.Items[n] = itemObs{SHA: sg.SHA, Size: sg.Size}
		}
		o.states[tDir] = append(o.states[tDir], s)
	}
	add(sets[1])
	add(sets[3])
	rc.checkAgent(o)
	if len(rc.violations) != 0 || rc.treeStates != 2 {
		t.Fatalf("whole sets: %d tree states, violations:\n%s", rc.treeStates, vprops(rc.violations))
	}
	mixed := commonSet("c-1", map[string]string{"db/primary.conf": "primary 3"})
	add(mixed)
	add(sets[2])
	rc.violations = nil
	rc.checkAgent(o)
	if got := vprops(rc.violations); len(rc.violations) != 2 || !strings.Contains(got, "R1-torn") || !strings.Contains(got, "R2-backwards") {
		t.Fatalf("want R1-torn (mixed) and R2-backwards (3 then 2), got:\n%s", got)
	}
}

// TestHoldWaitsForCommonPublish: a hold waits for common's publish in
// progress too (the disk-full, reload and wipe faults heal with both
// publishers paused), and common's publisher does not start one while a
// hold is on.
func TestHoldWaitsForCommonPublish(t *testing.T) {
	w := newWorkload(1, nil, nil)
	started, finish := make(chan struct{}), make(chan struct{})
	go w.gated(&w.commonBusy, func() { close(started); <-finish })
	<-started
	held := make(chan func())
	go func() { held <- w.hold() }()
	select {
	case <-held:
		t.Fatal("the hold did not wait for common's publish in progress")
	case <-time.After(100 * time.Millisecond):
	}
	close(finish)
	var release func()
	select {
	case release = <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold never returned after common's publish ended")
	}
	ran := make(chan struct{})
	go w.gated(&w.commonBusy, func() { close(ran) })
	select {
	case <-ran:
		t.Fatal("common's publisher published during a hold")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("common's publisher never resumed after the hold")
	}
}

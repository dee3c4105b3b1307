package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of the checks behind the trust-and-recovery fault kinds: each one reports
// its violation, and stays quiet on a clean record.

func TestReloadCommandLogsWhatItReloaded(t *testing.T) {
	dir := t.TempDir()
	a := &agentProc{dir: dir, tmplOut: filepath.Join(dir, "summary.txt")}
	if err := os.WriteFile(a.tmplOut, []byte("zkconf-chaos summary\ngeneration 7\nnonce r-1-7\nend 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() error {
		cmd := exec.Command("/bin/sh", "-c", a.reloadCommand())
		cmd.Env = append(os.Environ(), "ZKCONF_GENERATION=7", "ZKCONF_DEST="+a.tmplOut)
		return cmd.Run()
	}
	if err := os.WriteFile(a.reloadFlag(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(); err == nil {
		t.Fatal("the reload succeeded while the flag exists")
	}
	if err := os.Remove(a.reloadFlag()); err != nil {
		t.Fatal(err)
	}
	if err := run(); err != nil {
		t.Fatalf("the reload failed without the flag: %v", err)
	}
	lines := readReloadLog(a)
	if len(lines) != 2 || lines[0].OK || !lines[1].OK {
		t.Fatalf("log %+v", lines)
	}
	for _, l := range lines {
		if l.Gen != 7 || l.Nonce != "r-1-7" || time.Since(l.At) > time.Minute || time.Since(l.At) < 0 {
			t.Fatalf("line %+v", l)
		}
	}
}

func TestCheckReloadsReportsForgottenFailures(t *testing.T) {
	t0 := time.Now()
	bound := 25 * time.Second
	line := func(ok bool, gen int64, after time.Duration) reloadLine {
		return reloadLine{OK: ok, Gen: gen, At: t0.Add(after), Nonce: fmt.Sprint("r-", gen)}
	}
	heal := reloadHeal{Agent: 1, At: t0.Add(10 * time.Second), Failed: line(false, 5, 9*time.Second)}
	cases := []struct {
		name  string
		lines []reloadLine
		want  int
	}{
		{"retried, then the final generation", []reloadLine{line(true, 4, 0), line(false, 5, 9*time.Second), line(true, 5, 12*time.Second), line(true, 9, 60*time.Second)}, 0},
		{"never retried", []reloadLine{line(true, 4, 0), line(false, 5, 9*time.Second), line(true, 9, 60*time.Second)}, 1},
		{"retried too late", []reloadLine{line(false, 5, 9*time.Second), line(true, 5, 40*time.Second), line(true, 9, 60*time.Second)}, 1},
		{"the final reload failed", []reloadLine{line(false, 5, 9*time.Second), line(true, 5, 12*time.Second), line(false, 9, 60*time.Second)}, 1},
		{"the final generation never reloaded", []reloadLine{line(false, 5, 9*time.Second), line(true, 5, 12*time.Second), line(true, 8, 60*time.Second)}, 1},
		{"no reload at all", nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(nil, nil, nil)
			c.checkReloads(1, tc.lines, []reloadHeal{heal}, 9, "r-9", bound, t0.Add(time.Minute))
			if len(c.violations) != tc.want {
				t.Fatalf("%d violations, want %d: %+v", len(c.violations), tc.want, c.violations)
			}
			for _, v := range c.violations {
				if v.Property != "reload-retry" || v.Agent != 1 {
					t.Fatalf("violation %+v", v)
				}
			}
		})
	}
	// Another agent's heal is not this agent's business.
	c := newChecker(nil, nil, nil)
	c.checkReloads(2, []reloadLine{line(true, 9, 60*time.Second)}, []reloadHeal{heal}, 9, "r-9", bound, t0)
	if len(c.violations) != 0 {
		t.Fatalf("violations %+v", c.violations)
	}
}

func TestCheckForgedReportsCountedForgeries(t *testing.T) {
	now := time.Now()
	clean := fleetSample{At: now, Gen: 7, Applied: []string{"agent-0", "agent-2"}, AtLatest: 2, Forged: []string{"ghost-1-5"}}
	counted := clean
	counted.Applied = []string{"agent-0", "ghost-1-5"}
	summed := clean
	summed.AtLatest = 3
	waited := clean
	waited.Waited = []string{"agent-0", "ghost-1-5"}
	squatOK := squatSample{At: now, Agent: 1, Path: "/s/agent-1", Ours: true}
	squatWritten := squatOK
	squatWritten.Changed = true
	squatGone := squatWritten // the node is no longer the forger's: the agent may own it
	squatGone.Ours = false
	for _, tc := range []struct {
		name   string
		fleet  []fleetSample
		squats []squatSample
		want   []string
	}{
		{"clean", []fleetSample{clean}, []squatSample{squatOK, squatGone}, nil},
		{"a forged node counted as applied", []fleetSample{clean, counted}, nil, []string{"forged-status"}},
		{"the summary counts more than the real agents", []fleetSample{summed}, nil, []string{"forged-status"}},
		{"a rollout wait counts a forged node", []fleetSample{waited}, nil, []string{"forged-status"}},
		{"the agent wrote into the squatted node (reported once)", nil, []squatSample{squatOK, squatWritten, squatWritten}, []string{"forged-status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(nil, nil, nil)
			c.checkForged(tc.fleet, tc.squats)
			if got := props(c.violations); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v: %+v", got, tc.want, c.violations)
			}
		})
	}
}

// incHistory is two incarnations: three generations, then (after a wipe)
// two, numbered from 1 again.
func incHistory() (hist map[int64]*histEntry, sets [][]map[string][]byte) {
	hist = map[int64]*histEntry{}
	sets = [][]map[string][]byte{
		{sampleItems(1, 1), sampleItems(2, 2), sampleItems(3, 3)},
		{sampleItems(4, 4), sampleItems(5, 5)},
	}
	for inc, ss := range sets {
		for i, s := range ss {
			g := int64(i + 1)
			hist[gkey(inc, g)] = &histEntry{Gen: g, Inc: inc, PublishID: fmt.Sprint("p", inc, g), Mode: "multi", Items: sigs(s)}
		}
	}
	return hist, sets
}

func incChecker(hist map[int64]*histEntry, sets [][]map[string][]byte) *checker {
	c := newChecker(hist, nil, nil)
	for _, ss := range sets {
		for _, s := range ss {
			c.nonceOf[sigOf(s["app.json"]).SHA] = nonceOf(s)
		}
	}
	return c
}

func TestCheckerReasonsPerIncarnation(t *testing.T) {
	hist, sets := incHistory()
	now := time.Now()
	state := func(inc int, gen int64) *obsState {
		items := sets[inc][gen-1]
		s := &obsState{First: now, Last: now, Items: itemObsOf(items), Gen: gen, Nonce: nonceOf(items)}
		s.key = stateKey(s)
		return s
	}
	t.Run("old incarnation to new", func(t *testing.T) {
		o := newAgentObs(3)
		o.states[tDir] = []*obsState{state(0, 2), state(0, 3), state(1, 1), state(1, 2)}
		o.states[tTmpl] = []*obsState{state(0, 2), state(0, 3), state(1, 1), state(1, 2)}
		c := incChecker(hist, sets)
		c.checkAgent(o, false)
		if len(c.violations) != 0 {
			t.Fatalf("violations: %+v", c.violations)
		}
		// Generation 1 of the new incarnation is told from generation 1
		// of the old one by its request nonce.
		if got := o.states[tTmpl][2].Assigned; got != gkey(1, 1) {
			t.Fatalf("template state assigned %s", genName(got))
		}
		if got := o.states[tDir][2].Assigned; got != gkey(1, 1) {
			t.Fatalf("dir state assigned %s", genName(got))
		}
	})
	t.Run("new incarnation back to old", func(t *testing.T) {
		o := newAgentObs(3)
		o.states[tDir] = []*obsState{state(0, 3), state(1, 1), state(0, 3)}
		// Generation 2 of the old incarnation after generation 1 of the
		// new: a smaller-looking number is not what makes it backwards.
		o.states[tTmpl] = []*obsState{state(1, 1), state(0, 2)}
		c := incChecker(hist, sets)
		c.checkAgent(o, false)
		if got := props(c.violations); !reflect.DeepEqual(got, []string{"P2-backwards", "P2-backwards"}) {
			t.Fatalf("got %v: %+v", got, c.violations)
		}
	})
	t.Run("a template output of the new incarnation with old content", func(t *testing.T) {
		o := newAgentObs(3)
		torn := state(1, 2)
		torn.Nonce = nonceOf(sets[0][1]) // generation 2's number, the old incarnation's request
		o.states[tTmpl] = []*obsState{torn}
		c := incChecker(hist, sets)
		c.checkAgent(o, false)
		if got := props(c.violations); !reflect.DeepEqual(got, []string{"P1-torn"}) {
			t.Fatalf("got %v: %+v", got, c.violations)
		}
	})
}

func TestCheckIncarnationsReportsAReusedID(t *testing.T) {
	now := time.Now()
	view := func(inc int, id string, entryIDs ...string) *zkView {
		v := &zkView{inc: inc, history: map[int64]*histEntry{}, live: &histEntry{IncID: id}}
		for i, e := range entryIDs {
			v.history[int64(i+1)] = &histEntry{Gen: int64(i + 1), IncID: e}
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		views []*zkView
		want  int
	}{
		{"no wipe", []*zkView{view(0, "a", "a", "a")}, 0},
		{"a new id", []*zkView{view(0, "a", "a"), view(1, "b", "b", "b")}, 0},
		{"the same id after the wipe", []*zkView{view(0, "a", "a"), view(1, "a", "a")}, 1},
		{"no id after the wipe", []*zkView{view(0, "", ""), view(1, "", "")}, 1},
		{"an entry of another incarnation", []*zkView{view(0, "a", "a"), view(1, "b", "b", "a")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(nil, nil, nil)
			c.checkIncarnations(tc.views, now)
			if len(c.violations) != tc.want {
				t.Fatalf("%d violations, want %d: %+v", len(c.violations), tc.want, c.violations)
			}
		})
	}
}

// TestWipeRecoveryIsChecked: after an ensemble wipe every agent must
// reach the new incarnation's first generation within the bound.
func TestWipeRecoveryIsChecked(t *testing.T) {
	hist, sets := incHistory()
	start := time.Now()
	cfg := Config{SessionTimeout: 4 * time.Second, ResyncJitter: 2 * time.Second, Slack: 15 * time.Second}
	bound := cfg.Bound()
	wipe := faultRec{Kind: fEnsembleWipe, Target: "every server", Agent: -1, Start: start.Add(10 * time.Second), End: start.Add(15 * time.Second)}
	firstNew := start.Add(16 * time.Second)
	records := []*pubRecord{
		{Inc: 0, Gen: 3, Outcome: outAcked, End: start.Add(5 * time.Second)},
		{Inc: 1, Gen: 1, Outcome: outAcked, End: firstNew},
		{Inc: 1, Gen: 2, Outcome: outAcked, End: start.Add(200 * time.Second)},
	}
	ackedAt := map[int64]time.Time{}
	for _, r := range records {
		ackedAt[gkey(r.Inc, r.Gen)] = r.End
	}
	finalAt := start.Add(300 * time.Second)
	run := func(reachedAfter time.Duration) []string {
		log, err := newEventLog(start, filepath.Join(t.TempDir(), "h.log"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer log.close()
		o := newAgentObs(0)
		at := func(d time.Duration) time.Time { return start.Add(d) }
		mk := func(inc int, gen int64, from, to time.Time) *obsState {
			items := sets[inc][gen-1]
			s := &obsState{First: from, Last: to, Items: itemObsOf(items), Gen: gen, Nonce: nonceOf(items)}
			s.key = stateKey(s)
			return s
		}
		reached := firstNew.Add(reachedAfter)
		for _, tg := range []string{tDir, tTmpl} {
			o.states[tg] = []*obsState{mk(0, 3, at(6*time.Second), reached), mk(1, 1, reached, finalAt)}
		}
		r := &runner{cfg: cfg, log: log, agents: []*agentProc{{idx: 0, id: "agent-0"}}, obs: []*agentObs{o}}
		c := incChecker(hist, sets)
		c.checkAgent(o, false)
		faults := []faultRec{wipe}
		r.checkRecoveries(c, append(faults, wipeRecoveries(faults, records, 1)...), ackedAt, finalAt)
		return props(c.violations)
	}
	if got := run(bound / 2); len(got) != 0 {
		t.Fatalf("in time: %v", got)
	}
	if got := run(bound + 5*time.Second); !reflect.DeepEqual(got, []string{"recovery"}) {
		t.Fatalf("too late: got %v", got)
	}
}

// TestDiskFullFillsTheOutputFilesystem: the nemesis's ballast leaves no
// room for the next write on the agent's output tmpfs (mounted as the run
// mounts it; the suite runs as root), and removing it heals.
func TestDiskFullFillsTheOutputFilesystem(t *testing.T) {
	dir := t.TempDir()
	a := &agentProc{id: "agent-0", dirOut: filepath.Join(dir, "out", "files"), tmplOut: filepath.Join(dir, "out", "summary.txt")}
	h := &harness{base: dir}
	t.Cleanup(h.cleanup)
	if err := mountOutputs(h, a); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(a.dirOut), &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
		t.Fatalf("not a tmpfs (type %x): %v", st.Type, err)
	}
	if err := fillDisk(a); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(a.tmplOut, []byte(strings.Repeat("x", 64<<10)), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a 64 KiB write on the full filesystem: %v, want ENOSPC", err)
	}
	if err := os.Remove(a.ballast()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.tmplOut, []byte(strings.Repeat("x", 64<<10)), 0o644); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
}

// TestHoldPausesThePublisher: a hold waits for the publish in progress,
// holds overlap, and tryHold declines when another fault holds the
// publisher or pauses used their share of the run.
func TestHoldPausesThePublisher(t *testing.T) {
	w := newWorkload(1, nil, nil)
	if _, ok := w.tryHold(); ok {
		t.Fatal("tryHold before the publisher runs")
	}
	w.started = time.Now().Add(-100 * time.Second)
	w.busy = true // a publish in progress
	got := make(chan func())
	go func() { r, _ := w.tryHold(); got <- r }()
	select {
	case <-got:
		t.Fatal("the hold did not wait for the publish in progress")
	case <-time.After(100 * time.Millisecond):
	}
	w.gateMu.Lock()
	w.busy = false
	w.gate.Broadcast()
	w.gateMu.Unlock()
	var release func()
	select {
	case release = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold never returned after the publish ended")
	}
	if _, ok := w.tryHold(); ok {
		t.Fatal("tryHold while another fault holds the publisher")
	}
	wipe := w.hold() // the wipe holds regardless
	release()
	if w.holds != 1 {
		t.Fatalf("%d holds after one release", w.holds)
	}
	wipe()
	if w.holds != 0 {
		t.Fatalf("%d holds after both releases", w.holds)
	}
	if r, ok := w.tryHold(); !ok {
		t.Fatal("tryHold declined with nobody holding and the budget unused")
	} else {
		r()
	}
	w.heldTotal = 30 * time.Second // more than a fifth of 100s
	if _, ok := w.tryHold(); ok {
		t.Fatal("tryHold beyond the budget")
	}
}

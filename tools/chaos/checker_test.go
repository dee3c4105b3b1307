package chaos

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/template"
	"github.com/zkconf/zkconf/manifest"
)

// These tests check the checker: that it reads what the agent really
// writes, and that it reports each kind of violation when one is there.
// (They may use the agent's packages to produce outputs; the checker does
// not.)

type fakeSnap struct {
	gen   int64
	items map[string][]byte
}

func (s fakeSnap) Generation() int64 { return s.gen }
func (s fakeSnap) Names() []string   { return slices.Collect(maps.Keys(s.items)) }
func (s fakeSnap) Get(n string) ([]byte, bool) {
	b, ok := s.items[n]
	return b, ok
}

func sampleItems(seed uint64, seq int) map[string][]byte {
	w := newWorkload(seed, nil, nil)
	w.tree = false // flat names: treeItems adds paths
	items := map[string][]byte{}
	for range 12 {
		w.addItem(items, seq)
	}
	items["blob-9999.bin"] = []byte("\x00\xff\xfe binary \x01")
	items["empty.conf"] = []byte{}
	items["app.json"] = w.appJSON(fmt.Sprintf("r-%d-%d", seed, seq), seq)
	return items
}

func TestTemplateOutputRoundTrip(t *testing.T) {
	items := sampleItems(1, 7)
	out, err := template.Render("summary", summaryTemplate, fakeSnap{gen: 42, items: items})
	if err != nil {
		t.Fatal(err)
	}
	gen, nonce, got, err := parseTemplateOutput(out)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	if gen != 42 || nonce != "r-1-7" {
		t.Fatalf("generation %d nonce %q", gen, nonce)
	}
	if diff := compareTemplate(sigs(items), got); diff != "" {
		t.Fatalf("items differ: %s", diff)
	}
	// No proper prefix of an output parses: a partial file is always seen.
	for n := 0; n < len(out); n += 1 + n/50 {
		if _, _, _, err := parseTemplateOutput(out[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of a %d-byte output parsed", n, len(out))
		}
	}
}

// history builds ZooKeeper-like history entries from sets.
func history(sets ...map[string][]byte) map[int64]*histEntry {
	h := map[int64]*histEntry{}
	for i, s := range sets {
		h[int64(i+1)] = &histEntry{Gen: int64(i + 1), PublishID: fmt.Sprint("p", i+1), Mode: "multi", Items: sigs(s), Format: formatFor(s)}
	}
	return h
}

func itemObsOf(items map[string][]byte) map[string]itemObs {
	out := map[string]itemObs{}
	for n, s := range sigs(items) {
		out[n] = itemObs{SHA: s.SHA, Size: s.Size}
	}
	return out
}

func props(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Property)
	}
	slices.Sort(out)
	return out
}

func TestCheckerReportsViolations(t *testing.T) {
	g1, g2 := sampleItems(1, 1), sampleItems(2, 2)
	g3 := maps.Clone(g2)
	g3["app.json"] = []byte(`{"request":"r-3"}`)
	g3["poison.conf"] = []byte("x " + PoisonToken)
	g4 := maps.Clone(g1) // a rollback to 1
	hist := history(g1, g2, g3, g4)
	hist[4].RollbackOf = 1
	poison := map[sig]bool{sigOf(g3["poison.conf"]): true}
	now := time.Now()
	state := func(items map[string][]byte, gen int64) *obsState {
		s := &obsState{First: now, Last: now, Items: itemObsOf(items), Gen: gen, Nonce: nonceOf(items)}
		s.key = stateKey(s)
		return s
	}

	t.Run("clean, with a rollback", func(t *testing.T) {
		o := newAgentObs(1)
		o.states[tDir] = []*obsState{state(g1, 0), state(g2, 0), state(g3, 0), state(g1, 0)}
		o.states[tTmpl] = []*obsState{state(g1, 1), state(g2, 2), state(g3, 3), state(g4, 4)}
		c := newChecker(hist, nil, poison)
		c.nonceOf[sigOf(g3["app.json"]).SHA] = "r-3"
		for _, g := range []map[string][]byte{g1, g2} {
			c.nonceOf[sigOf(g["app.json"]).SHA] = nonceOf(g)
		}
		c.checkAgent(o, false)
		if len(c.violations) != 0 {
			t.Fatalf("violations on a clean history: %+v", c.violations)
		}
		if a := o.states[tDir][3].Assigned; a != 4 {
			t.Fatalf("rolled-back set assigned generation %d, want 4", a)
		}
	})
	t.Run("torn, backwards, partial, rejected content", func(t *testing.T) {
		torn := tornOf(t, g2, g1)
		partial := maps.Clone(g2)
		var big string
		for n, d := range g2 {
			if len(d) > 10 && !strings.HasSuffix(n, ".json") {
				big = n
			}
		}
		partial[big] = g2[big][:len(g2[big])/2]
		o := newAgentObs(0)
		o.states[tDir] = []*obsState{state(g2, 0), state(torn, 0), state(g3, 0), state(partial, 0)}
		o.states[tTmpl] = []*obsState{state(g2, 2), state(g1, 1), {First: now, Bad: "no end line"}}
		o.links[big] = map[itemObs]time.Time{{SHA: sigOf(partial[big]).SHA, Size: int64(len(partial[big]))}: now}
		c := newChecker(hist, nil, poison)
		for _, g := range []map[string][]byte{g1, g2} {
			c.nonceOf[sigOf(g["app.json"]).SHA] = nonceOf(g)
		}
		c.checkAgent(o, true)
		got := props(c.violations)
		want := []string{"P1-torn", "P1-torn", "P2-backwards", "P3-partial", "P3-partial", "P3-partial", "P6-rejected-content"}
		if !reflect.DeepEqual(got, want) {
			for _, v := range c.violations {
				t.Log(v.Property, v.Msg)
			}
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("dir backwards", func(t *testing.T) {
		o := newAgentObs(2)
		o.states[tDir] = []*obsState{state(g3, 0), state(g2, 0)}
		c := newChecker(hist, nil, poison)
		c.checkAgent(o, false)
		if got := props(c.violations); !reflect.DeepEqual(got, []string{"P2-backwards"}) {
			t.Fatalf("got %v", got)
		}
	})
}

func TestCheckHistoryReportsViolations(t *testing.T) {
	g1, g2, g3 := sampleItems(1, 1), sampleItems(2, 2), sampleItems(3, 3)
	hist := history(g1, g2, g3)
	rec := func(seq int, items map[string][]byte, out string, gen int64) *pubRecord {
		return &pubRecord{Seq: seq, Kind: kindNormal, Nonce: nonceOf(items), Items: sigs(items), Outcome: out, Gen: gen,
			PublishID: fmt.Sprint("p", gen), ResMode: "multi"}
	}
	view := func() *zkView {
		return &zkView{history: hist, live: hist[3], liveItems: sigs(g3), blobs: blobSet(hist)}
	}
	t.Run("clean", func(t *testing.T) {
		records := []*pubRecord{rec(1, g1, outAcked, 1), rec(2, g2, outUnknown, 0), rec(3, g3, outAcked, 3)}
		c := newChecker(hist, records, nil)
		st := c.checkHistory(view(), records, records[2], time.Now())
		if len(c.violations) != 0 || st.UnknownLanded != 1 {
			t.Fatalf("violations %+v, stats %+v", c.violations, st)
		}
	})
	t.Run("content only live, or neither stored nor live", func(t *testing.T) {
		records := []*pubRecord{rec(1, g1, outAcked, 1), rec(2, g2, outAcked, 2), rec(3, g3, outAcked, 3)}
		v := view()
		// The live generation's blobs not stored yet (its publisher died
		// after the acknowledgement): its items hold the content.
		for _, s := range hist[3].Items {
			delete(v.blobs, s.SHA)
		}
		c := newChecker(hist, records, nil)
		c.checkHistory(v, records, records[2], time.Now())
		if len(c.violations) != 0 {
			t.Fatalf("content held by live items reported: %+v", c.violations)
		}
		// A past generation's content that is neither.
		gone := 0
		for _, s := range hist[1].Items {
			if !v.liveHas(s.SHA) {
				delete(v.blobs, s.SHA)
				gone++
			}
		}
		if gone == 0 {
			t.Fatal("test set-up: generation 1 shares all its content with the live one")
		}
		c = newChecker(hist, records, nil)
		c.checkHistory(v, records, records[2], time.Now())
		if got := props(c.violations); len(got) == 0 || got[0] != "P4-publish" {
			t.Fatalf("content neither stored nor live not reported: %v", got)
		}
	})
	t.Run("failed but landed, acked but different, unknown generation", func(t *testing.T) {
		other := sampleItems(9, 9)
		records := []*pubRecord{rec(1, g1, outAcked, 1), rec(2, g2, outFailed, 0), rec(3, other, outAcked, 3)}
		records[2].Nonce = nonceOf(g3) + "-not"
		c := newChecker(hist, records, nil)
		c.checkHistory(view(), records, records[2], time.Now())
		got := props(c.violations)
		want := []string{"P4-publish", "P4-publish", "P4-publish"}
		if !reflect.DeepEqual(got, want) {
			for _, v := range c.violations {
				t.Log(v.Msg)
			}
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// liveHas reports whether a live item holds content sha.
func (v *zkView) liveHas(sha string) bool {
	for _, s := range v.liveItems {
		if s.SHA == sha {
			return true
		}
	}
	return false
}

func blobSet(h map[int64]*histEntry) map[string]bool {
	out := map[string]bool{}
	for _, e := range h {
		for _, s := range e.Items {
			out[s.SHA] = true
		}
	}
	return out
}

// TestPollDirReadsTheRealLayout writes generations with the agent's own
// DirWriter and reads them back with the checker's reader.
func TestPollDirReadsTheRealLayout(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "out")
	o := newAgentObs(0)
	o.pollDir(dest, time.Now())
	w := render.NewDirWriter(dest)
	for seq := 1; seq <= 3; seq++ {
		items := sampleItems(uint64(seq), seq)
		if _, err := w.Write(items, render.DefaultFileOptions()); err != nil {
			t.Fatal(err)
		}
		o.pollDir(dest, time.Now())
		s := o.latest(tDir)
		if s == nil || s.Bad != "" || digest(obsSigs(s.Items)) != digest(sigs(items)) {
			t.Fatalf("generation %d read as %+v", seq, s)
		}
		for name, m := range o.links {
			if _, ok := items[name]; ok && len(m) == 0 {
				t.Fatalf("link %s not read", name)
			}
		}
		o.pollDir(dest, time.Now()) // unchanged: folded into the same state
	}
	if n := len(o.states[tDir]); n != 4 { // absent + 3 generations
		t.Fatalf("%d states, want 4", n)
	}
	if len(o.anomalies) != 0 {
		t.Fatalf("anomalies: %+v", o.anomalies)
	}
	// A file changed in place inside the current set is seen.
	cur, _ := os.Readlink(filepath.Join(dest, "..data"))
	entries, _ := os.ReadDir(filepath.Join(dest, cur))
	f := filepath.Join(dest, cur, entries[0].Name())
	if err := os.WriteFile(f, []byte("torn in place, with a different size"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.pollDir(dest, time.Now())
	if n := len(o.states[tDir]); n != 5 {
		t.Fatalf("an in-place change was not seen (%d states)", n)
	}
}

// treeItems is a set with items at depths 1 to 4, drawn by the
// workload's tree mode.
func treeItems(seed uint64, seq int) map[string][]byte {
	w := newWorkload(seed, nil, nil)
	w.tree = true
	items := sampleItems(seed, seq)
	for range 12 {
		w.addItem(items, seq)
	}
	items["conf.d/invalid/deep.conf"] = w.text(seq, 64)
	items["conf.d/a/b.d/deepest.conf"] = w.text(seq, 64)
	return items
}

// TestPollDirReadsATree writes tree generations with the agent's own
// DirWriter and reads them back as trees: one state per generation, item
// paths through the generation directory and through the top-level links;
// a sub-directory holding another generation's file is torn, an empty
// directory is no generation's, and a top-level link that does not point
// into ..data is reported.
func TestPollDirReadsATree(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "out")
	o := newAgentObs(0)
	w := render.NewDirWriter(dest)
	var gens []map[string][]byte
	for seq := 1; seq <= 3; seq++ {
		items := treeItems(uint64(seq), seq)
		gens = append(gens, items)
		if _, err := w.Write(items, render.DefaultFileOptions()); err != nil {
			t.Fatal(err)
		}
		o.pollDir(dest, time.Now())
		s := o.latest(tDir)
		if s == nil || s.Bad != "" || digest(obsSigs(s.Items)) != digest(sigs(items)) {
			t.Fatalf("generation %d read as %+v, want %d items", seq, s, len(items))
		}
		deepest := "conf.d/a/b.d/deepest.conf"
		if _, ok := o.links[deepest][itemObs{SHA: hexSum(items[deepest]), Size: int64(len(items[deepest]))}]; !ok {
			t.Fatalf("generation %d: the deepest item was not read through its top-level link: %v", seq, o.links[deepest])
		}
	}
	c := newChecker(history(gens...), nil, nil)
	c.checkAgent(o, false)
	if len(c.violations) != 0 || c.treeStates != 3 || c.treeLinkPaths == 0 {
		t.Fatalf("clean tree generations: violations %+v, %d tree states, %d paths through links", c.violations, c.treeStates, c.treeLinkPaths)
	}

	// One sub-directory of the live generation with the previous
	// generation's file: every file is whole, the set is torn.
	cur, err := os.Readlink(filepath.Join(dest, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(dest, cur, "conf.d", "invalid", "deep.conf")
	if err := os.WriteFile(deep, gens[1]["conf.d/invalid/deep.conf"], 0o644); err != nil {
		t.Fatal(err)
	}
	o.pollDir(dest, time.Now())
	c = newChecker(history(gens...), nil, nil)
	c.checkAgent(o, false)
	if got := props(c.violations); !slices.Equal(got, []string{"P1-torn"}) {
		t.Fatalf("a sub-directory from another generation: violations %v, want [P1-torn]: %+v", got, c.violations)
	}

	// An empty directory in the generation directory.
	if err := os.Mkdir(filepath.Join(dest, cur, "conf.d", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.pollDir(dest, time.Now())
	if s := o.latest(tDir); !strings.Contains(s.Bad, "empty directory") {
		t.Fatalf("an empty directory read as %+v", s)
	}

	// A top-level link that bypasses ..data.
	if err := os.Symlink(filepath.Join(cur, "conf.d"), filepath.Join(dest, "pinned")); err != nil {
		t.Fatal(err)
	}
	o.pollLinks(dest, time.Now())
	if len(o.anomalies) != 1 || !strings.Contains(o.anomalies[0].Msg, "not into ..data") {
		t.Fatalf("a link past ..data: anomalies %+v", o.anomalies)
	}
}

// TestWorkloadDrawsTrees runs the publisher's set drawing (no ZooKeeper)
// and checks that it makes trees of depth 2 to 4 in part of its sets,
// flat sets too, moves items between directories, and never a set with a
// file and a directory of the same name.
func TestWorkloadDrawsTrees(t *testing.T) {
	w := newWorkload(7, nil, nil)
	trees, flat, deepest := 0, 0, 0
	for seq := 1; seq <= 400; seq++ {
		items := maps.Clone(w.base)
		w.treeFlip(items)
		w.mutate(items, seq)
		if len(items) < 4 {
			w.addItem(items, seq)
		}
		w.base = items
		if errs := manifest.TreeConflicts(items); len(errs) > 0 {
			t.Fatalf("set %d has a file and a directory of one name: %v", seq, errs)
		}
		for n := range items {
			if err := manifest.ValidatePath(n); err != nil {
				t.Fatalf("set %d: %v", seq, err)
			}
			deepest = max(deepest, strings.Count(n, "/")+1)
		}
		if formatFor(items) == 2 {
			trees++
		} else {
			flat++
		}
	}
	if trees < 40 || flat < 40 || deepest != 4 || w.trees.Moves == 0 || w.trees.DirsRemoved == 0 || w.trees.Flattened == 0 {
		t.Fatalf("%d tree sets, %d flat, deepest path %d components, stats %+v", trees, flat, deepest, w.trees)
	}
}

func TestInvalidConfigsAreRejected(t *testing.T) {
	dir := t.TempDir()
	var proxies []*faultproxy.Proxy
	for range 3 {
		proxies = append(proxies, faultproxy.Start(t, "127.0.0.1:1"))
	}
	a := &agentProc{proxies: proxies, id: "agent-0", picky: true, sess: 4 * time.Second, jitter: 2 * time.Second, resync: 30 * time.Second,
		cfgPath: filepath.Join(dir, "confagent.yaml"), tmpl: filepath.Join(dir, "summary.tmpl"),
		dirOut: filepath.Join(dir, "out", "files"), tmplOut: filepath.Join(dir, "out", "summary.txt"), state: filepath.Join(dir, "state")}
	if err := os.WriteFile(a.tmpl, []byte(summaryTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.writeConfig(a.validConfig(), true); err != nil {
		t.Fatal(err)
	}
	confagent, _ := buildCommands(t, dir)
	out, err := checkConfig(confagent, a.cfgPath)
	if err != nil {
		t.Fatalf("the valid configuration does not load: %v\n%s", err, a.validConfig())
	}
	if !strings.Contains(out, "ok (2 targets)") || !strings.Contains(a.validConfig(), "check:") {
		t.Fatalf("check-config: %s\n%s", out, a.validConfig())
	}
	for _, v := range invalidConfigs {
		if err := a.writeConfig(v.edit(a.validConfig()), true); err != nil {
			t.Fatal(err)
		}
		if _, err := checkConfig(confagent, a.cfgPath); err == nil {
			t.Errorf("invalid configuration %q loads", v.name)
		}
	}
}

func TestScheduleIsSeededAndComplete(t *testing.T) {
	a := makeSchedule(7, 65*time.Second, 4*time.Second, 5)
	b := makeSchedule(7, 65*time.Second, 4*time.Second, 5)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different schedules")
	}
	if reflect.DeepEqual(a, makeSchedule(8, 65*time.Second, 4*time.Second, 5)) {
		t.Fatal("different seeds, same schedule")
	}
	kinds := map[string]bool{}
	for _, s := range a.Cluster {
		kinds[s.Kind] = true
	}
	for _, steps := range a.Agents {
		for _, s := range steps {
			kinds[s.Kind] = true
		}
	}
	for _, k := range append(append(slices.Clone(clusterKinds), fEnsembleWipe), agentKinds...) {
		if !kinds[k] {
			t.Errorf("fault kind %s missing from the schedule", k)
		}
	}
	// One wipe per run; in a long run, not in the first minute.
	for _, phase := range []time.Duration{65 * time.Second, 10 * time.Minute} {
		for seed := uint64(1); seed <= 20; seed++ {
			sch := makeSchedule(seed, phase, 4*time.Second, 5)
			wipes, at := 0, time.Duration(0)
			var t0 time.Duration
			for _, s := range sch.Cluster {
				t0 += s.Gap
				if s.Kind == fEnsembleWipe {
					wipes, at = wipes+1, t0
				}
				t0 += s.Down + 4*time.Second
			}
			if wipes != 1 || (phase > 3*time.Minute && at < time.Minute) {
				t.Errorf("seed %d, phase %v: %d wipes, at %v", seed, phase, wipes, at)
			}
		}
	}
	for _, s := range a.Cluster {
		if s.Kind == fQuorumLoss && s.Down <= 4*time.Second {
			t.Errorf("quorum loss of %v is not longer than the session timeout", s.Down)
		}
	}
}

// tornOf is set with one item (not app.json) taken from other: a set no
// generation has.
func tornOf(t *testing.T, set, other map[string][]byte) map[string][]byte {
	t.Helper()
	torn := maps.Clone(set)
	for _, n := range slices.Sorted(maps.Keys(other)) {
		if n != "app.json" && !bytes.Equal(other[n], set[n]) {
			torn[n] = other[n]
			return torn
		}
	}
	t.Fatal("test set-up: the two sets share every item")
	return nil
}

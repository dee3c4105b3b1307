package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
)

// loggedVTargets are item v of each root to out/ROOT.v and a template
// over both to out/both.conf, each with a reload command that appends
// what it loaded to out/../NAME.log: every output the agent ever put in
// place, in order.
func (e *rootsEnv) loggedVTargets(t *testing.T) string {
	t.Helper()
	tmpl := filepath.Join(e.dir, "both.tmpl")
	if err := os.WriteFile(tmpl, []byte(`common {{ item "common" "v" }} web {{ item "v" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reload := func(out, name string) string {
		log := filepath.Join(e.dir, name+".log")
		return fmt.Sprintf(`cat %s >> %s && echo >> %s`, out, log, log)
	}
	var b strings.Builder
	for _, name := range []string{"common", "web"} {
		out := filepath.Join(e.out, name+".v")
		fmt.Fprintf(&b, "  - {name: %s-v, type: file, root: %s, item: v, dest: %s, reload: %q}\n", name, name, out, reload(out, name))
	}
	both := filepath.Join(e.out, "both.conf")
	fmt.Fprintf(&b, "  - {name: both, type: template, root: web, roots: [common], src: %s, dest: %s, reload: %q}\n", tmpl, both, reload(both, "both"))
	return b.String()
}

// loaded returns the lines of NAME.log (loggedVTargets).
func (e *rootsEnv) loaded(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// checkNeverBack fails when the contents "old-N" / "new-N" of seq go
// back: an old one after a new one, or a number not above the previous
// one of the same incarnation.
func checkNeverBack(t *testing.T, what string, seq []string) {
	t.Helper()
	prevInc, prevN := "", 0
	for i, v := range seq {
		inc, num, ok := strings.Cut(v, "-")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || (inc != "old" && inc != "new") {
			t.Errorf("%s: loaded %q (%d)", what, v, i)
			continue
		}
		switch {
		case inc == "old" && prevInc == "new":
			t.Errorf("%s went back to the old incarnation: %q after new-%d (%v)", what, v, prevN, seq)
		case inc == prevInc && n <= prevN:
			t.Errorf("%s went back: %q after %s-%d (%v)", what, v, prevInc, prevN, seq)
		}
		prevInc, prevN = inc, n
	}
}

// TestTwoRootsWipedZooKeeper: an agent follows common and web, and its
// ZooKeeper is wiped (the recovery of docs/confagent.md, "A ZooKeeper
// wiped or rebuilt", with two roots). The agent replaces its refused
// session and keeps every output of both roots while the roots are
// gone; common republished alone is applied (its status node: the new
// generation, common's own new incarnation, one switch) while web's
// outputs stay; then web republished is applied too. No output of either
// root, nor the template over both, ever goes back (each reload logs
// what it loaded).
func TestTwoRootsWipedZooKeeper(t *testing.T) {
	c := zktest.Start(t)
	// The old generations' zxids, and the zxid the agent has seen, stay
	// above what the wiped server reaches in the test (as in production).
	conn := c.Connect(t, 4*time.Second)
	if _, err := conn.Create("/bump", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := conn.Set("/bump", nil, -1); err != nil {
			t.Fatal(err)
		}
	}
	e := newRootsEnv(t, dialRoots(t, c, ""))
	for i := 1; i <= 3; i++ {
		e.publish(t, "common", fmt.Sprintf("old-%d", i))
		e.publish(t, "web", fmt.Sprintf("old-%d", i))
	}
	e.config(t, c, "", e.loggedVTargets(t))
	p := e.start(t)
	oldInc := map[string]string{}
	for _, name := range []string{"common", "web"} {
		st := waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Generation == 3 })
		if st.Incarnation == "" {
			t.Errorf("root %s's status node names no incarnation: %+v", name, st)
		}
		oldInc[name] = st.Incarnation
	}
	if oldInc["common"] == oldInc["web"] {
		t.Errorf("both roots' status nodes report incarnation %s: each root has its own", oldInc["common"])
	}
	waitFileContent(t, filepath.Join(e.out, "both.conf"), "common old-3 web old-3")
	outputs := func() map[string]string {
		m := map[string]string{}
		for _, f := range []string{"common.v", "web.v", "both.conf"} {
			b, err := os.ReadFile(filepath.Join(e.out, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = string(b)
		}
		return m
	}
	before := outputs()

	c.Wipe(0)
	// The wiped server refuses the agent's session; the agent replaces it
	// and resyncs against a server where neither root exists.
	p.waitLog(t, "replaced it with a fresh client")
	cl := dialRoots(t, c, "")
	for name, path := range rootPaths {
		pub, err := publish.New(cl, path)
		if err != nil {
			t.Fatal(err)
		}
		e.pubs[name] = pub
		e.log.gens[name] = map[int64]rootsPub{}
	}
	// common first, to fewer generations than it had: the new
	// incarnation is followed although its generation is lower.
	e.publish(t, "common", "new-1")
	g := e.publish(t, "common", "new-2")
	st := waitRootStatus(t, c, rootPaths["common"], func(s agent.Status) bool {
		return s.Generation == g && s.Incarnation != oldInc["common"]
	})
	if st.IncarnationSwitches != 1 || st.Incarnation == "" || st.SessionsReplaced < 1 {
		t.Errorf("common's status node after the switch: want its new incarnation, 1 switch, a replaced session: %+v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(e.out, "common.v")); string(b) != "new-2" {
		t.Errorf("common.v = %q, want new-2", b)
	}
	if got := outputs(); got["web.v"] != before["web.v"] {
		t.Errorf("web.v changed while web was not republished: %q, was %q", got["web.v"], before["web.v"])
	}

	for i := 1; i <= 4; i++ {
		g = e.publish(t, "web", fmt.Sprintf("new-%d", i))
	}
	st = waitRootStatus(t, c, rootPaths["web"], func(s agent.Status) bool {
		return s.Generation == g && s.Incarnation != oldInc["web"]
	})
	if st.IncarnationSwitches != 1 || st.Incarnation == "" {
		t.Errorf("web's status node after the switch: want its new incarnation and 1 switch: %+v", st)
	}
	waitFileContent(t, filepath.Join(e.out, "both.conf"), "common new-2 web new-4")
	if b, _ := os.ReadFile(filepath.Join(e.out, "web.v")); string(b) != "new-4" {
		t.Errorf("web.v = %q, want new-4", b)
	}
	// Every status node is ready again, and nothing went back.
	for _, name := range []string{"common", "web"} {
		waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Ready })
		checkNeverBack(t, name+".v", e.loaded(t, name))
	}
	var commons, webs []string
	for _, l := range e.loaded(t, "both") {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "common" || f[2] != "web" {
			t.Fatalf("both.conf loaded %q", l)
		}
		commons, webs = append(commons, f[1]), append(webs, f[3])
	}
	checkNeverBack(t, "both.conf's common", commons)
	checkNeverBack(t, "both.conf's web", webs)
}

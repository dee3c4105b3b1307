package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/layout"
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
// back: an old one after a new one, or a number below the previous one
// of the same incarnation (the same one again is a template rendered for
// the other root's change).
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
		case inc == prevInc && n < prevN:
			t.Errorf("%s went back: %q after %s-%d (%v)", what, v, prevInc, prevN, seq)
		}
		prevInc, prevN = inc, n
	}
}

// oldTwoRoots starts an agent (extra: more configuration) on a server of
// the test's own, common and web at generations 3 ("old-1".."old-3") with
// loggedVTargets, and returns once both roots' status nodes report
// generation 3, with each root's incarnation.
func oldTwoRoots(t *testing.T, extra string) (*zktest.Cluster, *rootsEnv, *proc, map[string]string) {
	t.Helper()
	t.Parallel() // a server of its own (sharedZooKeeper)
	c := zktest.Start(t)
	// The old generations' zxids, and the zxid the agent has seen, stay
	// above what the wiped server reaches in the test (as in production).
	c.BumpZxid(t, 200)
	e := newRootsEnv(t, dialRoots(t, c, ""))
	for i := 1; i <= 3; i++ {
		e.publish(t, "common", fmt.Sprintf("old-%d", i))
		e.publish(t, "web", fmt.Sprintf("old-%d", i))
	}
	e.config(t, c, extra, e.loggedVTargets(t))
	p := e.start(t)
	oldInc := map[string]string{}
	for _, name := range []string{"common", "web"} {
		st := waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Generation == 3 })
		if st.Incarnation == "" {
			t.Errorf("root %s's status node names no incarnation: %+v", name, st)
		}
		oldInc[name] = st.Incarnation
	}
	return c, e, p, oldInc
}

// wipe wipes c once the agent p follows it, waits until the agent has
// replaced its refused session, and points e's publishers at the wiped
// server (a fresh client, as an operator's confpush).
func (e *rootsEnv) wipe(t *testing.T, c *zktest.Cluster, p *proc) {
	t.Helper()
	c.Wipe(0)
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
	c, e, p, oldInc := oldTwoRoots(t, "")
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

	// The wiped server refuses the agent's session; the agent replaces it
	// and resyncs against a server where neither root exists.
	e.wipe(t, c, p)
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

// roleHost is one confagent following /config/common and its role's root.
type roleHost struct {
	id, role, zone string
	dir, out       string
	p              *proc
}

// startRoleHost starts agent id following common and role's root, with
// labels role and zone; item v of each root goes to out/common.v and
// out/role.v.
func startRoleHost(t *testing.T, c *zktest.Cluster, id, role, zone string) *roleHost {
	t.Helper()
	h := &roleHost{id: id, role: role, zone: zone, dir: t.TempDir()}
	h.out = filepath.Join(h.dir, "out")
	cfg := filepath.Join(h.dir, "confagent.yaml")
	writeAtomic(t, cfg, fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
roots:
  common: /config/common
  %s: /config/%s
state_dir: %s
agent_id: %s
http: {listen: ""}
labels: {role: %s, zone: %s}
targets:
  - {name: common-v, type: file, root: common, item: v, dest: %s}
  - {name: role-v, type: file, root: %s, item: v, dest: %s}
`, strings.Join(c.Addrs(), ", "), role, role, filepath.Join(h.dir, "state"), id, role, zone,
		filepath.Join(h.out, "common.v"), role, filepath.Join(h.out, "role.v")))
	h.p = (&env{cfgPath: cfg}).start(t)
	return h
}

// waitStatus waits for h's status node on root to satisfy ok.
func (h *roleHost) waitStatus(t *testing.T, c *zktest.Cluster, root string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	return waitStatusNode(t, c, layout.New(root, layout.DefaultMeta).StatusNode(h.id), ok)
}

func (h *roleHost) file(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.out, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCanaryOnSharedRootAcrossRoles: three agents, two of role web and
// one of role db, each following /config/common beside its role's root.
// A canary on common selected by a label (zone=a) reaches one agent of
// each role and only them: they apply the candidate of common (status
// node: candidate), the third stays on common's stable generation, and no
// role root moves. confpush status and rollout status on common list the
// agents of both roles; promote reaches all three.
func TestCanaryOnSharedRootAcrossRoles(t *testing.T) {
	c := sharedZooKeeper.For(t)
	confpush := buildConfpush(t)
	cp := func(args ...string) (string, error) {
		out, err := exec.Command(confpush, append([]string{"--zk", c.ConnString(), "--root", "/config/common", "--timeout", "60s"}, args...)...).CombinedOutput()
		return string(out), err
	}
	setDir := func(v string) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "v"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, root := range []string{"common", "web", "db"} {
		if out, err := cp("--root", "/config/"+root, "publish", setDir(root+"-1")); err != nil {
			t.Fatalf("publish %s: %v\n%s", root, err, out)
		}
	}
	hosts := []*roleHost{
		startRoleHost(t, c, "web-a", "web", "a"),
		startRoleHost(t, c, "web-b", "web", "b"),
		startRoleHost(t, c, "db-a", "db", "a"),
	}
	for _, h := range hosts {
		for _, root := range []string{"/config/common", "/config/" + h.role} {
			h.waitStatus(t, c, root, func(s agent.Status) bool { return s.Generation == 1 })
		}
	}

	out, err := cp("publish", "--canary", "zone=a", setDir("common-2"))
	if err != nil {
		t.Fatalf("publish --canary: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`candidate generation (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("publish --canary said: %s", out)
	}
	cand, _ := strconv.ParseInt(m[1], 10, 64)
	selected := map[string]bool{"web-a": true, "web-b": false, "db-a": true}
	for _, h := range hosts {
		if !selected[h.id] {
			continue
		}
		st := h.waitStatus(t, c, "/config/common", func(s agent.Status) bool { return s.Generation == cand })
		if !st.Candidate {
			t.Errorf("%s: common's status node at the candidate does not say candidate: %+v", h.id, st)
		}
		if got := h.file(t, "common.v"); got != "common-2" {
			t.Errorf("%s (selected): common.v = %q", h.id, got)
		}
	}
	// The agents of both roles are in the rollout, and only zone a is
	// selected.
	out, err = cp("--json", "rollout", "status")
	if err != nil {
		t.Fatalf("rollout status: %v\n%s", err, out)
	}
	var rs struct {
		Agents []struct {
			ID       string `json:"id"`
			Selected bool   `json:"selected"`
			State    string `json:"state"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("rollout status --json: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, a := range rs.Agents {
		got[a.ID] = a.Selected
		if want := map[bool]string{true: "applied", false: "stable"}[selected[a.ID]]; a.State != want {
			t.Errorf("rollout status: agent %s is %s, want %s", a.ID, a.State, want)
		}
	}
	if !maps.Equal(got, selected) {
		t.Errorf("rollout status selects %v, want %v", got, selected)
	}
	// The host left out renders nothing new, on either root; no role root
	// moved on any host.
	if got := hosts[1].file(t, "common.v"); got != "common-1" {
		t.Errorf("web-b (not selected): common.v = %q", got)
	}
	for _, h := range hosts {
		if got := h.file(t, "role.v"); got != h.role+"-1" {
			t.Errorf("%s: role.v = %q during a canary on common", h.id, got)
		}
	}
	// confpush status on common lists every agent of both roles.
	out, err = cp("status")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, h := range hosts {
		if !regexp.MustCompile(`(?m)^` + h.id + `\s.*role=` + h.role).MatchString(out) {
			t.Errorf("confpush status on common does not list %s with role=%s:\n%s", h.id, h.role, out)
		}
	}

	if out, err := cp("rollout", "promote"); err != nil {
		t.Fatalf("rollout promote: %v\n%s", err, out)
	}
	for _, h := range hosts {
		st := h.waitStatus(t, c, "/config/common", func(s agent.Status) bool { return s.Generation == cand+1 })
		if st.Candidate {
			t.Errorf("%s after the promote: still a candidate: %+v", h.id, st)
		}
		if got := h.file(t, "common.v"); got != "common-2" {
			t.Errorf("%s after the promote: common.v = %q", h.id, got)
		}
		if st := h.waitStatus(t, c, "/config/"+h.role, func(agent.Status) bool { return true }); st.Generation != 1 || st.Candidate {
			t.Errorf("%s: its role root's status moved with common's rollout: %+v", h.id, st)
		}
	}
}

// getStatus returns the agent's /status, decoded and raw.
func getStatus(t *testing.T, addr string) (agent.Status, map[string]any) {
	t.Helper()
	code, body := httpGet(t, "http://"+addr+"/status")
	if code != http.StatusOK {
		t.Fatalf("/status: %d %s", code, body)
	}
	var s agent.Status
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	return s, raw
}

// TestTwoRootsStatusPerRoot: an agent on common (generation 2) and web
// (generation 5) reports each root in /status's roots (name, path,
// generation, cache generation, state, incarnation), not their sum (7) as
// the host's generation, and every target's generation is its own root's;
// /readyz names each root's generation; each root's status node is that
// root's alone (no roots list). A single-root agent's /status has no
// roots and its generation as before.
func TestTwoRootsStatusPerRoot(t *testing.T) {
	c := sharedZooKeeper.For(t)
	e := newRootsEnv(t, dialRoots(t, c, ""))
	for i := 1; i <= 2; i++ {
		e.publish(t, "common", fmt.Sprintf("common-%d", i))
	}
	for i := 1; i <= 5; i++ {
		e.publish(t, "web", fmt.Sprintf("web-%d", i))
	}
	tmpl := filepath.Join(e.dir, "both.tmpl")
	if err := os.WriteFile(tmpl, []byte(`{{ item "common" "v" }} {{ item "v" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.config(t, c, "", fmt.Sprintf("  - {name: both, type: template, root: web, roots: [common], src: %s, dest: %s}\n%s",
		tmpl, filepath.Join(e.out, "both.conf"), e.vTargets("")))
	cfg, _ := os.ReadFile(e.cfg)
	writeAtomic(t, e.cfg, strings.Replace(string(cfg), `listen: ""`, `listen: "127.0.0.1:0"`, 1))
	p, addr := (&env{cfgPath: e.cfg}).startWithHTTP(t)
	want := map[string]int64{"common": 2, "web": 5}
	for name, g := range want {
		st := waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Generation == g && s.Ready })
		if st.Roots != nil || st.Root != rootPaths[name] || st.CacheGeneration != g {
			t.Errorf("root %s's status node: %+v", name, st)
		}
	}
	waitFileContent(t, filepath.Join(e.out, "both.conf"), "common-2 web-5")

	s, raw := getStatus(t, addr)
	if s.Generation != 0 || s.CacheGeneration != 0 || s.Root != "" {
		t.Errorf("/status: host generation %d, cache generation %d, root %q: want none (each root's is in roots)", s.Generation, s.CacheGeneration, s.Root)
	}
	if _, ok := raw["roots"]; !ok || len(s.Roots) != 2 {
		t.Fatalf("/status has no roots list of two: %v", raw["roots"])
	}
	for i, name := range []string{"common", "web"} {
		r := s.Roots[i]
		if r.Name != name || r.Root != rootPaths[name] || r.Generation != want[name] || r.CacheGeneration != want[name] ||
			r.State != "live" || r.Incarnation == "" || r.PublishID == "" || r.Zxid == 0 {
			t.Errorf("/status roots[%d] = %+v, want %s at %s, generation %d, live", i, r, name, rootPaths[name], want[name])
		}
	}
	for _, tr := range s.Targets {
		g := map[string]int64{"common-v": 2, "web-v": 5, "both": 5}[tr.Name]
		if tr.Generation != g || tr.LastAttempt != g {
			t.Errorf("/status target %s: generation %d (last attempt %d), want its root's %d", tr.Name, tr.Generation, tr.LastAttempt, g)
		}
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK || body != "ready: common generation 2, web generation 5\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	// The dashboard shows the agent on both roots, each at its own
	// generation.
	base := startDashboard(t, c)
	for name, g := range want {
		dashboardAgent(t, base, rootPaths[name], "two-roots", func(a map[string]any) bool {
			return a["generation"] == float64(g) && a["state"] == "ok"
		})
	}
	p.kill()

	// One root: as before.
	one := newEnv(t)
	cfg, _ = os.ReadFile(one.cfgPath)
	writeAtomic(t, one.cfgPath, strings.Replace(string(cfg), `listen: ""`, `listen: "127.0.0.1:0"`, 1))
	one.publish(t, set(1, 2))
	g := one.publish(t, set(2, 2))
	_, addr = one.startWithHTTP(t)
	one.waitApplied(t, "agent-under-test", g)
	s, raw = getStatus(t, addr)
	if _, ok := raw["roots"]; ok || s.Generation != g || s.CacheGeneration != g || s.Root != testRoot {
		t.Errorf("single-root /status: %v", raw)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK || body != fmt.Sprintf("ready: generation %d\n", g) {
		t.Errorf("single-root /readyz: %d %q", code, body)
	}
}

// TestRenderFromRoots: confagent render with a configuration on two
// roots takes one set per root (--from ROOT=DIR): each target renders its
// own root's set and the template over both reads both. A plain --from DIR
// (which rendered every target from the one set, common's file target
// from web's items), a root without a set that a rendered target reads, a
// root the configuration does not have, and a root given twice are bad
// input (exit 2, every problem at once), rendering nothing.
func TestRenderFromRoots(t *testing.T) {
	dir := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common, web := filepath.Join(dir, "common"), filepath.Join(dir, "web")
	write(filepath.Join(common, "v"), "C")
	write(filepath.Join(web, "v"), "W")
	write(filepath.Join(web, "conf.d", "site.conf"), "site")
	tmpl := filepath.Join(dir, "both.tmpl")
	write(tmpl, `{{ item "common" "v" }} {{ item "v" }} {{ names "common" }}`)
	cfg := filepath.Join(dir, "confagent.yaml")
	write(cfg, fmt.Sprintf(`zookeeper: {servers: ["127.0.0.1:2181"]}
roots: {common: /config/common, web: /config/web}
state_dir: %s
targets:
  - {name: common-v, type: file, root: common, item: v, dest: /etc/app/common.v}
  - {name: site, type: dir, root: web, src: conf.d/, dest: /etc/app/conf.d}
  - {name: both, type: template, root: web, roots: [common], src: %s, dest: /etc/app/both.conf}
`, filepath.Join(dir, "state"), tmpl))
	render := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--config", cfg, "render"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := render("--from", "common="+common, "--from", "web="+web, "--out", out)
	if code != exitOK {
		t.Fatalf("render with a set per root: exit %d\n%s%s", code, stdout, stderr)
	}
	for path, want := range map[string]string{"common-v/common.v": "C", "site/site.conf": "site", "both/both.conf": "C W [v]"} {
		if b, err := os.ReadFile(filepath.Join(out, path)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--from", web}, []string{"--from " + web + ": the configuration follows several roots (common, web): give each one's set as --from ROOT=DIR",
			"no set of root(s) common, web"}},
		{[]string{"--from", "web=" + web}, []string{"--from: no set of root(s) common, which the targets rendered read"}},
		{[]string{"--from", "web=" + web, "--from", "db=" + common, "--from", "web=" + web, "--from", "common=" + filepath.Join(dir, "nope")},
			[]string{`--from db=` + common + `: no root "db" in the configuration (roots: common, web)`, "root web given twice",
				"root common: " + filepath.Join(dir, "nope") + ": does not exist"}},
	} {
		o := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := render(append(c.args, "--out", o)...)
		if code != exitUsage {
			t.Errorf("render %v: exit %d, want %d\n%s%s", c.args, code, exitUsage, stdout, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("render %v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
		if _, err := os.Stat(o); err == nil {
			t.Errorf("render %v created --out", c.args)
		}
	}
	// Only the targets rendered need their roots' sets.
	code, stdout, stderr = render("--from", "common="+common, "--target", "common-v", "--out", filepath.Join(dir, "one"))
	if code != exitOK || !strings.Contains(stdout, "target common-v: ") {
		t.Errorf("render --target common-v with common's set: exit %d\n%s%s", code, stdout, stderr)
	}
}

// buildConfpush returns the confpush binary (confpushBinary).
func buildConfpush(t *testing.T) string {
	t.Helper()
	confpush, err := confpushBinary()
	if err != nil {
		t.Fatalf("build confpush: %v", err)
	}
	return confpush
}

// startDashboard starts confpush serve on c and returns its base URL.
func startDashboard(t *testing.T, c *zktest.Cluster) string {
	t.Helper()
	p := startBinary(t, buildConfpush(t), "--zk", c.ConnString(), "serve", "--listen", "127.0.0.1:0")
	return p.waitText(t, regexp.MustCompile(`dashboard on (http://[^/\s]+)`))[1]
}

// dashboardAgent polls the dashboard's fleet table of root until agent id
// satisfies ok (the dashboard follows status nodes with watches of its
// own; its HTTP API offers nothing to wait on but its event stream).
func dashboardAgent(t *testing.T, base, root, id string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for {
		code, body := httpGet(t, base+"/api/root/agents?root="+root)
		last = body
		var page struct {
			Agents []map[string]any `json:"agents"`
		}
		if code == http.StatusOK && json.Unmarshal([]byte(body), &page) == nil {
			for _, a := range page.Agents {
				if a["id"] == id && ok(a) {
					return a
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard never showed agent %s as awaited on %s: %d %s", id, root, code, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRenderFromOnceWithOneRoot: a configuration with one root takes one
// --from (a second one was silently ignored: the last won).
func TestRenderFromOnceWithOneRoot(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	writeAtomic(t, cfg, fmt.Sprintf("zookeeper: {servers: [\"127.0.0.1:2181\"]}\nstate_dir: %s\ntargets:\n  - {name: d, type: dir, dest: /etc/app/d}\n", filepath.Join(dir, "state")))
	var out, errb bytes.Buffer
	code := run([]string{"--config", cfg, "render", "--from", dir, "--from", dir}, &out, &errb)
	if code != exitUsage || errb.String() != "confagent render: --from: give one directory (--from ROOT=DIR once per root only for a configuration with several roots)\n" {
		t.Errorf("two --from with one root: exit %d %q", code, errb.String())
	}
}

// TestExampleRootsRenders: the command examples/roots/README.md shows
// renders both of its targets from the example's two sets.
func TestExampleRootsRenders(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--config", "../../examples/roots/confagent.yaml", "render", "--from", "common=../../examples/roots/common",
		"--from", "web=../../examples/roots/web", "--out", filepath.Join(t.TempDir(), "out")}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "target db: ") || !strings.Contains(out.String(), "target app: ") {
		t.Errorf("render of examples/roots: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestTwoRootsRefusedIncarnationAdopt: with incarnation: refuse, an agent
// on two roots whose ZooKeeper is wiped and both roots republished keeps
// both roots' outputs, each root's status node names that root's refused
// incarnation, readiness names the root and its own generation (it said
// "the root's" and the roots' sum); one confagent adopt adopts on both
// roots, and no output goes back.
func TestTwoRootsRefusedIncarnationAdopt(t *testing.T) {
	c, e, p, oldInc := oldTwoRoots(t, "incarnation: refuse")
	e.wipe(t, c, p)
	e.publish(t, "common", "new-1")
	e.publish(t, "web", "new-1")
	gWeb := e.publish(t, "web", "new-2")
	refused := map[string]string{}
	for _, name := range []string{"common", "web"} {
		st := waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.IncarnationRefused != "" })
		if st.Generation != 3 || st.Incarnation != oldInc[name] || st.IncarnationRefused == oldInc[name] || st.Ready {
			t.Errorf("root %s's status node while refusing: %+v", name, st)
		}
		refused[name] = st.IncarnationRefused
		if b, _ := os.ReadFile(filepath.Join(e.out, name+".v")); string(b) != "old-3" {
			t.Errorf("%s.v = %q while refusing, want old-3", name, b)
		}
	}
	st := waitRootStatus(t, c, rootPaths["web"], func(agent.Status) bool { return true })
	if want := fmt.Sprintf("refusing root common's new incarnation %s (incarnation: refuse; ZooKeeper wiped or rebuilt?): serving generation 3 of incarnation %s",
		refused["common"], oldInc["common"]); !strings.Contains(st.NotReadyReason, want) {
		t.Errorf("not ready reason %q, want %q", st.NotReadyReason, want)
	}

	var out, errb bytes.Buffer
	if code := run([]string{"adopt", "--config", e.cfg}, &out, &errb); code != exitOK {
		t.Fatalf("adopt: exit %d: %s", code, errb.String())
	}
	for name, g := range map[string]int64{"common": 1, "web": gWeb} {
		waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool {
			return s.Generation == g && s.Incarnation == refused[name] && s.IncarnationRefused == ""
		})
	}
	waitFileContent(t, filepath.Join(e.out, "both.conf"), "common new-1 web new-2")
	for _, name := range []string{"common", "web"} {
		checkNeverBack(t, name+".v", e.loaded(t, name))
	}
}

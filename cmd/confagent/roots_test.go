package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// rootsEnv is a ZooKeeper with two roots, common and web, a publisher on
// each, and a confagent configuration following both.
type rootsEnv struct {
	dir  string
	out  string
	cfg  string
	pubs map[string]*publish.Publisher
	log  *pubLog
}

var rootPaths = map[string]string{"common": "/config/common", "web": "/config/web"}

// pubLog is every acknowledged publish: root → generation → commit zxid
// and the content of item v.
type pubLog struct {
	mu   sync.Mutex
	gens map[string]map[int64]rootsPub
}

type rootsPub struct {
	zxid    int64
	content string
}

func newRootsEnv(t *testing.T, conn *zkclient.Client) *rootsEnv {
	t.Helper()
	dir := t.TempDir()
	e := &rootsEnv{dir: dir, out: filepath.Join(dir, "out"), cfg: filepath.Join(dir, "confagent.yaml"),
		pubs: map[string]*publish.Publisher{}, log: &pubLog{gens: map[string]map[int64]rootsPub{}}}
	for name, path := range rootPaths {
		p, err := publish.New(conn, path)
		if err != nil {
			t.Fatal(err)
		}
		e.pubs[name] = p
		e.log.gens[name] = map[int64]rootsPub{}
	}
	return e
}

// publish publishes item v (and a fixed item) to root name and logs it.
func (e *rootsEnv) publish(t testing.TB, name, content string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.pubs[name].Publish(ctx, publish.Request{Items: map[string][]byte{"v": []byte(content), "fixed": []byte("x")}})
	if err != nil {
		t.Errorf("publish %s: %v", name, err)
		return 0
	}
	e.log.mu.Lock()
	e.log.gens[name][res.Generation] = rootsPub{zxid: res.Zxid, content: content}
	e.log.mu.Unlock()
	return res.Generation
}

// check reports whether (root → generation, content) were all live at one
// moment: their intervals [commit, next commit) overlap, and each content
// is its generation's.
func (l *pubLog) check(seen map[string]int64, content map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lo, hi int64 = math.MinInt64, math.MaxInt64
	for name, gen := range seen {
		p, ok := l.gens[name][gen]
		if !ok {
			return fmt.Errorf("root %s generation %d was never published", name, gen)
		}
		if p.content != content[name] {
			return fmt.Errorf("root %s generation %d rendered %q, published %q", name, gen, content[name], p.content)
		}
		next := int64(math.MaxInt64)
		if n, ok := l.gens[name][gen+1]; ok {
			next = n.zxid
		}
		lo, hi = max(lo, p.zxid), min(hi, next)
	}
	if lo >= hi {
		return fmt.Errorf("generations %v were never live together", seen)
	}
	return nil
}

// config writes the agent's configuration: the two roots, extra YAML
// before targets, and the targets.
func (e *rootsEnv) config(t *testing.T, c *zktest.Cluster, extra, targets string) {
	t.Helper()
	writeAtomic(t, e.cfg, fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
roots:
  common: %s
  web: %s
state_dir: %s
agent_id: two-roots
http:
  listen: ""
log:
  level: debug
%s
targets:
%s`, strings.Join(c.Addrs(), ", "), rootPaths["common"], rootPaths["web"], filepath.Join(e.dir, "state"), extra, targets))
}

// vTargets are two file targets, item v of each root to out/ROOT.v;
// webExtra (YAML flow-mapping entries) is added to web's.
func (e *rootsEnv) vTargets(webExtra string) string {
	if webExtra != "" {
		webExtra = ", " + webExtra
	}
	return fmt.Sprintf("  - {name: common-v, type: file, root: common, item: v, dest: %s}\n"+
		"  - {name: web-v, type: file, root: web, item: v, dest: %s%s}\n",
		filepath.Join(e.out, "common.v"), filepath.Join(e.out, "web.v"), webExtra)
}

func (e *rootsEnv) start(t *testing.T) *proc {
	t.Helper()
	return (&env{cfgPath: e.cfg}).start(t)
}

// waitRootStatus waits (a watch, no polling) until root's status node of
// the agent satisfies ok.
func waitRootStatus(t *testing.T, c *zktest.Cluster, root string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	return waitStatusNode(t, c, layout.New(root, layout.DefaultMeta).StatusNode("two-roots"), ok)
}

// dialRoots is a Client on c (closed with the test), with creds if set.
func dialRoots(t *testing.T, c *zktest.Cluster, creds string) *zkclient.Client {
	t.Helper()
	cl, err := zkclient.Dial(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 10 * time.Second, Auth: creds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTwoRootsTemplateRendersOnlyCuts: an agent follows common and web;
// a template over both renders under rapid publishes to both roots, and
// every combination it ever rendered (its reload command appends each
// output to a log) was live at one moment by the publish log's commit
// zxids, with each root's content its generation's, and no root going
// back. The targets of one root follow it too, and the last publishes
// of both end up rendered.
func TestTwoRootsTemplateRendersOnlyCuts(t *testing.T) {
	c := sharedZooKeeper.For(t)
	cl := dialRoots(t, c, "")
	e := newRootsEnv(t, cl)
	e.publish(t, "common", "common-0")
	e.publish(t, "web", "web-0")
	tmpl := filepath.Join(e.dir, "both.tmpl")
	if err := os.WriteFile(tmpl, []byte(`common {{ generation "common" }} {{ item "common" "v" }} web {{ generation }} {{ item "v" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(e.dir, "seen.log")
	e.config(t, c, "", fmt.Sprintf(`  - name: both
    type: template
    root: web
    roots: [common]
    src: %s
    dest: %s
    reload: printf '%%s ' "$ZKCONF_GENERATION" >> %s && cat %s >> %s && echo >> %s
%s`, tmpl, filepath.Join(e.out, "both.conf"), seen, filepath.Join(e.out, "both.conf"), seen, seen, e.vTargets("")))
	p := e.start(t)
	waitRootStatus(t, c, rootPaths["web"], func(s agent.Status) bool { return s.Generation >= 1 })

	// Both roots published back to back, each from its own goroutine.
	const n = 40
	var wg sync.WaitGroup
	final := map[string]int64{}
	var fmu sync.Mutex
	for _, name := range []string{"common", "web"} {
		wg.Go(func() {
			var g int64
			for i := 1; i <= n && !t.Failed(); i++ {
				g = e.publish(t, name, fmt.Sprintf("%s-%d", name, i))
			}
			fmu.Lock()
			final[name] = g
			fmu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// rendered waits until the template has rendered the combination want.
	rendered := func(want string) {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			b, _ := os.ReadFile(seen)
			if strings.Contains(string(b), " "+want+"\n") {
				return
			}
			select {
			case <-p.newLog:
			case <-deadline:
				t.Fatalf("the template never rendered %q; it rendered:\n%s\nlog:\n%s", want, b, p.log())
			}
		}
	}
	for _, name := range []string{"common", "web"} {
		waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Generation >= final[name] })
	}
	// The template renders the last cut once the group confirms it.
	p.waitLog(t, "reloaded")
	rendered(fmt.Sprintf("common %d common-%d web %d web-%d", final["common"], n, final["web"], n))
	// However the racing publishes coalesced (a busy machine may render
	// few of them), one more publish to each root, each awaited, makes
	// the combinations checked below at least three: the racing phase's
	// last and these two.
	gc := e.publish(t, "common", "common-last")
	rendered(fmt.Sprintf("common %d common-last web %d web-%d", gc, final["web"], n))
	gw := e.publish(t, "web", "web-last")
	rendered(fmt.Sprintf("common %d common-last web %d web-last", gc, gw))
	for name, v := range map[string]string{"common.v": "common-last", "web.v": "web-last"} {
		if b, err := os.ReadFile(filepath.Join(e.out, name)); err != nil || string(b) != v {
			t.Errorf("%s = %q, %v; want %q", name, b, err, v)
		}
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	prev := map[string]int64{}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 7 || f[1] != "common" || f[4] != "web" {
			t.Fatalf("rendered line %d %q", i, l)
		}
		// The reload is told its own root's generation, not a combination.
		if f[0] != f[5] {
			t.Errorf("rendered combination %d: reload got ZKCONF_GENERATION=%s, web's generation is %s", i, f[0], f[5])
		}
		f = f[1:]
		gc, _ := strconv.ParseInt(f[1], 10, 64)
		gw, _ := strconv.ParseInt(f[4], 10, 64)
		gens := map[string]int64{"common": gc, "web": gw}
		if err := e.log.check(gens, map[string]string{"common": f[2], "web": f[5]}); err != nil {
			t.Errorf("rendered combination %d (%s): %v", i, l, err)
		}
		for name, g := range gens {
			if g < prev[name] {
				t.Errorf("rendered combination %d: root %s went back from %d to %d", i, name, prev[name], g)
			}
			prev[name] = g
		}
	}
	t.Logf("publishes: %d racing to each root, then one to each; the template rendered %d combinations, every one a cut", n, len(lines))
}

// TestTwoRootsIndependent: a publish to common is applied whatever web's
// targets do: with apply: all, web's target failing its check rejects
// web's generation, and common's next publish is still applied (its
// status node says so) while web's output stays as it was.
func TestTwoRootsIndependent(t *testing.T) {
	c := sharedZooKeeper.For(t)
	cl := dialRoots(t, c, "")
	e := newRootsEnv(t, cl)
	e.publish(t, "common", "common-1")
	e.publish(t, "web", "web-1")
	e.config(t, c, "apply: all", e.vTargets(`check: "! grep -q bad {{.src}}"`))
	e.start(t)
	waitRootStatus(t, c, rootPaths["web"], func(s agent.Status) bool { return s.Generation == 1 })
	waitRootStatus(t, c, rootPaths["common"], func(s agent.Status) bool { return s.Generation == 1 })

	e.publish(t, "web", "web-bad")
	st := waitRootStatus(t, c, rootPaths["web"], func(s agent.Status) bool { return s.LastError != "" })
	if st.Generation != 1 {
		t.Errorf("web status after a rejected generation: %+v", st)
	}
	g := e.publish(t, "common", "common-2")
	st = waitRootStatus(t, c, rootPaths["common"], func(s agent.Status) bool { return s.Generation == g })
	if b, err := os.ReadFile(filepath.Join(e.out, "common.v")); err != nil || string(b) != "common-2" {
		t.Errorf("common.v = %q, %v; want common-2 applied although web's target fails", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.out, "web.v")); err != nil || string(b) != "web-1" {
		t.Errorf("web.v = %q, %v; want web-1 kept", b, err)
	}
	for _, r := range st.Targets {
		if r.Name != "common-v" {
			t.Errorf("common's status lists target %s", r.Name)
		}
	}
}

// TestTwoRootsACLPerRoot: common is readable by identity "common" only,
// web by "web" only; the agent's one session carries both (each root's
// auth_file) and applies both roots, while either identity alone is
// refused the other root.
func TestTwoRootsACLPerRoot(t *testing.T) {
	c := sharedZooKeeper.For(t)
	dir := t.TempDir()
	creds := map[string]string{"common": "common:pw-c", "web": "web:pw-w"}
	files := map[string]string{}
	// The shared parents are open (as confpush init leaves them); each
	// root and its bookkeeping belong to its identity.
	admin := c.Connect(t, 4*time.Second)
	for _, path := range []string{"/config", "/zkconf", "/zkconf/roots"} {
		if _, err := admin.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	e := &rootsEnv{dir: dir, out: filepath.Join(dir, "out"), cfg: filepath.Join(dir, "confagent.yaml"),
		pubs: map[string]*publish.Publisher{}, log: &pubLog{gens: map[string]map[int64]rootsPub{}}}
	for name, cred := range creds {
		cl := dialRoots(t, c, cred)
		user, pw, _ := strings.Cut(cred, ":")
		p, err := publish.New(cl, rootPaths[name], publish.WithACL(zk.DigestACL(zk.PermAll, user, pw)))
		if err != nil {
			t.Fatal(err)
		}
		e.pubs[name], e.log.gens[name] = p, map[int64]rootsPub{}
		files[name] = filepath.Join(dir, name+"-auth")
		if err := os.WriteFile(files[name], []byte(cred+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.publish(t, "common", "common-1")
	e.publish(t, "web", "web-1")
	// Each identity alone is refused the other's root.
	for name, cred := range creds {
		other := map[string]string{"common": "web", "web": "common"}[name]
		conn, _, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second, Auth: cred})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.Get(rootPaths[other]); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("identity %s reading root %s: %v, want NoAuth", name, other, err)
		}
		conn.Close()
	}
	writeAtomic(t, e.cfg, fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
roots:
  common: {path: %s, auth_file: %s}
  web: {path: %s, auth_file: %s}
state_dir: %s
agent_id: two-roots
http: {listen: ""}
targets:
%s`, strings.Join(c.Addrs(), ", "), rootPaths["common"], files["common"], rootPaths["web"], files["web"],
		filepath.Join(dir, "state"), e.vTargets("")))
	p := e.start(t)
	for _, name := range []string{"common", "web"} {
		waitRootStatus(t, c, rootPaths[name], func(s agent.Status) bool { return s.Generation == 1 })
		if b, err := os.ReadFile(filepath.Join(e.out, name+".v")); err != nil || string(b) != name+"-1" {
			t.Errorf("%s.v = %q, %v", name, b, err)
		}
	}
	p.kill()

	// Without web's identity: common is applied, and /readyz and the
	// metrics name web as the root that is not live.
	cfg, _ := os.ReadFile(e.cfg)
	writeAtomic(t, e.cfg, strings.Replace(strings.Replace(string(cfg), ", auth_file: "+files["web"], "", 1),
		`http: {listen: ""}`, "http: {listen: \"127.0.0.1:0\"}\nstale_after: 1s", 1))
	if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}
	g := e.publish(t, "common", "common-2")
	p = e.start(t)
	addr := p.waitText(t, regexp.MustCompile(`msg="http listening" addr=(\S+)`))[1]
	waitRootStatus(t, c, rootPaths["common"], func(s agent.Status) bool { return s.Generation == g })
	var body string
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "no live ZooKeeper view") {
			break
		}
		if i == 600 {
			t.Fatalf("/readyz never failed for the root without its identity: %d %s", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond) // the staleness limit is a duration: nothing to wait on
	}
	if !strings.Contains(body, "root web (/config/web)") {
		t.Errorf("/readyz does not name root web: %s", body)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`zkconf_agent_root_live{root="common"} 1`, `zkconf_agent_root_live{root="web"} 0`,
		fmt.Sprintf(`zkconf_agent_root_generation{root="common"} %d`, g)} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTwoRootsRestart: a restarted agent with ZooKeeper down renders each
// root's targets from that root's state file (state_dir/NAME/) at once,
// keeps the template over both roots as it was (files persisted apart are
// not known to be a cut), and renders it again at the first cut once
// ZooKeeper is back.
func TestTwoRootsRestart(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	c := zktest.Start(t)
	cl := dialRoots(t, c, "")
	e := newRootsEnv(t, cl)
	e.publish(t, "common", "common-1")
	e.publish(t, "web", "web-1")
	tmpl := filepath.Join(e.dir, "both.tmpl")
	if err := os.WriteFile(tmpl, []byte(`{{ item "common" "v" }} {{ item "v" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(e.out, "both.conf")
	e.config(t, c, "", fmt.Sprintf(`  - {name: both, type: template, root: web, roots: [common], src: %s, dest: %s}
%s`, tmpl, both, e.vTargets("")))
	p := e.start(t)
	waitRootStatus(t, c, rootPaths["web"], func(s agent.Status) bool { return s.Generation == 1 })
	waitFileContent(t, both, "common-1 web-1")
	for _, name := range []string{"common", "web"} {
		if _, err := os.Stat(filepath.Join(e.dir, "state", name, agent.StateFileName)); err != nil {
			t.Errorf("root %s's state file: %v", name, err)
		}
	}
	p.kill()
	cl.Close()
	c.Stop(0)
	for _, f := range []string{"common.v", "web.v"} {
		if err := os.Remove(filepath.Join(e.out, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(both, []byte("kept"), 0o640); err != nil {
		t.Fatal(err)
	}
	p = e.start(t)
	p.waitLog(t, "applied")
	for _, name := range []string{"common", "web"} {
		if b, err := os.ReadFile(filepath.Join(e.out, name+".v")); err != nil || string(b) != name+"-1" {
			t.Errorf("%s.v from the state file with ZooKeeper down = %q, %v", name, b, err)
		}
	}
	if b, _ := os.ReadFile(both); string(b) != "kept" {
		t.Errorf("the template over both roots was rendered without a cut: %q", b)
	}
	c.StartServer(0)
	waitFileContent(t, both, "common-1 web-1")
}

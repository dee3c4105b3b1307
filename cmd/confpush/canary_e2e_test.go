package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// canaryFleet is four real confagent processes (a1, a2 in zone a; b1, b2
// in zone b) following one root, and what each was seen to report.
type canaryFleet struct {
	t    *testing.T
	c    cli
	conn *zk.Conn
	fl   *fleet.Fleet
	bin  string // confpush binary
	out  map[string]string
	mu   sync.Mutex
	seen map[string]int64 // highest generation seen per agent
	// listMu makes each fleet read and its observation one step: two
	// reads that overlap (the monitor's and waitGens') could otherwise
	// be observed out of the order they read in, and an older read seen
	// last would look like a generation going down.
	listMu sync.Mutex
	procs  map[string]*agentProc

	agentBin, dir string
	lastStdout    string   // of the last runBin
	backwards     []string // generations seen going down

	srv *zktest.Cluster
}

// agentProc is one running confagent.
type agentProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts (or restarts, with the same state directory) agent id with
// label zone.
func (f *canaryFleet) start(id, zone string) {
	t := f.t
	t.Helper()
	out := filepath.Join(f.dir, id, "out")
	f.out[id] = out
	check := ""
	if id == "a1" {
		// Only a1 refuses a set carrying BAD.
		check = "    check: \"! grep -rq BAD {{.src}}\"\n"
	}
	cfg := fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
root: %s
state_dir: %s
agent_id: %s
http:
  listen: ""
labels:
  zone: %s
targets:
  - name: d
    type: dir
    dest: %s
%s`, f.srv.ConnString(), f.c.root, filepath.Join(f.dir, id, "state"), id, zone, out, check)
	path := filepath.Join(f.dir, id, "confagent.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(f.agentBin, "--config", path)
	cmd.SysProcAttr = zktest.ChildAttr(false)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ap := &agentProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ap.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-ap.done })
	f.procs[id] = ap
}

// stop stops agent id and waits for its exit.
func (f *canaryFleet) stop(id string) {
	ap := f.procs[id]
	_ = ap.cmd.Process.Signal(syscall.SIGTERM)
	<-ap.done
}

// buildBinary returns the binary of pkg, built once per test binary
// (sharedzk_test.go).
func buildBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	return testBinaries.build(t, pkg, name)
}

func newCanaryFleet(t *testing.T, srv *zktest.Cluster, root string) *canaryFleet {
	agentBin := buildBinary(t, "../confagent", "confagent")
	f := &canaryFleet{t: t, c: cli{t: t, zk: srv.ConnString(), root: root}, bin: buildBinary(t, ".", "confpush"),
		out: map[string]string{}, seen: map[string]int64{}, procs: map[string]*agentProc{}}
	conn, _, err := zk.Connect(srv.Addrs(), 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	f.conn = conn
	if f.fl, err = fleet.New(zkclient.Fixed(conn, nil), root); err != nil {
		t.Fatal(err)
	}
	f.agentBin, f.dir, f.srv = agentBin, t.TempDir(), srv
	f.monitor()
	for _, id := range []string{"a1", "a2", "b1", "b2"} {
		f.start(id, id[:1])
	}
	return f
}

// monitor records every agent's generation on every fleet change
// (ZooKeeper watches) until the test ends, and fails the test if one
// went down.
func (f *canaryFleet) monitor() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.fl.Changes(ctx, func() error {
			_, _, _ = f.list(ctx) // an error: the next change reads again
			return nil
		})
	}()
	f.t.Cleanup(func() {
		cancel()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.backwards) > 0 {
			f.t.Errorf("generations went backwards: %v", f.backwards)
		}
	})
}

// list reads the fleet and observes it, one read at a time: reads on one
// session see ZooKeeper's state in order, so observing them in the order
// they were made never reports a generation going down that did not.
func (f *canaryFleet) list(ctx context.Context) ([]fleet.Agent, map[string]int64, error) {
	f.listMu.Lock()
	defer f.listMu.Unlock()
	agents, err := f.fl.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	return agents, f.observe(agents), nil
}

// observe records the generations agents report.
func (f *canaryFleet) observe(agents []fleet.Agent) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := map[string]int64{}
	for _, a := range agents {
		if !a.Trusted() {
			continue
		}
		g := a.Status.Generation
		got[a.ID] = g
		if g == 0 {
			continue // none yet (a starting agent): not a generation
		}
		if g < f.seen[a.ID] {
			f.backwards = append(f.backwards, fmt.Sprintf("%s: %d after %d", a.ID, g, f.seen[a.ID]))
		}
		f.seen[a.ID] = max(g, f.seen[a.ID])
	}
	return got
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// waitGens waits until every agent reports its wanted generation applied
// and ready, checking on every read that no agent's generation went down.
func (f *canaryFleet) waitGens(want map[string]int64) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		agents, got, err := f.list(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		f.mu.Lock()
		if len(f.backwards) > 0 {
			f.mu.Unlock()
			f.t.Fatalf("generations went backwards: %v", f.backwards)
		}
		f.mu.Unlock()
		ok := 0
		for _, a := range agents {
			if w, in := want[a.ID]; in && a.Trusted() && a.Status.Generation == w && a.Status.Ready {
				ok++
			}
		}
		if ok == len(want) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("agents did not reach %v: %v", want, got)
		}
		time.Sleep(100 * time.Millisecond) // condition poll, not a synchronisation
	}
}

func all(g int64) map[string]int64 { return map[string]int64{"a1": g, "a2": g, "b1": g, "b2": g} }

// files asserts that agent id rendered exactly want (name → content).
func (f *canaryFleet) files(id string, want map[string]string) {
	f.t.Helper()
	entries, err := os.ReadDir(f.out[id])
	if err != nil {
		f.t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(f.out[id], e.Name()))
		if err != nil {
			f.t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("agent %s rendered %v, want %v", id, got, want)
	}
}

func (f *canaryFleet) filesFor(want map[string]map[string]string) {
	f.t.Helper()
	for id, w := range want {
		f.files(id, w)
	}
}

// runBin runs the confpush binary and returns its exit code and output.
func (f *canaryFleet) runBin(args ...string) (int, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	full := append([]string{"--zk", f.c.zk, "--root", f.c.root, "--session-timeout", "10s"}, args...)
	cmd := exec.CommandContext(ctx, f.bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	f.lastStdout = stdout.String()
	out := stdout.String() + stderr.String()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		f.t.Fatalf("run confpush: %v", err)
	}
	code := 0
	if ee != nil {
		code = ee.ExitCode()
	}
	return code, out
}

// TestCanaryE2E drives canary rollouts through real confagent processes
// in two zones: by selector (zone a renders the candidate, zone b keeps
// the stable files byte for byte), aborted (zone a back to the stable
// content on C+1); driven with --auto: promoted after the bake, aborted
// (exit 9) when a1's check refuses the candidate; a driver killed
// mid-rollout shows as gone, a plain publish is refused meanwhile, and
// another confpush promotes it. Generations only go up on every host.
func TestCanaryE2E(t *testing.T) {
	srv := startZK(t)
	f := newCanaryFleet(t, srv, "/canary/app")
	c := f.c
	stable := map[string]string{"a.conf": "stable\n"}
	c.run("publish", writeFiles(t, t.TempDir(), stable)).want(t, 0, "published generation 1")
	f.waitGens(all(1))
	onAll := func(content map[string]string) map[string]map[string]string {
		return map[string]map[string]string{"a1": content, "a2": content, "b1": content, "b2": content}
	}
	f.filesFor(onAll(stable))

	// The driver's flags are checked before anything is written.
	d := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "x\n"})
	c.run("publish", "--auto", d).want(t, 2, "--auto and --steps drive a canary")
	c.run("publish", "--canary", "zone=a", "--steps", "10,5,x", d).want(t, 2, "5% does not grow", `"x" is not a percent`)
	c.run("publish", "--canary-percent", "3", "--steps", "5", d).want(t, 2, "drop --canary-percent")
	c.run("watch", "--canary", "zone=a", d).want(t, 2, "watch --canary needs --auto or --steps")
	c.run("history").want(t, 0, "1")
	if r := rootOf(t, f.conn, c.root); r.Generation != 1 || r.Canary != nil {
		t.Fatalf("a refused driver wrote: %+v", r)
	}

	// By selector, by hand, aborted.
	cand := map[string]string{"a.conf": "candidate\n", "new.conf": "new\n"}
	c.run("publish", "--canary", "zone=a", writeFiles(t, t.TempDir(), cand)).want(t, 0, "started a canary rollout on", "candidate generation 2 for selection \"zone=a\"")
	f.waitGens(map[string]int64{"a1": 2, "a2": 2, "b1": 1, "b2": 1})
	f.filesFor(map[string]map[string]string{"a1": cand, "a2": cand, "b1": stable, "b2": stable})
	c.run("rollout", "abort", "-m", "no").want(t, 0, "published generation 3")
	f.waitGens(all(3))
	f.filesFor(onAll(stable))

	// --auto: promoted after the bake.
	cand2 := map[string]string{"a.conf": "second\n"}
	code, out := f.runBin("--json", "publish", "--canary", "zone=a", "--auto", "--bake", "1s", writeFiles(t, t.TempDir(), cand2))
	if code != 0 || !strings.Contains(out, `"outcome": "promoted"`) || !strings.Contains(out, "applied") {
		t.Fatalf("--auto promote: exit %d\n%s", code, out)
	}
	f.waitGens(all(5))
	f.filesFor(onAll(cand2))

	// --auto: a1's check refuses the candidate: aborted, exit 9.
	bad := map[string]string{"a.conf": "BAD\n"}
	code, out = f.runBin("--json", "publish", "--canary", "zone=a", "--auto", "--bake", "1s", writeFiles(t, t.TempDir(), bad))
	var obj struct {
		Kind      string `json:"kind"`
		Error     string `json:"error"`
		Published struct {
			Driver struct {
				Outcome string   `json:"outcome"`
				Failing []string `json:"failing"`
			} `json:"driver"`
		} `json:"published"`
	}
	if err := json.Unmarshal([]byte(f.lastStdout), &obj); err != nil {
		t.Fatalf("--auto abort --json is not one object: %v\n%s", err, out)
	}
	if code != exitAborted || obj.Kind != "rollout_aborted" || !strings.Contains(obj.Error, "aborted automatically") ||
		obj.Published.Driver.Outcome != "aborted" || fmt.Sprint(obj.Published.Driver.Failing) != "[a1]" {
		t.Fatalf("--auto abort: exit %d %+v\n%s", code, obj, out)
	}
	f.waitGens(map[string]int64{"a2": 7, "b1": 7, "b2": 7})
	f.filesFor(map[string]map[string]string{"a2": cand2, "b1": cand2, "b2": cand2})
	f.files("a1", cand2) // refused the candidate: never rendered it
	c.run("history").want(t, 0, "abort of 6", "automatic abort")

	// A driver killed mid-rollout; a plain publish is refused meanwhile;
	// another confpush promotes it.
	cand3 := map[string]string{"a.conf": "third\n"}
	w := startWatcher(t, f.bin, "--zk", c.zk, "--root", c.root, "--session-timeout", "4s",
		"publish", "--canary", "zone=b", "--auto", "--bake", "1h", writeFiles(t, t.TempDir(), cand3))
	w.waitFor(t, "driver", "healthy since")
	c.run("rollout", "status").want(t, 0, "driver alive", "candidate generation 8")
	c.run("publish", writeFiles(t, t.TempDir(), stable)).want(t, 4, "rollout", "--supersede")
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.done
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.run("rollout", "status").stdout, "driver gone") {
		if time.Now().After(deadline) {
			t.Fatal("rollout status never showed the killed driver gone")
		}
		time.Sleep(200 * time.Millisecond) // condition poll: the session expires
	}
	f.filesFor(map[string]map[string]string{"a2": cand2, "b1": cand3, "b2": cand3})
	c.run("rollout", "promote").want(t, 0, "published generation 9")
	f.waitGens(all(9))
	f.filesFor(onAll(cand3))

	// watch --canary --auto: each change is a rollout the leader drives.
	wdir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "fourth\n"})
	ww := startWatcher(t, f.bin, "--zk", c.zk, "--root", c.root, "--session-timeout", "4s",
		"watch", "--debounce", "100ms", "--canary", "zone=a", "--auto", "--bake", "1s", wdir)
	ww.waitFor(t, "watch", `started a canary rollout: candidate generation 10 for selection "zone=a"`)
	ww.waitFor(t, "watch", "promoted as generation 11")
	f.waitGens(all(11))
	f.filesFor(onAll(map[string]string{"a.conf": "fourth\n"}))
	tmp := filepath.Join(wdir, ".a.conf")
	if err := os.WriteFile(tmp, []byte("BAD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(wdir, "a.conf")); err != nil {
		t.Fatal(err)
	}
	ww.waitFor(t, "watch", "aborted automatically")
	f.waitGens(map[string]int64{"a2": 13, "b1": 13, "b2": 13})
	f.filesFor(onAll(map[string]string{"a.conf": "fourth\n"}))
	if r := rootOf(t, f.conn, c.root); r.Generation != 13 || r.AbortOf != 12 || r.Canary != nil {
		t.Fatalf("after the watch's abort: %+v", r)
	}
}

// pctSelecting is the smallest percent (two decimals) that selects the
// agent of ids with the lowest bucket, and that agent.
func pctSelecting(ids ...string) (string, string) {
	low := ids[0]
	for _, id := range ids[1:] {
		if manifest.Bucket(id) < manifest.Bucket(low) {
			low = id
		}
	}
	return strconv.FormatFloat(float64(manifest.Bucket(low)+1)/100, 'f', 2, 64), low
}

// TestCanaryE2EPercentStepsRestart: a canary by percent selects exactly
// the agents whose bucket is below it, widen brings in the rest; an agent
// restarted mid-rollout stays on the candidate, one relabelled into the
// selection applies it; --supersede ends a rollout; an operator's promote
// stops a running driver (exit 3); --steps widens and promotes.
func TestCanaryE2EPercentStepsRestart(t *testing.T) {
	srv := startZK(t)
	f := newCanaryFleet(t, srv, "/canary/pct")
	c := f.c
	set := func(v string) map[string]string { return map[string]string{"a.conf": v + "\n"} }
	dirOf := func(m map[string]string) string { return writeFiles(t, t.TempDir(), m) }
	c.run("publish", dirOf(set("v1"))).want(t, 0, "published generation 1")
	f.waitGens(all(1))

	// By percent: only the lowest bucket's agent.
	pct, low := pctSelecting("a1", "a2", "b1", "b2")
	c.run("publish", "--canary-percent", pct, dirOf(set("v2"))).want(t, 0, "started a canary rollout on", "candidate generation 2 for selection")
	want := all(1)
	want[low] = 2
	f.waitGens(want)
	for id := range want {
		if id == low {
			f.files(id, set("v2"))
		} else {
			f.files(id, set("v1"))
		}
	}
	c.run("rollout", "widen", "--canary-percent", "100").want(t, 0, "widened")
	f.waitGens(all(2))
	c.run("rollout", "promote").want(t, 0, "published generation 3")
	f.waitGens(all(3))

	// Restart and relabel mid-rollout.
	c.run("publish", "--canary", "zone=a", dirOf(set("v4"))).want(t, 0, "candidate generation 4 for selection \"zone=a\"")
	f.waitGens(map[string]int64{"a1": 4, "a2": 4, "b1": 3, "b2": 3})
	f.stop("a1")
	f.start("a1", "a")
	f.stop("b1")
	f.start("b1", "a")
	f.waitGens(map[string]int64{"a1": 4, "a2": 4, "b1": 4, "b2": 3})
	f.filesFor(map[string]map[string]string{"a1": set("v4"), "a2": set("v4"), "b1": set("v4"), "b2": set("v2")})
	c.run("publish", dirOf(set("v5"))).want(t, 4, "rollout", "--supersede")
	c.run("publish", "--supersede", dirOf(set("v5"))).want(t, 0, "published generation 5")
	f.waitGens(all(5))
	f.filesFor(map[string]map[string]string{"a1": set("v5"), "a2": set("v5"), "b1": set("v5"), "b2": set("v5")})

	// An operator promotes while a driver runs: the driver stops (exit 3).
	w := startWatcher(t, f.bin, "--zk", c.zk, "--root", c.root, "--session-timeout", "4s",
		"publish", "--canary", "zone=b", "--auto", "--bake", "1h", dirOf(set("v6")))
	w.waitFor(t, "driver", "healthy since")
	c.run("rollout", "promote").want(t, 0, "published generation 7")
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != exitConflict || !strings.Contains(w.output(), "by someone else") {
		t.Fatalf("driver after a promote from elsewhere: exit %d\n%s", code, w.output())
	}
	f.waitGens(all(7))

	// --steps: the lowest zone-a bucket first, then all of zone a, then
	// everyone.
	first, _ := pctSelecting("a1", "b1")
	code, out := f.runBin("--json", "publish", "--canary", "zone=a", "--steps", first+"%,100%", "--bake", "1s", dirOf(set("v8")))
	if code != 0 || !strings.Contains(out, `"kind": "widen"`) || !strings.Contains(out, `"outcome": "promoted"`) {
		t.Fatalf("--steps: exit %d\n%s", code, out)
	}
	f.waitGens(all(9))
	f.filesFor(map[string]map[string]string{"a1": set("v8"), "a2": set("v8"), "b1": set("v8"), "b2": set("v8")})

	// Ctrl-C leaves the rollout as it is and says how to finish it.
	w = startWatcher(t, f.bin, "--zk", c.zk, "--root", c.root, "--session-timeout", "4s",
		"publish", "--canary", "zone=b", "--auto", "--bake", "1h", dirOf(set("v10")))
	w.waitFor(t, "driver", "healthy since")
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != exitError || !strings.Contains(w.output(), "left as it is") ||
		!strings.Contains(w.output(), "rollout abort --rollout") {
		t.Fatalf("driver after SIGINT: exit %d\n%s", code, w.output())
	}
	c.run("rollout", "status").want(t, 0, "candidate generation 10", "driver gone")
	c.run("rollout", "abort").want(t, 0, "published generation 11")
	f.waitGens(all(11))
	f.filesFor(map[string]map[string]string{"a1": set("v8"), "a2": set("v8"), "b1": set("v8"), "b2": set("v8")})
}

// TestDriverSkipsStepsWidenedPast: an operator widening the rollout past
// the driver's next step from another process does not make the driver
// narrow it (refused) but promote after the bake of what is selected.
// The agents' status nodes are written by the test: it is the driver's
// reaction that is under test.
func TestDriverSkipsStepsWidenedPast(t *testing.T) {
	c, nodes := fleetFixture(t, "/drv/app", 1)
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 1, Ready: true})
	nodes.put(fleet.Status{AgentID: "web-b", Generation: 1, Ready: true})
	low, _ := pctSelecting("web-a", "web-b")
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "candidate"})
	done := make(chan outcome, 1)
	go func() { done <- c.run("publish", "--steps", low+"%,50%", "--bake", "0s", dir) }()
	deadline := time.Now().Add(60 * time.Second)
	for r := rootOf(t, nodes.conn, c.root); r.Canary == nil; r = rootOf(t, nodes.conn, c.root) {
		if time.Now().After(deadline) {
			t.Fatal("the driver never started the rollout")
		}
		time.Sleep(50 * time.Millisecond) // condition poll
	}
	c.run("rollout", "widen", "--canary-percent", "100").want(t, 0, "widened")
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 2, Ready: true})
	nodes.put(fleet.Status{AgentID: "web-b", Generation: 2, Ready: true})
	out := <-done
	if out.code != 0 || !strings.Contains(out.stderr, "promoted as generation 3") || strings.Contains(out.stderr, "widened to 50") {
		t.Fatalf("driver after an operator's widen: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if r := rootOf(t, nodes.conn, c.root); r.Canary != nil || r.PromoteOf != 2 {
		t.Fatalf("root after the driver: %+v", r)
	}
}

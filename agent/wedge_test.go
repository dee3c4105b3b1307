package agent_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// blockingEnv is a LookupEnv whose variable WEDGE, while armed, blocks
// until disarmed: a template helper call that does not return, which the
// render budget (checked between steps) cannot stop. Every lookup of
// WEDGE is announced on entered, every one that blocks on blocked.
type blockingEnv struct {
	entered, blocked chan struct{}
	mu               sync.Mutex
	release          chan struct{} // nil when disarmed
}

func newBlockingEnv() *blockingEnv {
	return &blockingEnv{entered: make(chan struct{}, 100), blocked: make(chan struct{}, 100)}
}

func (b *blockingEnv) lookup(name string) (string, bool) {
	if name != "WEDGE" {
		return "", false
	}
	b.mu.Lock()
	release := b.release
	b.mu.Unlock()
	b.entered <- struct{}{}
	if release != nil {
		b.blocked <- struct{}{}
		<-release
	}
	return "", false
}

func (b *blockingEnv) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.release == nil {
		b.release = make(chan struct{})
	}
}

func (b *blockingEnv) disarm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.release != nil {
		close(b.release)
		b.release = nil
	}
}

// wait waits for a render to look WEDGE up (on entered), or to block
// there (on blocked).
func (b *blockingEnv) wait(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatal("no render looked up WEDGE")
	}
}

// httpGet returns the status code and body of url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startWedgeDaemon starts a daemon whose env helper is env, with the
// given wedge and shutdown graces and a watchdog pinged every 20 ms
// (counted in pings). Its cleanup disarms env and waits for the apply left
// behind, if any, before closing the daemon.
func startWedgeDaemon(t *testing.T, c *zktest.Cluster, specs []agent.TargetSpec, env *blockingEnv,
	wedgeGrace, shutdownGrace time.Duration, pings *atomic.Int64, onStatus func(agent.Status)) *running {
	t.Helper()
	r := &running{statuses: make(chan agent.Status, 10000), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: root, ZK: zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second},
		AgentID: "test-agent", StateDir: t.TempDir(), Targets: specs, Logger: testLog(t),
		Heartbeat:         func() { pings.Add(1) },
		HeartbeatInterval: 20 * time.Millisecond,
		OnStatus: func(s agent.Status) {
			if onStatus != nil {
				onStatus(s)
			}
			select {
			case r.statuses <- s:
			default:
			}
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	d.SetWedgeTimings(wedgeGrace, shutdownGrace)
	d.SetLookupEnv(env.lookup)
	r.d, r.cancel = d, cancel
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		env.disarm()
		select {
		case <-r.done:
		default:
		}
		// An apply left behind holds the renderer until its render
		// returns: wait for it, so that it logs nothing after the test.
		d.Renderer().Specs()
		d.Close()
	})
	return r
}

// stopWithin ends r's context and fails unless Run returns nil within a
// generous bound.
func stopWithin(t *testing.T, r *running, during string) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return 30 s after its context ended, %s", during)
	}
}

// TestWedgedRenderFailsHealthAndWatchdog: a render stuck in one helper
// call, which the budget cannot stop. /status and /readyz answer while it
// runs; once it has run past its time budget by the wedge grace, /healthz
// and /readyz fail naming it and the watchdog is no longer pinged; when
// it returns, its generation is rejected (over budget), pings resume and
// the next generation applies; and a daemon stopping with a render that
// does not return exits anyway.
func TestWedgedRenderFailsHealthAndWatchdog(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	// The time budget is one second, not a few milliseconds: the renders
	// of generations 1 and 3 must end within it (a loaded machine that
	// descheduled one for longer would have it rejected, failing the test
	// for a reason it does not name); generation 2's is held past it.
	specs := []agent.TargetSpec{{Name: "t", Kind: agent.KindTemplate, Template: `{{ env "WEDGE" }}x={{ item "x" }}`,
		Dest: join(out, "t.conf"), Mode: 0o640, UID: -1, GID: -1, RenderTimeout: time.Second}}
	env := newBlockingEnv()
	var pinged, pingsAtWedge atomic.Int64
	r := startWedgeDaemon(t, c, specs, env, 2*time.Second, 100*time.Millisecond, &pinged, func(s agent.Status) {
		// Called from the goroutine that pings: what it counts here is
		// every ping before the wedge was reported (plus one, so that 0
		// means not yet).
		if strings.HasPrefix(s.NotReadyReason, "apply wedged") && pingsAtWedge.Load() == 0 {
			pingsAtWedge.Store(pinged.Load() + 1)
		}
	})
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()

	mustPublish(t, p, map[string]string{"x": "1"})
	r.waitGeneration(t, 1)

	env.arm()
	mustPublish(t, p, map[string]string{"x": "2"})
	env.wait(t, env.blocked)
	before := pinged.Load()
	// The render is stuck: /status answers, and says generation 2 is
	// being applied over generation 1.
	code, body := httpGet(t, srv.URL+"/status")
	if code != http.StatusOK || !strings.Contains(body, `"attempted": 2`) || !strings.Contains(body, `"generation": 1`) {
		t.Fatalf("/status during the render: %d %s", code, body)
	}
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusOK && !strings.Contains(body, "apply wedged") {
		t.Fatalf("/readyz during the render: %d %s", code, body)
	}
	// Wedged once past 1 s + 2 s: reported in the status (from the
	// daemon's goroutine).
	st := r.waitFor(t, "reported the wedged render", func(s agent.Status) bool { return strings.HasPrefix(s.NotReadyReason, "apply wedged") })
	for _, want := range []string{`target "t" (generation 2)`, "past its time budget of 1s (render_timeout)"} {
		if !strings.Contains(st.NotReadyReason, want) {
			t.Errorf("the wedge reason does not say %q: %s", want, st.NotReadyReason)
		}
	}
	if code, body := httpGet(t, srv.URL+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `apply wedged: the render of target "t"`) {
		t.Errorf("/healthz while wedged: %d %s", code, body)
	}
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "apply wedged") {
		t.Errorf("/readyz while wedged: %d %s", code, body)
	}
	if pingsAtWedge.Load()-1 <= before {
		t.Errorf("no watchdog ping while the render ran within its budget and grace (%d before it, %d at the wedge)", before, pingsAtWedge.Load()-1)
	}
	// No ping while wedged: 25 heartbeats, none of which may ping.
	time.Sleep(500 * time.Millisecond)
	if n := pinged.Load(); n != pingsAtWedge.Load()-1 {
		t.Errorf("%d watchdog pings after the wedge was reported", n-(pingsAtWedge.Load()-1))
	}

	// The helper returns: the render is over budget, generation 2 is
	// rejected, and the agent is healthy and pings again.
	env.disarm()
	st = r.waitFor(t, "rejected generation 2", func(s agent.Status) bool { return s.LastError != "" })
	if !strings.Contains(st.LastError, `generation 2 rejected: target "t"`) || !strings.Contains(st.LastError, "time budget exceeded: still running after 1s (render_timeout)") {
		t.Errorf("rejection: %s", st.LastError)
	}
	wedged, deadline := pinged.Load(), time.Now().Add(30*time.Second)
	for pinged.Load() == wedged {
		if time.Now().After(deadline) {
			t.Fatal("no watchdog ping after the render returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after the render returned: %d %s", code, body)
	}
	mustPublish(t, p, map[string]string{"x": "3"})
	r.waitGeneration(t, 3)
	if got := readFile(t, join(out, "t.conf")); got != "x=3" {
		t.Errorf("output = %q", got)
	}

	// Stopping while a render does not return: Run returns after the
	// shutdown grace (100 ms here), without it.
	env.arm()
	mustPublish(t, p, map[string]string{"x": "4"})
	env.wait(t, env.blocked)
	stopWithin(t, r, "with a render that does not return")
	if got := readFile(t, join(out, "t.conf")); got != "x=3" {
		t.Errorf("output after the abandoned apply = %q", got)
	}
}

// TestStopInterruptsRender: a daemon stopping during a long render (far
// within its budget) interrupts it at its next step, with nothing of its
// generation in place and the generation not rejected; Run returns without
// having to leave the apply behind (the shutdown grace is 10 minutes here).
func TestStopInterruptsRender(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	specs := []agent.TargetSpec{{Name: "t", Kind: agent.KindTemplate,
		Template: `{{ env "WEDGE" }}{{ range atoi (item "n") }}{{ end }}n={{ item "n" }}`,
		Dest:     join(out, "t.conf"), Mode: 0o640, UID: -1, GID: -1, RenderTimeout: time.Hour, RenderSteps: 1 << 62}}
	env := newBlockingEnv()
	var pinged atomic.Int64
	r := startWedgeDaemon(t, c, specs, env, time.Hour, 10*time.Minute, &pinged, nil)
	mustPublish(t, p, map[string]string{"n": "1"})
	r.waitGeneration(t, 1)
	mustPublish(t, p, map[string]string{"n": "1000000000000"})
	env.wait(t, env.entered) // the first generation's render
	env.wait(t, env.entered) // the second's: its loop runs now
	stopWithin(t, r, "during a render within its budget")
	st := r.d.Status()
	if !strings.Contains(st.LastError, `generation 2 not applied: target "t": render: template t: render interrupted: context canceled`) ||
		strings.Contains(st.LastError, "rejected") {
		t.Errorf("last error after the interrupted render: %q", st.LastError)
	}
	if st.Generation != 1 || readFile(t, join(out, "t.conf")) != "n=1" {
		t.Errorf("generation %d applied, output %q: the interrupted generation moved something", st.Generation, readFile(t, join(out, "t.conf")))
	}
}

// TestRenderBudgetRejects: a render over its step budget is a render
// failure of its generation: rejected (not retried), counted in
// zkconf_agent_failures_total{kind="render"}, named in /status with the
// target and the budget; the next generation applies.
func TestRenderBudgetRejects(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	specs := []agent.TargetSpec{
		{Name: "loop", Kind: agent.KindTemplate, Template: `{{ range until (atoi (item "n")) }}.{{ end }}`,
			Dest: join(out, "loop.conf"), Mode: 0o640, UID: -1, GID: -1, RenderSteps: 1000},
		{Name: "f", Kind: agent.KindFile, Item: "f", Dest: join(out, "f"), Mode: 0o640, UID: -1, GID: -1},
	}
	mustPublish(t, p, map[string]string{"n": "999", "f": "1"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	r.waitGeneration(t, 1)
	mustPublish(t, p, map[string]string{"n": "1000", "f": "2"})
	st := r.waitFor(t, "rejected generation 2", func(s agent.Status) bool { return s.LastError != "" })
	want := `generation 2 rejected: target "loop": render: template loop: step budget exceeded: more than 1000 steps (range iterations and template calls; render_steps)`
	if st.LastError != want {
		t.Errorf("last error %q, want %q", st.LastError, want)
	}
	if l := metricLine(t, srv.URL+"/metrics", `zkconf_agent_failures_total{kind="render",target="loop"}`); l != `zkconf_agent_failures_total{kind="render",target="loop"} 1` {
		t.Errorf("render failures: %s", l)
	}
	for _, tr := range st.Targets {
		if tr.Retrying != "" {
			t.Errorf("target %s retried: %+v", tr.Name, tr)
		}
	}
	if got := readFile(t, join(out, "f")); got != "1" {
		t.Errorf("the file target moved with a rejected generation: %q", got)
	}
	mustPublish(t, p, map[string]string{"n": "3", "f": "3"})
	r.waitGeneration(t, 3)
	if got := readFile(t, join(out, "loop.conf")) + readFile(t, join(out, "f")); got != "...3" {
		t.Errorf("outputs after the fix: %q", got)
	}
}

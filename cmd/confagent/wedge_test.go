package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
)

// wedgeTemplate is issue 23's wedging template: a publisher-controlled
// count (n.txt) squared, with a body that writes nothing (so the output
// limit never stops it).
const wedgeTemplate = `{{ $n := atoi (trim (item "n.txt")) }}{{ range until $n }}{{ range until $n }}{{ end }}{{ end }}n={{ $n }}
`

// agentHTTP is a client of one agent's HTTP endpoint.
type agentHTTP struct {
	addr   string
	client *http.Client
}

// get returns the status code and body of path.
func (a agentHTTP) get(path string) (int, string, error) {
	resp, err := a.client.Get("http://" + a.addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// status returns the agent's /status.
func (a agentHTTP) status() (agent.Status, error) {
	code, body, err := a.get("/status")
	if err != nil {
		return agent.Status{}, err
	}
	var st agent.Status
	if code != http.StatusOK {
		return st, fmt.Errorf("/status: %d %s", code, body)
	}
	return st, json.Unmarshal([]byte(body), &st)
}

// probeHTTP asks /status and /readyz every 100 ms until stop is closed,
// and returns how many requests were answered and the failures (a request
// not answered within the client's timeout is one).
func probeHTTP(a agentHTTP, stop <-chan struct{}) func() (int, []error) {
	var (
		mu       sync.Mutex
		answered int
		failures []error
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, path := range []string{"/status", "/readyz"} {
				start := time.Now()
				_, _, err := a.get(path)
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Errorf("%s at %s: %w (after %v)", path, start.Format(time.StampMilli), err, time.Since(start)))
				} else {
					answered++
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return func() (int, []error) {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return answered, failures
	}
}

// TestWedgingTemplateRejectedAgentGoesOn is issue 23's "a template can
// wedge an agent", against a real confagent and a real ZooKeeper: a
// publisher-controlled count squared in a template.
//
//  1. The generation is rejected once the render's time budget (the
//     default, 10 s) runs out, with a message naming the target and the
//     budget.
//  2. The agent goes on: the next publish (the fix, and a change of an
//     unrelated file target) is applied.
//  3. /status and /readyz answer throughout, while the render runs too
//     (the answer during the render shows it in progress).
//  4. SIGTERM during a long render (a budget of 10 minutes) makes the
//     agent exit promptly and cleanly, without SIGKILL.
func TestWedgingTemplateRejectedAgentGoesOn(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, "app.tmpl"), []byte(wedgeTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	// The step budget is lifted so that the time budget, at its default,
	// is the one the wedging template runs into.
	config := func(extra string) string {
		return e.agentConfig("text", "debug", "127.0.0.1:0", fmt.Sprintf(`  - name: app
    type: template
    src: %s
    dest: %s
%s  - name: f
    type: file
    item: f.txt
    dest: %s
render_steps: 1000000000000000
`, filepath.Join(e.dir, "app.tmpl"), filepath.Join(e.out, "app.conf"), extra, filepath.Join(e.out, "f.txt")))
	}
	writeAtomic(t, e.cfgPath, config(""))
	items := func(n, f string) map[string][]byte {
		return map[string][]byte{"n.txt": []byte(n + "\n"), "f.txt": []byte(f)}
	}
	e.publish(t, items("3", "first"))
	p, addr := e.startWithHTTP(t)
	a := agentHTTP{addr: addr, client: &http.Client{Timeout: 60 * time.Second}}
	e.waitApplied(t, "agent-under-test", 1)
	stopProbe := make(chan struct{})
	probed := probeHTTP(a, stopProbe)

	// (1) and (3): the wedging publish (a typo: 200000).
	bad := e.publish(t, items("200000", "first"))
	p.waitLog(t, fmt.Sprintf("applying generation=%d", bad))
	// The render runs now, for up to its 10 s budget: /status and /readyz
	// answer, and what /status says shows that the render had not ended.
	st, err := a.status()
	if err != nil {
		t.Fatalf("/status during the render: %v", err)
	}
	if st.Attempted != bad || st.Generation != 1 || st.LastError != "" {
		t.Fatalf("/status during the render of generation %d: attempted %d, applied %d, last error %q: not an answer given while it ran",
			bad, st.Attempted, st.Generation, st.LastError)
	}
	if code, body, err := a.get("/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz during a render within its budget: %d %q %v", code, body, err)
	}
	rejected := e.waitStatus(t, "agent-under-test", func(s agent.Status) bool { return s.LastError != "" })
	for _, want := range []string{fmt.Sprintf("generation %d rejected", bad), `target "app"`, "time budget", "10s", "render_timeout"} {
		if !strings.Contains(rejected.LastError, want) {
			t.Errorf("the rejection does not say %q: %s", want, rejected.LastError)
		}
	}
	t.Logf("rejection: %s", rejected.LastError)
	p.waitLog(t, "apply failed")
	if code, body, err := a.get("/readyz"); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "time budget") {
		t.Errorf("/readyz after the rejection: %d %q %v", code, body, err)
	}

	// (2): the fix, and a change of the unrelated file target.
	fix := e.publish(t, items("2", "second"))
	e.waitApplied(t, "agent-under-test", fix)
	for path, want := range map[string]string{"app.conf": "n=2\n", "f.txt": "second"} {
		if b, err := os.ReadFile(filepath.Join(e.out, path)); err != nil || string(b) != want {
			t.Errorf("%s after the fix: %q %v, want %q", path, b, err, want)
		}
	}

	// (4): a render far from its budget when SIGTERM arrives.
	writeAtomic(t, e.cfgPath, config("    render_timeout: 10m\n"))
	// The daemon's line, once it runs with the new targets (the reload's
	// own line comes when it hands them over).
	p.waitLog(t, `msg="configuration reloaded" targets=2`)
	long := e.publish(t, items("200000", "third"))
	p.waitLog(t, fmt.Sprintf("applying generation=%d", long))
	if st, err := a.status(); err != nil || st.Attempted != long || st.LastError != "" {
		t.Fatalf("/status during the long render: %+v %v", st, err)
	}
	close(stopProbe)
	answered, failures := probed()
	if len(failures) > 0 {
		t.Errorf("%d of %d requests to /status and /readyz failed:\n%v", len(failures), answered+len(failures), failures)
	}
	t.Logf("%d requests to /status and /readyz answered", answered)
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		t.Logf("exited %v after SIGTERM", time.Since(sent))
	case <-time.After(30 * time.Second):
		t.Fatalf("confagent still running 30 s after SIGTERM, during a render with a 10-minute budget:\n%s", tail(p.log(), 20))
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("confagent exited %d after SIGTERM, want 0:\n%s", code, tail(p.log(), 20))
	}
	if regexp.MustCompile(`generation=` + fmt.Sprint(long) + `.*rejected`).MatchString(p.log()) {
		t.Errorf("the generation interrupted by SIGTERM was rejected:\n%s", tail(p.log(), 20))
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

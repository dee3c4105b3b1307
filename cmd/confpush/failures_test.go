package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// inProcessAgent runs an agent daemon in the test process until stop (or
// the end of the test), its HTTP handler on srv.
type inProcessAgent struct {
	d         *agent.Daemon
	srv       *httptest.Server
	stopAgent func()
}

func startAgent(t *testing.T, zkAddr, root, stateDir string, specs []agent.TargetSpec) *inProcessAgent {
	t.Helper()
	d, stop := fleettest.StartAgent(t, root, "web-1", func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: []string{zkAddr}, SessionTimeout: 10 * time.Second}
		o.StateDir, o.Targets = stateDir, specs
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	})
	a := &inProcessAgent{d: d, srv: httptest.NewServer(d.Handler()), stopAgent: stop}
	t.Cleanup(a.stop)
	return a
}

func (a *inProcessAgent) stop() {
	a.stopAgent()
	a.srv.Close()
}

// readyz returns /readyz's status code and body.
func (a *inProcessAgent) readyz(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get(a.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// poll waits for cond, failing after a generous bound.
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s; last: %s", what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statusNode reads the agent's status node.
func statusNode(t *testing.T, conn *zk.Conn, root string) (fleet.Status, bool) {
	t.Helper()
	b, _, err := conn.Get(layout.New(root, layout.DefaultMeta).StatusNode("web-1"))
	if errors.Is(err, zk.ErrNoNode) {
		return fleet.Status{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var st fleet.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st, true
}

// TestFailedReloadRetriedUntilItSucceeds: a reload command that fails
// (until a file exists) is retried with backoff without a new publish;
// until it succeeds the target is failing in /readyz, the status node and
// `confpush status --fail-on-error` (exit 8); a later generation whose
// output for the target is unchanged does not hide it; an agent restarted
// while the reload is pending runs it again; success clears everything.
// On the old code the retry found the output unchanged and reported ok.
func TestFailedReloadRetriedUntilItSucceeds(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	const root = "/fail/app"
	c := cli{t: t, zk: srv.ConnString(), root: root}
	out, scratch, stateDir := t.TempDir(), t.TempDir(), t.TempDir()
	okFile := filepath.Join(scratch, "reload-may-succeed")
	attempts := filepath.Join(scratch, "attempts")
	specs := []agent.TargetSpec{{
		Name: "app", Kind: agent.KindFile, Item: "app.conf", Dest: filepath.Join(out, "app.conf"),
		Mode: 0o640, UID: -1, GID: -1,
		// Every attempt is logged; it succeeds once the test creates okFile.
		Reload: "echo x >> " + attempts + "; test -e " + okFile + " || { echo 'service refused the config' >&2; exit 3; }",
	}}
	countAttempts := func() int {
		b, _ := os.ReadFile(attempts)
		return strings.Count(string(b), "x")
	}
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1", "other": "a"})).want(t, 0)
	a := startAgent(t, srv.ConnString(), root, stateDir, specs)

	target := func(st fleet.Status) fleet.TargetResult {
		for _, tr := range st.Targets {
			if tr.Name == "app" {
				return tr
			}
		}
		return fleet.TargetResult{}
	}
	// Retried: the attempts grow without a publish, and every surface
	// says so.
	poll(t, "retried the failing reload", func() (bool, string) {
		st := a.d.Status()
		tr := target(st)
		return countAttempts() >= 3 && tr.Retrying == agent.RetryReload && tr.Retries >= 1 && tr.ReloadPending,
			strings.Join([]string{st.LastError, tr.LastError, tr.Retrying}, " | ")
	})
	if got, err := os.ReadFile(filepath.Join(out, "app.conf")); err != nil || string(got) != "v1" {
		t.Fatalf("output = %q, %v", got, err)
	}
	if code, body := a.readyz(t); code != http.StatusServiceUnavailable || !strings.Contains(body, `target "app": reload not done yet, retrying`) ||
		!strings.Contains(body, "service refused the config") {
		t.Fatalf("/readyz = %d %q while the reload fails", code, body)
	}
	// The status node says the reload failed, without the command's
	// output (status.command_output is off): that stays on the host.
	poll(t, "reported the pending reload in the status node", func() (bool, string) {
		st, ok := statusNode(t, conn, root)
		tr := target(st)
		return ok && tr.ReloadPending && tr.Retrying == agent.RetryReload && !tr.OK &&
			strings.Contains(tr.LastError, `reload command of target "app" exited with status 3 (output in the agent's log)`) &&
			!strings.Contains(tr.LastError, "service refused the config"), tr.LastError
	})
	if err := a.d.Renderer().LastError(); err == nil || !strings.Contains(err.Error(), `in place but not loaded, reload retried: reload command of target "app" exited with status 3`) {
		t.Fatalf("apply error: %v", err)
	}
	c.run("status", "--fail-on-error").want(t, 8, "1 agent(s) report an error or a failing target, are gone or untrusted, or do not follow the root's incarnation: web-1")
	c.run("status").want(t, 0)
	code, obj := c.json("status", "--fail-on-error")
	if code != 8 || obj["kind"] != "agents_failing" || obj["status"] == nil {
		t.Fatalf("status --fail-on-error --json: %d %v", code, obj)
	}

	// A newer generation that leaves the target's output unchanged: the
	// reload is still pending (the old code reported ok here).
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"app.conf": "v1", "other": "b"})).want(t, 0)
	poll(t, "attempted generation 2", func() (bool, string) {
		st := a.d.Status()
		return st.Attempted >= 2 && countAttempts() >= 4, st.LastError
	})
	if st := a.d.Status(); !target(st).ReloadPending || st.Ready {
		t.Fatalf("pending reload forgotten after an unchanged generation: %+v", target(st))
	}

	// Restart while pending: the new agent runs the reload again even
	// though the output in place is unchanged.
	a.stop()
	before := countAttempts()
	a = startAgent(t, srv.ConnString(), root, stateDir, specs)
	poll(t, "ran the pending reload after a restart", func() (bool, string) {
		tr := target(a.d.Status())
		return countAttempts() > before && tr.ReloadPending, tr.LastError
	})

	// The reload can succeed now: it does, without a publish, and every
	// surface clears.
	if err := os.WriteFile(okFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	poll(t, "cleared the failure after the reload succeeded", func() (bool, string) {
		st := a.d.Status()
		tr := target(st)
		return st.Ready && tr.OK && !tr.ReloadPending && tr.Retrying == "" && tr.Reloads >= 1, st.NotReadyReason
	})
	if code, body := a.readyz(t); code != http.StatusOK {
		t.Fatalf("/readyz = %d %q after success", code, body)
	}
	poll(t, "cleared the status node", func() (bool, string) {
		st, ok := statusNode(t, conn, root)
		return ok && !st.Failing(), st.LastError
	})
	c.run("status", "--fail-on-error").want(t, 0, "web-1")
	if _, err := os.Stat(filepath.Join(stateDir, agent.PendingReloadsFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pending-reloads file left after success: %v", err)
	}
}

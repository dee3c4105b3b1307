package agent_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/syncbuf"
)

// TestCommandOutputStaysOnHost: a check and a reload that fail printing
// the item they were given (a secret, say) leave that output in the log
// and in /status and /readyz asked from loopback, but not in the status
// node that confpush status and the dashboard read, nor in /status or
// /readyz asked from elsewhere: there the messages say the command failed
// and where its output is. status.command_output (StatusCommandOutput,
// changed live) lets it into the status node again.
func TestCommandOutputStaysOnHost(t *testing.T) {
	const token = "TOKEN-from-the-item-4711"
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	dir := t.TempDir()
	reloaded := join(dir, "b.conf")
	specs := []agent.TargetSpec{
		{Name: "checked", Kind: agent.KindFile, Item: "a.conf", Dest: join(dir, "a.conf"), Mode: 0o640, UID: -1, GID: -1,
			Check: `if grep -q bad {{.src}}; then echo "checking"; echo "rejected: $(cat {{.src}})" >&2; exit 1; fi`},
		{Name: "reloaded", Kind: agent.KindFile, Item: "b.conf", Dest: reloaded, Mode: 0o640, UID: -1, GID: -1,
			Reload: `if grep -q bad ` + reloaded + `; then echo "cannot load: $(cat ` + reloaded + `)"; exit 3; fi`},
	}
	mustPublish(t, p, map[string]string{"a.conf": "good", "b.conf": "good"})
	var logBuf syncbuf.Buffer
	var opts agent.Options
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs, func(o *agent.Options) {
		o.Apply = agent.ApplyIndependent
		o.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(&logBuf, tWriter{t}), nil))
		opts = *o
	})
	r.waitGeneration(t, 1)
	mustPublish(t, p, map[string]string{"a.conf": "bad " + token, "b.conf": "bad " + token})

	conn := c.Connect(t, 4*time.Second)
	bothFailing := func(s fleet.Status) bool {
		return len(s.Targets) == 2 && !s.Targets[0].OK && !s.Targets[1].OK && s.Targets[1].Retrying == agent.RetryReload
	}
	st := waitStatusNode(t, conn, "test-agent", bothFailing)
	raw, _ := zkGet(t, c, layout.New(root, layout.DefaultMeta).StatusNode("test-agent"))
	if strings.Contains(string(raw), token) {
		t.Fatalf("the command output reached the status node:\n%s", raw)
	}
	if want := `check command of target "checked" exited with status 1 (output in the agent's log)`; st.Targets[0].LastError != want {
		t.Errorf("checked: last_error %q, want %q", st.Targets[0].LastError, want)
	}
	if want := `reload command of target "reloaded" exited with status 3 (output in the agent's log)`; !strings.Contains(st.Targets[1].LastError, want) {
		t.Errorf("reloaded: last_error %q, want it to contain %q", st.Targets[1].LastError, want)
	}
	if !strings.Contains(st.LastError, "(output in the agent's log)") || !strings.Contains(st.NotReadyReason, "(output in the agent's log)") {
		t.Errorf("the agent's error or reason does not say where the output is: %q / %q", st.LastError, st.NotReadyReason)
	}

	// On the host: the log, and /status and /readyz asked from loopback.
	if !strings.Contains(logBuf.String(), "rejected: bad "+token) || !strings.Contains(logBuf.String(), "cannot load: bad "+token) {
		t.Errorf("the log lacks the commands' output:\n%s", logBuf.String())
	}
	local := httptest.NewServer(r.d.Handler())
	defer local.Close()
	for _, path := range []string{"/status", "/readyz"} {
		resp, err := http.Get(local.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), token) {
			t.Errorf("%s from loopback lacks the commands' output:\n%s", path, b)
		}
		// The same asked from another host.
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "192.0.2.7:40000"
		r.d.Handler().ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), token) || !strings.Contains(rec.Body.String(), "(output in the agent's log)") {
			t.Errorf("%s from 192.0.2.7 = %s", path, rec.Body.String())
		}
	}

	// Opted in, live: the status node carries the output again.
	opts.StatusCommandOutput = true
	if _, err := r.d.Reconfigure(opts); err != nil {
		t.Fatal(err)
	}
	st = waitStatusNode(t, conn, "test-agent", func(s fleet.Status) bool {
		return bothFailing(s) && strings.Contains(s.Targets[0].LastError, token)
	})
	if !strings.HasSuffix(st.Targets[0].LastError, `exited with status 1: rejected: bad `+token) {
		t.Errorf("opted in: checked's last_error %q", st.Targets[0].LastError)
	}
}

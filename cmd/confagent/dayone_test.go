package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
)

// notifySocket is a fake systemd NOTIFY_SOCKET: the messages confagent
// sends, one datagram each.
type notifySocket struct {
	ln   *net.UnixConn
	msgs chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv("NOTIFY_SOCKET", sock)
	n := &notifySocket{ln: ln, msgs: make(chan string, 100)}
	go func() {
		buf := make([]byte, 1<<16)
		for {
			k, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				close(n.msgs)
				return
			}
			n.msgs <- string(buf[:k])
		}
	}()
	return n
}

// waitReady returns the first datagram holding READY=1.
func (n *notifySocket) waitReady(t *testing.T) string {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-n.msgs:
			if !ok {
				t.Fatal("notify socket closed")
			}
			if strings.Contains("\n"+m+"\n", "\nREADY=1\n") {
				return m
			}
		case <-timeout:
			t.Fatal("confagent never sent READY=1")
		}
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) // #nosec G107 -- the test's own agent
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUnreachableZooKeeperSaysWhy: a fresh agent (no state) whose
// ZooKeeper refuses connections, with a second server whose name does not
// resolve (which used to stop the agent at start), logs a WARN naming each
// server and its cause, repeated while it lasts; /readyz and /status carry
// it; the unit reaches "started" (READY=1, STATUS= saying why it is not
// ready) instead of blocking systemd's start; once the server is back the
// agent connects, says so and applies the generation.
func TestUnreachableZooKeeperSaysWhy(t *testing.T) {
	e := newEnvOwnServer(t)
	e.publish(t, set(1, 2))
	notify := listenNotify(t)
	server := e.c.Addrs()[0]
	const unresolvable = "zk-nonexistent.invalid:2181"
	writeAtomic(t, e.cfgPath, strings.Replace(e.agentConfig("json", "info", "127.0.0.1:0",
		fmt.Sprintf("  - name: d\n    type: dir\n    dest: %s\n", filepath.Join(e.out, "d"))),
		"servers: ["+server+"]", "servers: ["+server+", "+unresolvable+"]", 1))
	e.c.Kill(0)
	p := e.start(t)
	rec := p.waitJSON(t, "cannot reach ZooKeeper", func(r map[string]any) bool { return r["level"] == "WARN" })
	want := server + ": connection refused"
	if got, _ := rec["servers"].(string); !strings.HasPrefix(got, want+"; "+unresolvable+": lookup zk-nonexistent.invalid") {
		t.Fatalf("WARN servers %q, want %q and the name lookup of %s: %v", got, want, unresolvable, rec)
	}
	ready := notify.waitReady(t)
	if !strings.Contains(ready, "STATUS=no generation applied yet") || !strings.Contains(ready, "cannot reach ZooKeeper: "+want) {
		t.Fatalf("READY=1 without a STATUS= saying why it is not ready: %q", ready)
	}
	addr := p.waitJSON(t, "http listening", nil)["addr"].(string)
	code, body := httpGet(t, "http://"+addr+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: no generation applied yet: cannot reach ZooKeeper: "+want) {
		t.Fatalf("/readyz %d %q", code, body)
	}
	_, body = httpGet(t, "http://"+addr+"/status")
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.ZooKeeperUnreachable != rec["servers"] {
		t.Fatalf("/status zk_unreachable %q, want %q", st.ZooKeeperUnreachable, rec["servers"])
	}
	// Repeated, with backoff, while it lasts.
	p.waitCount(t, `"msg":"cannot reach ZooKeeper"`, 2)
	e.c.StartServer(0)
	p.waitJSON(t, "connected to ZooKeeper", func(r map[string]any) bool { return r["level"] == "INFO" && r["server"] == server })
	e.waitApplied(t, "agent-under-test", 1)
	_, body = httpGet(t, "http://"+addr+"/status")
	if strings.Contains(body, "zk_unreachable") {
		t.Fatalf("/status still says unreachable once connected: %s", body)
	}
}

// TestOnceSaysRootMissing: --once against a root that does not exist yet
// says so at once (without claiming a snapshot it does not hold), keeps
// waiting as --timeout asks, and applies the first publish that lands
// meanwhile; with nothing published it fails naming the missing root.
func TestOnceSaysRootMissing(t *testing.T) {
	e := newEnv(t)
	p := e.start(t, "--once", "--timeout", "5m")
	p.waitLog(t, "root /config does not exist in ZooKeeper (yet); waiting for a first publish")
	e.publish(t, set(1, 2))
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("--once did not end after the publish:\n%s", p.log())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("--once exit %d:\n%s", code, p.log())
	}
	if g := e.checkOutputs(t, 2); g != 1 {
		t.Fatalf("rendered generation %d, want 1", g)
	}
	if strings.Contains(p.log(), "serving the held snapshot") {
		t.Fatalf("claims a held snapshot it never had:\n%s", p.log())
	}

	e2 := newEnv(t)
	var out, errb bytes.Buffer
	code := run([]string{"--config", e2.cfgPath, "--once", "--timeout", "3s"}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "confagent: root /config does not exist in ZooKeeper (yet): no generation to apply after waiting 3s") {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	if strings.Contains(errb.String(), "serving the held snapshot") {
		t.Fatalf("claims a held snapshot it never had:\n%s", errb.String())
	}
}

// TestTemplateEditReloads: editing a template target's src (replaced by
// rename, as editors do) reloads the configuration without a SIGHUP: a
// broken template is rejected with its reason (the running one stays), a
// fixed one is taken and the output follows it.
func TestTemplateEditReloads(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", 1)
	src := filepath.Join(e.dir, "all.tmpl")
	trigger := `trigger="template change ` + regexp.QuoteMeta(src) + `"`
	// A broken edit is rejected with its reason; the running template stays.
	writeAtomic(t, src, `{{ item "x" `)
	p.waitText(t, regexp.MustCompile(`msg="configuration rejected, the running one stays" `+trigger+` problems=.*cannot parse template`))
	writeAtomic(t, src, `edited {{ generation }}`)
	p.waitText(t, regexp.MustCompile(`msg="configuration reloaded" `+trigger))
	waitFileContent(t, filepath.Join(e.out, "all.txt"), "edited 1")
}

// waitFileContent waits until path holds want (an apply is seen by its output).
func waitFileContent(t *testing.T, path, want string) {
	t.Helper()
	waitFile(t, path, func(b []byte) bool { return string(b) == want })
}

// waitCount waits until n log lines contain s.
func (p *proc) waitCount(t *testing.T, s string, n int) {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for strings.Count(p.log(), s) < n {
		select {
		case <-p.newLog:
		case <-p.done:
			t.Fatalf("confagent exited before logging %q %d times:\n%s", s, n, p.log())
		case <-timeout:
			t.Fatalf("confagent logged %q fewer than %d times:\n%s", s, n, p.log())
		}
	}
}

// TestMissingKeyZeroTarget: a template target with missing_key: zero is
// applied by the agent where a missing map key makes the default
// (error) reject the generation.
func TestMissingKeyZeroTarget(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(e.dir, "pools.tmpl")
	writeAtomic(t, src, `{{ range $n, $p := json "pools.json" }}{{ $n }}={{ $p.port | default 80 }}[{{ $p.hash }}];{{ end }}`)
	out := filepath.Join(e.out, "pools.conf")
	e.writeConfig(t, "  - name: pools\n    type: template\n    src: "+src+"\n    dest: "+out+"\n    missing_key: zero\n")
	e.publish(t, map[string][]byte{"pools.json": []byte(`{"web": {}, "api": {"port": 81, "hash": "ip"}}`)})
	e.start(t)
	e.waitApplied(t, "agent-under-test", 1)
	waitFileContent(t, out, "api=81[ip];web=80[];")
}

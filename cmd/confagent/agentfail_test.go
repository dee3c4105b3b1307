package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadEnvironmentValueBlamesTheVariable: a bad CONFAGENT_* value is
// reported under the variable's name, not as a key of the file (which
// holds nothing wrong).
func TestBadEnvironmentValueBlamesTheVariable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	if err := os.WriteFile(cfg, []byte("zookeeper:\n  servers: [127.0.0.1:2181]\nstale_after: 1m\ntargets:\n  - name: a\n    type: file\n    item: a\n    dest: "+filepath.Join(dir, "a")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONFAGENT_STALE_AFTER", "x")
	var out, errb bytes.Buffer
	code := run([]string{"check-config", "--config", cfg}, &out, &errb)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitConfig, out.String(), errb.String())
	}
	msg := errb.String()
	if !strings.Contains(msg, `CONFAGENT_STALE_AFTER: invalid duration "x"`) || !strings.Contains(msg, "(environment variable overriding stale_after)") {
		t.Fatalf("the variable is not blamed:\n%s", msg)
	}
	if strings.Contains(msg, "  - stale_after:") {
		t.Fatalf("the file's key is blamed:\n%s", msg)
	}
	t.Logf("stderr: %s", msg)
}

// agentConfig is an agent configuration for e with the given log and
// http settings and targets (YAML list items).
func (e *env) agentConfig(logFormat, logLevel, listen, targets string) string {
	return fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 2s
root: %s
state_dir: %s
agent_id: agent-under-test
http:
  listen: %q
log:
  level: %s
  format: %s
targets:
%s`, strings.Join(e.c.Addrs(), ", "), testRoot, filepath.Join(e.dir, "state"), listen, logLevel, logFormat, targets)
}

// writeAgentConfig writes e's agent configuration with the given log and
// http settings and one dir target.
func (e *env) writeAgentConfig(t *testing.T, logFormat, logLevel, listen string) {
	t.Helper()
	writeAtomic(t, e.cfgPath, e.agentConfig(logFormat, logLevel, listen,
		fmt.Sprintf("  - name: d\n    type: dir\n    dest: %s\n", filepath.Join(e.out, "d"))))
}

// waitLine waits for a log line for which match returns a non-nil
// result, and returns it.
func waitLine[T any](t *testing.T, p *proc, what string, match func(line string) (T, bool)) T {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		p.mu.Lock()
		lines := slices.Clone(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if v, ok := match(l); ok {
				return v
			}
		}
		select {
		case <-p.newLog:
		case <-p.done:
			t.Fatalf("confagent exited before logging %s:\n%s", what, p.log())
		case <-timeout:
			t.Fatalf("confagent never logged %s:\n%s", what, p.log())
		}
	}
}

// waitJSON waits for a JSON log line whose msg is msg (and that match, if
// set, accepts) and returns it decoded.
func (p *proc) waitJSON(t *testing.T, msg string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	return waitLine(t, p, fmt.Sprintf("%q in JSON", msg), func(l string) (map[string]any, bool) {
		var rec map[string]any
		ok := json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg && (match == nil || match(rec))
		return rec, ok
	})
}

// waitText waits for a text log line matching re and returns its
// submatches.
func (p *proc) waitText(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return waitLine(t, p, re.String(), func(l string) ([]string, bool) {
		m := re.FindStringSubmatch(l)
		return m, m != nil
	})
}

// TestApplyLogsDurationForItsReader: the apply's duration is a number of
// seconds in JSON logs and a human duration in text logs.
func TestApplyLogsDurationForItsReader(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	t.Run("JSON", func(t *testing.T) {
		e.writeAgentConfig(t, "json", "info", "")
		p := e.start(t)
		rec := p.waitJSON(t, "applied", nil)
		secs, ok := rec["duration_seconds"].(float64)
		if !ok || secs < 0 {
			t.Fatalf("applied record has no numeric duration_seconds: %v", rec)
		}
		if _, ok := rec["duration"]; ok {
			t.Fatalf("applied record keeps a duration in nanoseconds: %v", rec)
		}
		p.kill()
	})
	t.Run("Text", func(t *testing.T) {
		if err := os.RemoveAll(e.out); err != nil {
			t.Fatal(err)
		}
		e.writeAgentConfig(t, "text", "info", "")
		p := e.start(t)
		m := p.waitText(t, regexp.MustCompile(`msg=applied .*duration=(\S+)`))
		if _, err := time.ParseDuration(m[1]); err != nil || !regexp.MustCompile(`^[0-9.]+(ns|µs|ms|s|m[0-9.]+s)$`).MatchString(m[1]) {
			t.Fatalf("text duration %q is not a human duration (%v)", m[1], err)
		}
	})
}

// TestReloadAppliesLogAndHTTPListen: a reload that changes log.format,
// log.level and http.listen takes them over: the next lines are JSON, and
// the endpoint moves (the new address serves, the old one is closed).
func TestReloadAppliesLogAndHTTPListen(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	e.writeAgentConfig(t, "text", "info", "127.0.0.1:0")
	p := e.start(t)
	old := p.waitText(t, regexp.MustCompile(`msg="http listening" addr=(\S+)`))[1]
	e.waitApplied(t, "agent-under-test", 1)
	get := func(addr string) error {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	if err := get(old); err != nil {
		t.Fatalf("old endpoint: %v", err)
	}

	e.writeAgentConfig(t, "json", "debug", "localhost:0")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rec := p.waitJSON(t, "http listening", nil)
	addr, _ := rec["addr"].(string)
	if err := get(addr); err != nil {
		t.Fatalf("new endpoint %s: %v", addr, err)
	}
	p.waitJSON(t, "http stopped listening", nil)
	if err := get(old); err == nil {
		t.Fatalf("the old endpoint %s still serves after the reload", old)
	}
	// The level took effect: debug records appear (the cache's "applied",
	// after a publish).
	e.publish(t, set(2, 2))
	p.waitJSON(t, "applied", func(r map[string]any) bool { return r["level"] == "DEBUG" })

	// An address that cannot be bound leaves the serving one alone.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	e.writeAgentConfig(t, "json", "debug", taken.Addr().String())
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitJSON(t, "http.listen not changed: the old address keeps serving (a restart is needed if the new address is taken by the old listener)",
		func(r map[string]any) bool { return r["level"] == "ERROR" && r["addr"] == taken.Addr().String() })
	if err := get(addr); err != nil {
		t.Fatalf("the serving endpoint %s stopped after a failed re-bind: %v", addr, err)
	}
}

// TestLostZooKeeperConnectionLogged: when its ZooKeeper server dies, the
// agent logs a WARN naming the server and the cause, and an INFO when the
// connection is back.
func TestLostZooKeeperConnectionLogged(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	e := newEnvOwnServer(t)
	e.publish(t, set(1, 2))
	e.writeAgentConfig(t, "json", "info", "")
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", 1)
	// SIGKILL: the kernel closes the server's connections and its listening
	// socket at once, so the agent's probe finds it refusing (a graceful
	// stop closes the connections first; the probe then retries).
	e.c.Kill(0)
	server := e.c.Addrs()[0]
	rec := p.waitJSON(t, "lost the ZooKeeper connection", func(r map[string]any) bool { return r["level"] == "WARN" })
	if rec["server"] != server {
		t.Fatalf("WARN record names server %v, want %s: %v", rec["server"], server, rec)
	}
	if cause, _ := rec["cause"].(string); !strings.Contains(cause, "connection refused") {
		t.Fatalf("WARN record's cause %q does not say the server refuses connections: %v", cause, rec)
	}
	e.c.Restart(0)
	back := p.waitJSON(t, "ZooKeeper connection restored", func(r map[string]any) bool { return r["level"] == "INFO" })
	if back["server"] != server {
		t.Fatalf("INFO record names server %v, want %s: %v", back["server"], server, back)
	}
}

// TestDryRunRunsChecks: confagent --dry-run runs each changing target's
// check command against the output it would apply, reports each, exits 1
// when one fails, and writes nothing; --no-check skips them.
func TestDryRunRunsChecks(t *testing.T) {
	e := newEnv(t)
	dest := filepath.Join(e.out, "app.conf")
	writeAtomic(t, e.cfgPath, e.agentConfig("text", "info", "", fmt.Sprintf(`  - name: app
    type: file
    item: app.conf
    dest: %s
    check: "! grep -q FORBIDDEN {{.src}}"
  - name: d
    type: dir
    dest: %s
    check: "test -f \"$ZKCONF_STAGED/app.conf\""
`, dest, filepath.Join(e.out, "d"))))
	dryRun := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"--config", e.cfgPath, "--dry-run", "--timeout", "30s"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	assertNothingWritten := func() {
		t.Helper()
		for _, p := range []string{e.out, filepath.Join(e.dir, "state")} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("--dry-run wrote %s: %v", p, err)
			}
		}
	}

	e.publish(t, map[string][]byte{"app.conf": []byte("listen 80\n")})
	code, out, errOut := dryRun()
	if code != 0 || !strings.Contains(out, "check app: ok") || !strings.Contains(out, "check d: ok") {
		t.Fatalf("passing checks: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	assertNothingWritten()

	e.publish(t, map[string][]byte{"app.conf": []byte("listen 80\nFORBIDDEN\n")})
	code, out, errOut = dryRun()
	if code != exitError || !strings.Contains(out, `check app: FAILED: check command of target "app" exited with status 1`) ||
		!strings.Contains(out, "check d: ok") || !strings.Contains(errOut, "1 check command(s) failed") {
		t.Fatalf("failing check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	assertNothingWritten()

	code, out, errOut = dryRun("--no-check")
	if code != 0 || strings.Contains(out, "check ") || !strings.Contains(out, "+FORBIDDEN") {
		t.Fatalf("--no-check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	assertNothingWritten()

	// The apply the dry run predicted rejects the generation, naming the
	// check and its target once.
	var stdout, stderr bytes.Buffer
	code = run([]string{"--config", e.cfgPath, "--once", "--timeout", "30s"}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), `confagent: generation 2 rejected: check command of target "app" exited with status 1`) ||
		strings.Contains(stderr.String(), "check: check") {
		t.Fatalf("--once: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("a rejected generation was written: %v", err)
	}
}

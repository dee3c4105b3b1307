package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/httpguard"
)

// TestAgentHTTPRefusesForeignHost: a real confagent's HTTP endpoint
// refuses a request whose Host is a name it is not known by (a web page
// that re-pointed its own name at the agent) with 421 on every path, and
// logs the refusal once; Prometheus scraping by the host's address, by
// localhost or by a name of http.allowed_hosts keeps working, and a
// reload that adds a name to http.allowed_hosts takes it over without
// re-binding. Every response, refusals and 404s included, carries the
// security headers.
func TestAgentHTTPRefusesForeignHost(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	writeConfig := func(allowed string) {
		writeAtomic(t, e.cfgPath, strings.Replace(e.agentConfig("text", "info", "127.0.0.1:0",
			fmt.Sprintf("  - name: d\n    type: dir\n    dest: %s\n", filepath.Join(e.out, "d"))),
			"http:\n", "http:\n  allowed_hosts: "+allowed+"\n", 1))
	}
	writeConfig(`[".metrics.example.com"]`)
	p := e.start(t)
	addr := p.waitText(t, regexp.MustCompile(`msg="http listening" addr=(\S+)`))[1]
	e.waitApplied(t, "agent-under-test", 1)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	get := func(host, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	headers := func(what string, resp *http.Response) {
		t.Helper()
		for k, want := range map[string]string{"Content-Security-Policy": httpguard.CSPNone, "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", what, k, got, want)
			}
		}
	}
	paths := []string{"/status", "/metrics", "/readyz", "/healthz", "/nothing"}
	for _, host := range []string{"rebind.evil.example:" + port, "web-1.metrics.example.com.evil.example", "localhost.evil.example"} {
		for _, path := range paths {
			resp, body := get(host, path)
			if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "agent-under-test") || strings.Contains(body, "zkconf_") {
				t.Errorf("Host %s, GET %s = %d %q", host, path, resp.StatusCode, body)
			}
			if !strings.Contains(body, "confagent: Host ") || !strings.Contains(body, "add the name to http.allowed_hosts") {
				t.Errorf("refusal %q", body)
			}
			headers("refusal", resp)
		}
	}
	p.waitLog(t, `refused a request for a Host this server does not answer to`)
	if n := strings.Count(p.log(), `host=rebind.evil.example:`+port); n != 1 {
		t.Errorf("5 refusals of one Host logged %d times:\n%s", n, p.log())
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// How Prometheus scrapes: the host's address, its name, a name of the
	// allow-list; and localhost.
	for _, host := range []string{addr, "10.0.0.5:" + port, "localhost:" + port, hostname + ":" + port,
		"web-1.metrics.example.com:" + port, "metrics.example.com"} {
		resp, body := get(host, "/metrics")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "zkconf_agent_generation 1") {
			t.Errorf("Host %s, GET /metrics = %d", host, resp.StatusCode)
		}
		headers("/metrics", resp)
		if resp, _ := get(host, "/status"); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s, GET /status = %d", host, resp.StatusCode)
		}
	}
	resp, _ := get(addr, "/nothing")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing = %d", resp.StatusCode)
	}
	headers("404", resp)

	// A reload adds a name, on the same listener.
	writeConfig(`["prometheus-target.internal"]`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The command's own line, after http.allowed_hosts is taken over (the
	// daemon logs one of the same message, with targets=, on its own).
	p.waitText(t, regexp.MustCompile(`msg="configuration reloaded" trigger=`))
	if resp, _ := get("prometheus-target.internal:"+port, "/metrics"); resp.StatusCode != http.StatusOK {
		t.Errorf("a name added by a reload: %d", resp.StatusCode)
	}
	if resp, _ := get("web-1.metrics.example.com:"+port, "/metrics"); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a name the reload removed: %d", resp.StatusCode)
	}
	if strings.Contains(p.log(), "http stopped listening") {
		t.Errorf("the reload re-bound the listener:\n%s", p.log())
	}
}

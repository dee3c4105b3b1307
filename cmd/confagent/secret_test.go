package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
)

// TestNoSecretInAgentLogs publishes a recognisable secret and drives the
// agent through a successful apply, a check failure and a template error
// at debug level: the secret appears in none of its output, and not in its
// status node either.
func TestNoSecretInAgentLogs(t *testing.T) {
	const secret = "s3cr3t-VALUE-42"
	e := newEnv(t)
	e.writeConfig(t, `  - name: checked
    type: file
    item: item00
    dest: `+filepath.Join(e.out, "checked.conf")+`
    check: "! grep -q REJECT {{.src}}"
`)
	items := set(1, 3)
	items["item00"] = []byte("password=" + secret + " END")
	g := e.publish(t, items)
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", g)

	// A generation the check rejects, with the secret in it.
	items = set(2, 3)
	items["item00"] = []byte("REJECT password=" + secret + " END")
	e.publish(t, items)
	p.waitLog(t, "check command")

	// A generation whose item breaks JSON parsing in a template.
	e.writeConfig(t, `  - name: parsed
    type: template
    src: `+filepath.Join(e.dir, "bad.tmpl")+`
    dest: `+filepath.Join(e.out, "parsed.conf")+`
`)
	writeAtomic(t, filepath.Join(e.dir, "bad.tmpl"), `{{ (json "item00").x }}`)
	p.waitLog(t, "configuration reloaded")
	items = set(3, 3)
	items["item00"] = []byte(`{"x": "` + secret + `", broken`)
	e.publish(t, items)
	p.waitLog(t, "invalid JSON")

	if strings.Contains(p.log(), secret) {
		t.Fatalf("the secret reached the agent's log:\n%s", p.log())
	}
	st := e.waitApplied(t, "agent-under-test", g)
	if strings.Contains(st.LastError, secret) {
		t.Fatalf("the secret reached the status node: %s", st.LastError)
	}
}

// TestNoSecretFromTemplateNameArgument: a template passing one item's
// content as another helper's item name ({{ item (trim (item "item00")) }})
// fails the render, and the secret appears in none of the error, the
// agent's log, /status or the status node; the error still says what went
// wrong and where.
func TestNoSecretFromTemplateNameArgument(t *testing.T) {
	const secret = "s3cr3t-NAME-ARG-77"
	t.Setenv("CONFAGENT_HTTP_LISTEN", "127.0.0.1:0")
	e := newEnv(t)
	tmpl := filepath.Join(e.dir, "leak.tmpl")
	writeAtomic(t, tmpl, `{{ item (trim (item "item00")) }}{{ json (item "item01") }}`)
	e.writeConfig(t, `  - name: leaky
    type: template
    src: `+tmpl+`
    dest: `+filepath.Join(e.out, "leaky.conf")+`
apply: independent
`)
	items := set(1, 3)
	items["item00"] = []byte("  password=" + secret + "  \n")
	items["item01"] = []byte(secret)
	g := e.publish(t, items)
	p := e.start(t)
	p.waitLog(t, "not shown")
	st := e.waitStatus(t, "agent-under-test", func(st agent.Status) bool {
		return st.CacheGeneration >= g && st.LastError != ""
	})

	addr := ""
	for _, l := range strings.Split(p.log(), "\n") {
		if _, a, ok := strings.Cut(l, `msg="http listening" addr=`); ok {
			addr = strings.Fields(a)[0]
		}
	}
	if addr == "" {
		t.Fatalf("no http address in the log:\n%s", p.log())
	}
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "argument of 27 bytes, not shown") {
		t.Errorf("/status does not report the render error:\n%s", body)
	}
	for what, s := range map[string]string{"log": p.log(), "/status": string(body), "status node": st.LastError} {
		if strings.Contains(s, secret) {
			t.Errorf("the secret reached the agent's %s:\n%s", what, s)
		}
	}
	if !strings.Contains(st.LastError, "not shown") {
		t.Errorf("the status node does not carry the render error: %+v", st)
	}
}

// waitStatus watches an agent's status node until ok holds.
func (e *env) waitStatus(t *testing.T, agentID string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	return waitStatusNode(t, e.c, layout.New(testRoot, layout.DefaultMeta).StatusNode(agentID), ok)
}

// waitStatusNode watches the status node at path until ok holds.
func waitStatusNode(t *testing.T, c *zktest.Cluster, path string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	conn := c.Connect(t, 4*time.Second)
	// Closed on return: the watch it holds is of no use afterwards.
	// (It was closed early to dodge go-zookeeper v1.0.4's reconnect race,
	// go-zookeeper/zk#35, which the patched client in third_party/ fixes;
	// leaving it to Connect's t.Cleanup would be as correct now.)
	defer conn.Close()
	timeout := time.After(60 * time.Second)
	for {
		var st agent.Status
		found, _, ev, err := conn.ExistsW(path)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			b, _, gev, err := conn.GetW(path)
			if err == nil && json.Unmarshal(b, &st) == nil && ok(st) {
				return st
			}
			if err == nil {
				ev = gev
			}
		}
		select {
		case <-ev:
		case <-timeout:
			t.Fatalf("the agent never reported the awaited status in %s (last %+v)", path, st)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/clidoc"
	"github.com/zkconf/zkconf/internal/clidocgen"
)

func TestConfagentVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--version"}, &out, &errb); code != 0 {
		t.Fatalf("--version: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"confagent ", "(commit ", ", " + runtime.Version() + ")"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("--version prints %q: lacks %q", out.String(), want)
		}
	}
}

// TestConfagentDocs fails when docs/cli or docs/man differ from what the
// commands generate, or a command has no example, or an example names no
// command. ZKCONF_UPDATE_DOCS=1 (make docs) rewrites the reference.
func TestConfagentDocs(t *testing.T) {
	root, _ := command(io.Discard, io.Discard, false)
	if os.Getenv(clidoc.UpdateEnv) == "1" {
		if err := clidocgen.Generate(root, "../../docs/cli", "../../docs/man"); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := clidocgen.Stale(root, "../../docs/cli", "../../docs/man")
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, s := range stale {
		problems = append(problems, "stale: "+s)
	}
	for _, m := range clidoc.MissingExamples(root) {
		problems = append(problems, "no example: "+m)
	}
	for _, u := range clidoc.SetExamples(root, examples()) {
		problems = append(problems, fmt.Sprintf("example for no command: %q", u))
	}
	if len(problems) > 0 {
		t.Fatalf("the CLI reference is stale or incomplete; run '%s' and commit docs/cli and docs/man; "+
			"add missing examples to the examples map in cmd/confagent/conventions.go (and remove those for no command):\n  %s",
			clidoc.Regenerate, strings.Join(problems, "\n  "))
	}
}

// TestConfagentExamples: every command's help shows its examples.
func TestConfagentExamples(t *testing.T) {
	var out bytes.Buffer
	run([]string{"adopt", "--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "Examples:\n  # Follow the root's new incarnation") {
		t.Fatalf("adopt --help has no Examples section:\n%s", out.String())
	}
}

// scrape returns the agent's /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startWithHTTP starts confagent serving HTTP on a random port and returns
// it and the address it listens on.
func (e *env) startWithHTTP(t *testing.T) (*proc, string) {
	t.Helper()
	p := e.start(t)
	p.waitLog(t, "http listening")
	m := regexp.MustCompile(`"http listening" addr=(\S+)`).FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", p.log())
	}
	return p, m[1]
}

// TestConfagentMetricsFromStart: a real confagent's /metrics has its build
// and every per-target series at 0 before anything was applied, and the
// generation it catches up on at start-up (published before it started)
// is not counted as publish-to-apply latency, while the next one is.
func TestConfagentMetricsFromStart(t *testing.T) {
	e := newEnv(t)
	cfg, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, e.cfgPath, strings.Replace(string(cfg), `listen: ""`, `listen: "127.0.0.1:0"`, 1))

	// Nothing published: nothing is applied, every series is there.
	first, addr := e.startWithHTTP(t)
	metrics := scrape(t, addr)
	want := []string{
		`zkconf_build_info{commit="`,
		`goversion="` + runtime.Version() + `"`,
		`zkconf_agent_publish_to_apply_seconds_count 0`,
		`zkconf_agent_applies_total{result="ok"} 0`,
		`zkconf_agent_applies_total{result="failed"} 0`,
		`zkconf_agent_reloads_total{target="all"} 0`,
		`zkconf_agent_drift_repairs_total{target="d"} 0`,
		`zkconf_agent_retries_total{class="transient",target="all"} 0`,
		`zkconf_agent_retries_total{class="reload",target="d"} 0`,
		`zkconf_agent_target_retrying{class="reload",target="d"} 0`,
		`zkconf_agent_zookeeper_state{state="expired"} 0`,
		"zkconf_agent_apply_failing 0\n",
	}
	for _, target := range []string{"d", "all"} {
		for _, kind := range []string{"render", "check", "write", "reload", "transient"} {
			want = append(want, `zkconf_agent_failures_total{kind="`+kind+`",target="`+target+`"} 0`)
		}
	}
	for _, w := range want {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics before the first apply lacks %s", w)
		}
	}
	if t.Failed() {
		t.Fatalf("/metrics before the first apply:\n%s", metrics)
	}

	first.kill()

	// A generation published before the agent started is catch-up.
	e.publish(t, set(1, 3))
	_, addr = e.startWithHTTP(t)
	e.waitApplied(t, "agent-under-test", 1)
	if metrics := scrape(t, addr); !strings.Contains(metrics, "zkconf_agent_publish_to_apply_seconds_count 0\n") ||
		!strings.Contains(metrics, "zkconf_agent_generation 1\n") {
		t.Fatalf("the generation caught up on at start-up counted as publish-to-apply latency:\n%s", metrics)
	}

	// A generation published while the agent runs is latency.
	e.publish(t, set(2, 3))
	e.waitApplied(t, "agent-under-test", 2)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(metrics, "zkconf_agent_publish_to_apply_seconds_count 1\n") {
		if time.Now().After(deadline) {
			t.Fatalf("generation 2 not counted as publish-to-apply latency:\n%s", metrics)
		}
		time.Sleep(100 * time.Millisecond)
		metrics = scrape(t, addr)
	}
}

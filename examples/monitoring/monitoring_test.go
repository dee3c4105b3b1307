// Package monitoring_test checks the monitoring files operators drop in
// (README.md beside this file): the Prometheus rules with promtool, the
// Grafana dashboard's structure, and that every metric either names is
// one a real confagent exports.
package monitoring_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

const (
	rulesFile     = "zkconf-alerts.yml"
	rulesTestFile = "zkconf-alerts.test.yml"
	configFile    = "prometheus.yml"
	dashboardFile = "zkconf-dashboard.json"
)

// promtool returns the promtool binary: $PROMTOOL, else the one on PATH.
// It never skips: a missing promtool fails the test with what to do.
func promtool(t *testing.T) string {
	t.Helper()
	return prometheusTool(t, "promtool", "PROMTOOL")
}

// prometheusTool returns the binary name of the Debian prometheus package
// (promtool, prometheus): $env, else the one on PATH. It never skips.
func prometheusTool(t *testing.T, name, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (%v): run scripts/ensure-prometheus.sh (make test does; it installs the Debian prometheus package) or set %s", name, err, env)
	}
	return p
}

// runPromtool runs promtool with args (and stdin) and fails the test
// with its output unless it succeeds.
func runPromtool(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRulesCheck(t *testing.T) {
	runPromtool(t, "", "check", "rules", rulesFile)
}

// TestRulesUnitTests runs the alerts' unit tests: every alert fires on
// the series that should raise it and stays quiet on look-alikes.
func TestRulesUnitTests(t *testing.T) {
	runPromtool(t, "", "test", "rules", rulesTestFile)
}

func TestPrometheusConfigCheck(t *testing.T) {
	runPromtool(t, "", "check", "config", configFile)
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	var rf ruleFile
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// TestRulesTestedBothWays: the unit tests show every alert firing at some
// evaluation and quiet at another, and every alert has a severity, a
// summary and a description, and a section in the README.
func TestRulesTestedBothWays(t *testing.T) {
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	b, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tf); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s must show it firing (exp_alerts) and quiet (exp_alerts: []): fires %v, quiet %v", r.Alert, rulesTestFile, fires[r.Alert], quiet[r.Alert])
			}
			if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", r.Alert)
			}
			if !strings.Contains(string(readme), "### "+r.Alert+"\n") {
				t.Errorf("%s: README.md has no section \"### %s\" saying what it means and what to do", r.Alert, r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no alert", rulesFile)
	}
}

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         *int        `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens the panels of collapsed rows into the list.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboardStructure: what Grafana needs to import the dashboard
// anywhere (title, uid, schemaVersion, a datasource variable every query
// uses), and what makes it work (unique panel ids, every panel but a row
// has queries, each query an expression, panels on the 24-column grid).
func TestDashboardStructure(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" || d.SchemaVersion == 0 || len(d.Panels) == 0 {
		t.Fatalf("dashboard needs title, uid, schemaVersion and panels: title %q uid %q schemaVersion %d, %d panels",
			d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	if len(d.UID) > 40 {
		t.Errorf("uid %q longer than Grafana's 40 characters", d.UID)
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				t.Errorf("datasource variable %q: query %s, want \"prometheus\"", v.Name, v.Query)
			}
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("templating has no datasource variable: the dashboard would be bound to one Grafana's data source")
	}
	wantDS := "${" + dsVar + "}"
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != wantDS) {
			t.Errorf("variable %q does not query the data source %s", v.Name, wantDS)
		}
	}
	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if p.ID == nil {
			t.Errorf("panel %q has no id", p.Title)
			continue
		}
		if other, dup := ids[*p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", *p.ID, other, p.Title)
		}
		ids[*p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("panel %d has no title", *p.ID)
		}
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v not on the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				t.Errorf("row %q has queries", p.Title)
			}
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != wantDS {
			t.Errorf("panel %q does not use the data source variable %s", p.Title, wantDS)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %q has no expression", p.Title, tg.RefID)
			}
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != wantDS {
				t.Errorf("panel %q: target %q does not use the data source variable %s", p.Title, tg.RefID, wantDS)
			}
		}
	}
}

// labelValuesMetric is the metric of a Grafana label_values(metric, label)
// variable query.
var labelValuesMetric = regexp.MustCompile(`^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)`)

// referencedMetrics returns every metric name the rules and the dashboard
// select, each with where it is used.
func referencedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	refs := map[string][]string{}
	add := func(where, expr string) {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range names {
			refs[n] = append(refs[n], where)
		}
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			add(rulesFile+" "+r.Alert+r.Record, r.Expr)
		}
	}
	d := readDashboard(t)
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("%s panel %q %s", dashboardFile, p.Title, tg.RefID), tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %q: %v", v.Name, err)
		}
		m := labelValuesMetric.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %q: query %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		refs[m[1]] = append(refs[m[1]], fmt.Sprintf("%s variable %q", dashboardFile, v.Name))
	}
	return refs
}

// notExported lists the referenced names not in exported, with where each
// is used. Prometheus's own series (up) are not the agent's to export.
func notExported(refs map[string][]string, exported map[string]bool) []string {
	var bad []string
	for name, where := range refs {
		if name == "up" || exported[name] {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s (used in %s)", name, strings.Join(where, "; ")))
	}
	sort.Strings(bad)
	return bad
}

// exportedNames returns every series name of a text exposition: each
// family's name, with _bucket, _sum and _count for a histogram and _sum
// and _count for a summary.
func exportedNames(t *testing.T, exposition string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, l := range strings.Split(exposition, "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		switch f[3] {
		case "histogram":
			names[f[2]+"_bucket"], names[f[2]+"_sum"], names[f[2]+"_count"] = true, true, true
		case "summary":
			names[f[2]], names[f[2]+"_sum"], names[f[2]+"_count"] = true, true, true
		default:
			names[f[2]] = true
		}
	}
	if len(names) == 0 {
		t.Fatalf("no # TYPE line in the scrape:\n%s", exposition)
	}
	return names
}

// TestMetricNamesExported starts a real ZooKeeper and a real confagent,
// lets it apply a generation published while it runs (so the latency
// histogram has an observation), scrapes /metrics, and checks that every
// metric the rules and the dashboard select is in the scrape; then lints
// the scrape with promtool check metrics, and checks that docs/confagent.md
// lists every zkconf metric of the scrape.
func TestMetricNamesExported(t *testing.T) {
	refs := referencedMetrics(t)
	scrape := scrapeRealAgent(t)
	exported := exportedNames(t, scrape)
	if bad := notExported(refs, exported); len(bad) > 0 {
		var names []string
		for n := range exported {
			if strings.HasPrefix(n, "zkconf_") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		t.Errorf("metrics the monitoring files use that confagent does not export:\n  %s\nconfagent exports:\n  %s",
			strings.Join(bad, "\n  "), strings.Join(names, "\n  "))
	}
	runPromtool(t, scrape, "check", "metrics")

	// The reference operators read the names from must list them all.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "confagent.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(scrape, "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "zkconf_") &&
			!regexp.MustCompile("(?m)^\\| `"+regexp.QuoteMeta(f[2])+"[`{]").Match(doc) {
			t.Errorf("docs/confagent.md's metrics table has no row for %s", f[2])
		}
	}
}

// TestNotExportedReportsTypos: the check above fails on a misspelled or
// removed metric, a histogram referenced without its suffix, and a
// suffix a gauge does not have.
func TestNotExportedReportsTypos(t *testing.T) {
	exported := exportedNames(t, strings.Join([]string{
		"# TYPE zkconf_agent_generation gauge", "zkconf_agent_generation 1",
		"# TYPE zkconf_agent_publish_to_apply_seconds histogram", `zkconf_agent_publish_to_apply_seconds_bucket{le="+Inf"} 0`,
	}, "\n"))
	refs := map[string][]string{}
	for _, expr := range []string{
		`max(zkconf_agent_generation) - min(zkconf_agent_genration)`,
		`rate(zkconf_agent_publish_to_apply_seconds_bucket[5m]) + rate(zkconf_agent_publish_to_apply_seconds_count[5m])`,
		`zkconf_agent_publish_to_apply_seconds`,
		`zkconf_agent_generation_sum`,
		`up == 0`,
	} {
		for _, n := range metricNames(expr) {
			refs[n] = append(refs[n], "test")
		}
	}
	got := notExported(refs, exported)
	want := []string{
		"zkconf_agent_generation_sum (used in test)",
		"zkconf_agent_genration (used in test)",
		"zkconf_agent_publish_to_apply_seconds (used in test)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notExported = %q, want %q", got, want)
	}
}

// scrapeRealAgent builds confagent, runs it against a real ZooKeeper until
// it has applied a generation published while it ran, and returns its
// /metrics.
func scrapeRealAgent(t *testing.T) string {
	t.Helper()
	addr, publishSet := startRealAgent(t)
	url := "http://" + addr + "/metrics"
	waitMetric(t, url, "zkconf_agent_generation 1")
	publishSet("v2")
	waitMetric(t, url, "zkconf_agent_generation 2")
	return waitMetric(t, url, "zkconf_agent_publish_to_apply_seconds_count 1")
}

// startRealAgent builds and starts a real confagent on a real ZooKeeper,
// with generation 1 published and the http settings README.md gives
// (http.allowed_hosts covering prometheus.yml's target names), and returns
// the address of its HTTP endpoint and a function publishing the next
// generation.
func startRealAgent(t *testing.T) (string, func(string)) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "confagent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/zkconf/zkconf/cmd/confagent").CombinedOutput(); err != nil {
		t.Fatalf("build confagent: %v\n%s", err, out)
	}
	c := zktest.Start(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	const root = "/config"
	pub, err := publish.New(zkclient.Fixed(conn, sess), root)
	if err != nil {
		t.Fatal(err)
	}
	publishSet := func(v string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pub.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte(v)}, CreateRoot: true}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	publishSet("v1")

	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	// One target with a reload command, so the per-target series exist
	// as they do on a real host.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
root: %s
state_dir: %s
agent_id: monitoring-test
http:
  listen: "127.0.0.1:0"
  allowed_hosts: [".example.com"]
log:
  level: info
  format: json
targets:
  - name: app
    type: file
    item: app.conf
    dest: %s
    reload: "true"
`, strings.Join(c.Addrs(), ", "), root, filepath.Join(dir, "state"), filepath.Join(dir, "out", "app.conf"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	return startAgent(t, bin, cfg), publishSet
}

// startAgent starts confagent with cfg and returns the address its HTTP
// endpoint listens on (from its "http listening" log line).
func startAgent(t *testing.T, bin, cfg string) string {
	t.Helper()
	addrc := make(chan string, 1)
	done := runLogged(t, "confagent", exec.Command(bin, "--config", cfg), func(line []byte) {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "http listening" && l.Addr != "" {
			select {
			case addrc <- l.Addr:
			default:
			}
		}
	})
	select {
	case a := <-addrc:
		return a
	case <-done:
		t.Fatal("confagent exited before listening")
	case <-time.After(60 * time.Second):
		t.Fatal("confagent did not log \"http listening\" within 60s")
	}
	return ""
}

// runLogged starts cmd until the test ends, hands each line of its stderr
// to onLine (nil: none), logs that output if the test failed, and returns a
// channel closed when the process has exited.
func runLogged(t *testing.T, name string, cmd *exec.Cmd, onLine func([]byte)) <-chan struct{} {
	t.Helper()
	cmd.SysProcAttr = zktest.ChildAttr(false)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			log = append(log, sc.Text())
			mu.Unlock()
			if onLine != nil {
				onLine(sc.Bytes())
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			mu.Lock()
			t.Logf("%s log:\n%s", name, strings.Join(log, "\n"))
			mu.Unlock()
		}
	})
	return done
}

// waitMetric polls url until a line of the exposition is want, and
// returns that exposition.
func waitMetric(t *testing.T, url, want string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				last = string(b)
				if slices.Contains(strings.Split(last, "\n"), want) {
					return last
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line %q in %s within 60s (last error %v); zkconf lines:\n%s", want, url, err, grepLines(last, "zkconf_"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

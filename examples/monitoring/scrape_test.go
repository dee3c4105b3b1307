package monitoring_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// TestPrometheusScrapesByName: a real Prometheus running prometheus.yml's
// scrape job scrapes a real confagent configured as README.md says
// (http.allowed_hosts: [".example.com"]) under the target names of
// prometheus.yml (web-1.example.com:9464, ...), which is the Host it
// sends: every target is up. The agent refuses Host names it is not known
// by (DNS rebinding); this is the scrape configuration that must keep
// working. The names do not resolve here, so Prometheus reaches the agent
// through a forward proxy (proxy_url) that keeps the Host it was asked
// for.
func TestPrometheusScrapesByName(t *testing.T) {
	bin := prometheusTool(t, "prometheus", "PROMETHEUS")
	agentAddr, _ := startRealAgent(t)

	// The forward proxy: every request goes to the agent, Host untouched.
	var mu sync.Mutex
	hosts := map[string]bool{}
	target, _ := url.Parse("http://" + agentAddr)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts[r.Host] = true
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	// prometheus.yml as shipped, scraping every second through the proxy
	// (and without the rule file, which its own tests cover).
	b, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "rule_files")
	cfg["global"] = map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"}
	var want []string
	for _, sc := range cfg["scrape_configs"].([]any) {
		job := sc.(map[string]any)
		job["proxy_url"] = proxy.URL
		for _, st := range job["static_configs"].([]any) {
			for _, tg := range st.(map[string]any)["targets"].([]any) {
				want = append(want, tg.(string))
			}
		}
	}
	if len(want) == 0 {
		t.Fatalf("no targets in %s", configFile)
	}
	dir := t.TempDir()
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	web := startPrometheus(t, bin, dir)

	// Every target of the job is up: scraped by its name, answered.
	deadline := time.Now().Add(120 * time.Second)
	for {
		up, last := upTargets(t, web)
		if len(up) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets up within 120s: %v of %v; Prometheus's targets: %s", up, want, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range want {
		if !hosts[w] {
			t.Errorf("the agent was never asked for Host %s (Hosts seen: %v)", w, hosts)
		}
	}
}

// startPrometheus runs prometheus on the configuration in dir until the
// test ends, and returns its web address once it serves.
func startPrometheus(t *testing.T, bin, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := l.Addr().String()
	_ = l.Close()
	done := runLogged(t, "prometheus", exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web), nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + web + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return web
			}
		}
		select {
		case <-done:
			t.Fatal("prometheus exited before serving")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 60s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// upTargets returns the scrape URLs' hosts of the active targets whose
// health is "up", and the raw answer.
func upTargets(t *testing.T, web string) ([]string, string) {
	t.Helper()
	resp, err := http.Get("http://" + web + "/api/v1/targets?state=active")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("targets: %v: %s", err, b)
	}
	var up []string
	for _, a := range r.Data.ActiveTargets {
		if a.Health == "up" {
			u, err := url.Parse(a.ScrapeURL)
			if err != nil {
				t.Fatal(err)
			}
			up = append(up, u.Host)
		}
	}
	slices.Sort(up)
	return up, string(b)
}

package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/dashboard"
	"github.com/zkconf/zkconf/internal/httpguard"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// serveAlso starts another dashboard, with options o, on e's ZooKeeper.
func (e *env) serveAlso(o dashboard.Options) (*dashboard.Server, *httptest.Server) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	o.Client = zkclient.Fixed(dial(e.t, e.zk), nil)
	srv, err := dashboard.New(ctx, o)
	if err != nil {
		e.t.Fatal(err)
	}
	h := httptest.NewServer(srv.Handler())
	e.t.Cleanup(h.Close)
	waitAPI(&env{t: e.t, http: h}, "/api/root?root=/config", "the new dashboard follows /config",
		func(v dashboard.RootView) bool { return v.Generation > 0 })
	return srv, h
}

// request sends method path to base with the Host header host ("" keeps
// the URL's) and returns the response with its body read; an event stream
// is closed after its headers.
func request(t *testing.T, base, method, host, path string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp, ""
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestForeignHostRefused: a request whose Host is a name the dashboard is
// not known by (a web page that re-pointed its own name at 127.0.0.1) is
// refused with 421 on every route, the event stream included, and carries
// nothing of the fleet; loopback names, IP addresses, the listen host and
// --allowed-host names are answered.
func TestForeignHostRefused(t *testing.T) {
	e := startWith(t, dashboard.Options{Listen: "dash.internal:8080", AllowedHosts: []string{"dash.example.com", ".corp.example"}})
	e.waitFleet("both agents at generation 1", allAt(1))
	paths := []string{"/", "/root?root=/config", "/agent?root=/config&id=host-a", "/static/app.js", "/api/roots",
		"/api/root?root=/config", "/api/root/agents?root=/config", "/api/root/events?root=/config",
		"/api/agent?root=/config&id=host-a", "/api/generation?root=/config&g=1", "/api/nothing"}
	for _, host := range []string{"rebind.evil.example:8080", "rebind.evil.example", "localhost.evil.example:8080",
		"dash.example.com.evil.example", "127.0.0.1.nip.io:8080"} {
		for _, p := range paths {
			resp, body := request(t, e.http.URL, "GET", host, p)
			if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "host-a") || strings.Contains(body, root) {
				t.Errorf("Host %s, GET %s = %d %q", host, p, resp.StatusCode, body)
			}
			if !strings.Contains(body, "is not a name this server answers to; add the name with --allowed-host") {
				t.Errorf("Host %s: refusal %q", host, body)
			}
		}
	}
	for _, host := range []string{"", "localhost:8080", "127.0.0.1:8080", "[::1]:8080", "10.1.2.3:80", "dash.internal:8080",
		"dash.example.com", "DASH.EXAMPLE.COM:443", "dash.corp.example:8443"} {
		for _, p := range paths[:len(paths)-1] {
			resp, body := request(t, e.http.URL, "GET", host, p)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("Host %q, GET %s = %d %q", host, p, resp.StatusCode, body)
			}
		}
		if _, body := request(t, e.http.URL, "GET", host, "/api/roots"); !strings.Contains(body, root) {
			t.Errorf("Host %q: /api/roots = %s", host, body)
		}
	}
}

// TestSecurityHeadersEveryRoute: every response carries the
// Content-Security-Policy, nosniff, no-referrer and no-framing headers:
// pages, static files, every API endpoint, the event stream, 400s, 404s
// (a POST too) and the refusal of a foreign Host. The table covers every route
// server.go registers. The pages hold no inline script, event handler or
// style, so that the policy needs no 'unsafe-inline'.
func TestSecurityHeadersEveryRoute(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	routes := []struct {
		method, host, path string
		code               int
	}{
		{"GET", "", "/", 200},
		{"GET", "", "/root?root=/config", 200},
		{"GET", "", "/generation?root=/config&g=1", 200},
		{"GET", "", "/agent?root=/config&id=host-a", 200},
		{"GET", "", "/static/app.js", 200},
		{"GET", "", "/static/root.js", 200},
		{"GET", "", "/static/roots.js", 200},
		{"GET", "", "/static/agent.js", 200},
		{"GET", "", "/static/generation.js", 200},
		{"GET", "", "/static/style.css", 200},
		{"GET", "", "/static/", 200},
		{"GET", "", "/static/missing.js", 404},
		{"GET", "", "/api/roots", 200},
		{"GET", "", "/api/root?root=/config", 200},
		{"GET", "", "/api/root/agents?root=/config", 200},
		{"GET", "", "/api/root/history?root=/config", 200},
		{"GET", "", "/api/root/events?root=/config", 200},
		{"GET", "", "/api/root/rollout?root=/config", 200},
		{"GET", "", "/api/generation?root=/config&g=1", 200},
		{"GET", "", "/api/diff?root=/config&from=1&to=1", 200},
		{"GET", "", "/api/agent?root=/config&id=host-a", 200},
		{"GET", "", "/api/nothing", 404},
		{"GET", "", "/no/such/page", 404},
		{"GET", "", "/root?root=/nope", 404},
		{"GET", "", "/generation?root=/config&g=abc", 400},
		{"GET", "", "/api/root", 400},
		{"GET", "", "/api/root/events?root=/nope", 404},
		{"POST", "", "/api/roots", 404},
		{"POST", "", "/", 404},
		{"GET", "evil.example", "/", 421},
		{"GET", "evil.example", "/static/app.js", 421},
	}
	covered := map[string]bool{}
	for _, r := range routes {
		resp, body := request(t, e.http.URL, r.method, r.host, r.path)
		if resp.StatusCode != r.code {
			t.Errorf("%s %s (Host %q) = %d, want %d: %s", r.method, r.path, r.host, resp.StatusCode, r.code, body)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy":      httpguard.CSPPages,
			"X-Content-Type-Options":       "nosniff",
			"Referrer-Policy":              "no-referrer",
			"X-Frame-Options":              "DENY",
			"Cross-Origin-Resource-Policy": "same-origin",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s %s (Host %q): %s = %q, want %q", r.method, r.path, r.host, k, got, want)
			}
		}
		if p, _, _ := strings.Cut(r.path, "?"); r.code == 200 {
			covered[p] = true
		}
	}
	if !strings.Contains(httpguard.CSPPages, "default-src 'self'") || !strings.Contains(httpguard.CSPPages, "frame-ancestors 'none'") {
		t.Fatalf("the policy is %q", httpguard.CSPPages)
	}

	// Every route server.go registers is in the table, answered 200.
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"GET (/[^"{]*)(\{\$\})?"`).FindAllStringSubmatch(string(src), -1) {
		p := m[1]
		if !covered[p] {
			t.Errorf("route GET %s is not in the table (or not answered 200)", p)
		}
	}

	// No inline script, handler or style in the pages; none injected by
	// the scripts' HTML either (a style attribute in innerHTML is inline).
	assets := os.DirFS("assets")
	files, _ := fs.Glob(assets, "*")
	for _, f := range files {
		b, err := fs.ReadFile(assets, f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".html") {
			for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(b), -1) {
				if !strings.Contains(tag, ` src="/static/`) {
					t.Errorf("%s: inline script %s", f, tag)
				}
			}
		}
		if strings.HasSuffix(f, ".html") || strings.HasSuffix(f, ".js") {
			for _, m := range regexp.MustCompile(`(?i)\son[a-z]+\s*=\s*["']|\sstyle\s*=|javascript:`).FindAllString(string(b), -1) {
				t.Errorf("%s: inline handler or style %q", f, m)
			}
		}
	}
}

// openStream opens root's event stream on base and reads its first
// event; the stream is closed at the test's end.
func openStream(t *testing.T, base, r string) (*http.Response, *bufio.Scanner, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/root/events?root="+r, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return resp, nil, cancel
	}
	sc := bufio.NewScanner(resp.Body)
	if _, err := nextEvent(sc); err != nil {
		t.Fatalf("no first event on %s: %v", r, err)
	}
	return resp, sc, cancel
}

// nextEvent reads the next "root" event of a stream.
func nextEvent(sc *bufio.Scanner) (dashboard.RootView, error) {
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v dashboard.RootView
			err := json.Unmarshal([]byte(data), &v)
			return v, err
		}
	}
	if sc.Err() != nil {
		return dashboard.RootView{}, sc.Err()
	}
	return dashboard.RootView{}, io.EOF
}

// TestEventStreamCaps: beyond the cap per root, and beyond the global
// cap, a stream is refused with 503 and Retry-After; a slot given back
// (a browser closing its page) is taken again.
func TestEventStreamCaps(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	other, err := publish.New(zkclient.Fixed(dial(t, e.zk), nil), "/other")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := other.Publish(ctx, publish.Request{Items: map[string][]byte{"x": []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	_, h := e.serveAlso(dashboard.Options{MaxStreams: 3, MaxStreamsPerRoot: 2})
	waitAPI(&env{t: t, http: h}, "/api/roots", "both roots discovered", func(r struct {
		Roots []dashboard.RootSummary `json:"roots"`
	}) bool {
		return len(r.Roots) == 2
	})
	_, _, close1 := openStream(t, h.URL, "/config")
	openStream(t, h.URL, "/config")
	resp, _, _ := openStream(t, h.URL, "/config")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "too many event streams on root /config (2, the limit per root)") {
		t.Fatalf("third stream on /config: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _, _ := openStream(t, h.URL, "/other"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a stream on /other within the global cap: %d", resp.StatusCode)
	}
	resp, _, _ = openStream(t, h.URL, "/other")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "too many event streams (3, the dashboard's limit)") {
		t.Fatalf("fourth stream: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// The other endpoints are not limited by the streams.
	if resp, _ := request(t, h.URL, "GET", "", "/api/root?root=/config"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/root with the streams full: %d", resp.StatusCode)
	}

	// A closed stream's slot is given back once its handler ends.
	close1()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, _, _ := openStream(t, h.URL, "/config")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed stream's slot was not given back within 60s: %d", resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEventStreamEnds: a stream that sent nothing for the idle time ends,
// and so does one that reached its lifetime, by the server closing it
// (the browser's EventSource reconnects); the stream never ends on its own
// without them.
func TestEventStreamEnds(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	for name, o := range map[string]dashboard.Options{
		"idle":     {StreamIdle: 300 * time.Millisecond, StreamLifetime: time.Hour},
		"lifetime": {StreamIdle: time.Hour, StreamLifetime: 300 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			_, h := e.serveAlso(o)
			resp, sc, _ := openStream(t, h.URL, "/config")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d", resp.StatusCode)
			}
			// Read to the end: the server closes it (io.EOF), long before
			// the request's own 90 s context would.
			var err error
			for err == nil {
				_, err = nextEvent(sc)
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("the stream did not end by the server closing it: %v", err)
			}
		})
	}
}

// TestOneViewPerChange: N clients following a root's event stream through
// a publish cost one computation of the root's view per change of the
// watched view, not one per client.
func TestOneViewPerChange(t *testing.T) {
	const clients = 30
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	var streams []*bufio.Scanner
	var v0 uint64
	for range clients {
		_, sc, _ := openStream(t, e.http.URL, "/config")
		streams = append(streams, sc)
	}
	var first dashboard.RootView
	e.api("/api/root?root=/config", &first)
	v0 = first.Version
	c0 := dashboard.ViewsComputed(e.srv)

	g := e.publish("a=1\nb=2\nc=4\n")
	for i, sc := range streams {
		for {
			v, err := nextEvent(sc)
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			if v.Generation == g && v.AtLatest == 2 {
				break
			}
		}
	}
	c1 := dashboard.ViewsComputed(e.srv)
	var now dashboard.RootView
	e.api("/api/root?root=/config", &now)
	changes := now.Version - v0
	t.Logf("%d clients, %d changes of the view, %d computations", clients, changes, c1-c0)
	if changes >= clients {
		t.Fatalf("%d changes for %d clients: too many to tell one computation per change from one per client", changes, clients)
	}
	if c1-c0 == 0 || c1-c0 > changes {
		t.Fatalf("%d computations of the view for %d changes and %d clients (want at most one per change)", c1-c0, changes, clients)
	}
}

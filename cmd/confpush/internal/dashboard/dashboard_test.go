package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cmd/confpush/internal/dashboard"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

// env is a real ZooKeeper, a publisher, two real agents (host-b refuses
// content containing "bad" through its check command) and a dashboard.
type env struct {
	t    *testing.T
	zk   *zktest.Cluster
	pub  *publish.Publisher
	srv  *dashboard.Server
	http *httptest.Server
}

func start(t *testing.T, showContent bool) *env {
	t.Helper()
	return startWith(t, dashboard.Options{ShowContent: showContent})
}

// startWith is start with the dashboard's options o (its Client is set
// here), on the test binary's shared server.
func startWith(t *testing.T, o dashboard.Options) *env {
	t.Helper()
	return startOn(t, sharedZooKeeper.For(t), o)
}

// startOn is startWith on server c.
func startOn(t *testing.T, c *zktest.Cluster, o dashboard.Options) *env {
	t.Helper()
	conn := dial(t, c)
	p, err := publish.New(zkclient.Fixed(conn, nil), root)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, zk: c, pub: p}
	e.publish("a=1\nb=2\nc=3\n")
	runAgent(t, c.Addrs(), "host-a", "", map[string]string{"zone": "a"})
	runAgent(t, c.Addrs(), "host-b", "! grep -q bad {{.src}}", map[string]string{"zone": "b"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o.Client = zkclient.Fixed(dial(t, c), nil)
	e.srv, err = dashboard.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e.http = httptest.NewServer(e.srv.Handler())
	t.Cleanup(e.http.Close)
	return e
}

func dial(t *testing.T, c *zktest.Cluster) *zk.Conn {
	t.Helper()
	conn, _, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func runAgent(t *testing.T, servers []string, id, check string, labels map[string]string) {
	t.Helper()
	fleettest.RunAgent(t, root, id, func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: 4 * time.Second}
		o.Labels = labels
		o.Targets[0].Check = check
	})
}

func (e *env) publish(content string) int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.pub.Publish(ctx, publish.Request{Items: map[string][]byte{
		"app.conf": []byte(content), "settings.json": []byte(`{"size": 1}`)}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Generation
}

// get fetches path and returns the status, content type and body.
func (e *env) get(path string) (int, string, []byte) {
	e.t.Helper()
	resp, err := http.Get(e.http.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// api fetches path, wants 200 and decodes the JSON into out.
func (e *env) api(path string, out any) {
	e.t.Helper()
	code, _, b := e.get(path)
	if code != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, code, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		e.t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

type agentsPage struct {
	Generation int64 `json:"generation"`
	Total      int   `json:"total"`
	Agents     []struct {
		ID         string `json:"id"`
		Generation int64  `json:"generation"`
		State      string `json:"state"`
		LastError  string `json:"last_error"`
	} `json:"agents"`
}

// waitFleet polls the agents endpoint (served from the watched view) until
// cond holds.
func (e *env) waitFleet(what string, cond func(agentsPage) bool) agentsPage {
	e.t.Helper()
	return waitAPI(e, "/api/root/agents?root="+url.QueryEscape(root), what, cond)
}

// waitAPI polls the JSON endpoint path until its answer, decoded into a
// new T, satisfies cond.
func waitAPI[T any](e *env, path, what string, cond func(T) bool) T {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v T
		code, _, b := e.get(path)
		if code == http.StatusOK && json.Unmarshal(b, &v) == nil && cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within 60s; last answer %d %s", what, code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func allAt(g int64) func(agentsPage) bool {
	return func(p agentsPage) bool {
		if p.Generation != g || p.Total != 2 {
			return false
		}
		for _, a := range p.Agents {
			if a.Generation != g {
				return false
			}
		}
		return true
	}
}

// TestAPI: the endpoints' shapes, pagination and filters over a live
// fleet; the table follows a publish; a failing agent shows its error.
func TestAPI(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	g := e.publish("a=1\nb=20\nc=3\n")
	e.waitFleet("both agents at generation 2", allAt(g))

	var roots struct {
		Roots []dashboard.RootSummary `json:"roots"`
	}
	e.api("/api/roots", &roots)
	if len(roots.Roots) != 1 || roots.Roots[0].Root != root || roots.Roots[0].Generation != 2 ||
		roots.Roots[0].Agents != 2 || roots.Roots[0].AtLatest != 2 || !roots.Roots[0].Connected {
		t.Fatalf("roots = %+v", roots)
	}
	var rv dashboard.RootView
	e.api("/api/root?root=/config", &rv)
	if len(rv.Spread) != 1 || rv.Spread[0] != (dashboard.Spread{Generation: 2, Agents: 2}) {
		t.Fatalf("spread = %+v", rv.Spread)
	}
	var hist struct {
		History []dashboard.HistoryEntry `json:"history"`
	}
	e.api("/api/root/history?root=/config", &hist)
	if len(hist.History) != 2 || hist.History[0].Generation != 2 || !hist.History[0].Live || hist.History[0].Items != 2 ||
		hist.History[0].Agents != 2 || hist.History[1].Generation != 1 {
		t.Fatalf("history = %+v", hist)
	}

	// Pagination and filters.
	var page agentsPage
	e.api("/api/root/agents?root=/config&limit=1", &page)
	if page.Total != 2 || len(page.Agents) != 1 || page.Agents[0].ID != "host-a" {
		t.Fatalf("first page = %+v", page)
	}
	e.api("/api/root/agents?root=/config&limit=1&offset=1", &page)
	if page.Total != 2 || len(page.Agents) != 1 || page.Agents[0].ID != "host-b" {
		t.Fatalf("second page = %+v", page)
	}
	e.api("/api/root/agents?root=/config&q=host-b", &page)
	if page.Total != 1 || page.Agents[0].ID != "host-b" {
		t.Fatalf("q=host-b = %+v", page)
	}
	e.api("/api/root/agents?root=/config&state=failing", &page)
	if page.Total != 0 {
		t.Fatalf("state=failing before any failure = %+v", page)
	}

	var gen struct {
		Generation   int64                `json:"generation"`
		Items        []dashboard.ItemView `json:"items"`
		AppliedBy    []string             `json:"applied_by"`
		AppliedCount int                  `json:"applied_count"`
		Generations  []int64              `json:"generations"`
	}
	e.api("/api/generation?root=/config&g=2", &gen)
	if gen.Generation != 2 || len(gen.Items) != 2 || gen.Items[0].Name != "app.conf" || gen.Items[0].Size != 13 ||
		len(gen.Items[0].SHA256) != 64 || fmt.Sprint(gen.AppliedBy) != "[host-a host-b]" || fmt.Sprint(gen.Generations) != "[2 1]" {
		t.Fatalf("generation = %+v", gen)
	}

	// A failing agent: host-b's check refuses generation 3.
	g = e.publish("a=1\nbad\n")
	p := e.waitFleet("host-b failing", func(p agentsPage) bool {
		return p.Generation == g && len(p.Agents) == 2 && p.Agents[0].Generation == g && p.Agents[1].State == "failing"
	})
	if !strings.Contains(p.Agents[1].LastError, "check") {
		t.Fatalf("host-b's error is not shown: %+v", p.Agents[1])
	}
	e.api("/api/root/agents?root=/config&state=failing", &page)
	if page.Total != 1 || page.Agents[0].ID != "host-b" {
		t.Fatalf("state=failing = %+v", page)
	}
	var ag struct {
		Row struct {
			State string `json:"state"`
		} `json:"row"`
		Targets []struct {
			Name      string `json:"name"`
			OK        bool   `json:"ok"`
			LastError string `json:"last_error"`
		} `json:"targets"`
		Applied []dashboard.AppliedGeneration `json:"applied"`
	}
	e.api("/api/agent?root=/config&id=host-b", &ag)
	if ag.Row.State != "failing" || len(ag.Targets) != 1 || ag.Targets[0].OK || ag.Targets[0].LastError == "" ||
		len(ag.Applied) == 0 || ag.Applied[0].Generation != 2 {
		t.Fatalf("agent host-b = %+v", ag)
	}
}

// TestDiffHidesContent: without ShowContent a diff carries names, sizes,
// hashes and changed-line counts, never a line of content; with it, the
// changed lines.
func TestDiffHidesContent(t *testing.T) {
	for _, show := range []bool{false, true} {
		t.Run(fmt.Sprint("show=", show), func(t *testing.T) {
			e := start(t, show)
			g := e.publish("a=1\nb=SECRET\nc=3\n")
			e.waitFleet("both agents at generation 2", allAt(g))
			code, _, b := e.get("/api/diff?root=/config&from=1&to=2")
			if code != http.StatusOK {
				t.Fatalf("diff = %d %s", code, b)
			}
			var d struct {
				Items []dashboard.DiffItem `json:"items"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Items) != 2 || d.Items[0].Name != "app.conf" || d.Items[0].Change != "changed" ||
				d.Items[0].Added != 1 || d.Items[0].Removed != 1 || d.Items[1].Change != "same" {
				t.Fatalf("diff = %s", b)
			}
			if got := strings.Contains(string(b), "SECRET"); got != show {
				t.Fatalf("content shown = %v with ShowContent %v: %s", got, show, b)
			}
			if show {
				var ops []string
				for _, l := range d.Items[0].Hunks[0] {
					ops = append(ops, l.Op+l.Text)
				}
				if fmt.Sprint(ops) != "[ a=1 -b=2 +b=SECRET  c=3]" {
					t.Fatalf("hunk = %q", ops)
				}
			}
		})
	}
}

// TestNotFound: unknown roots, generations, agents and paths are 404s (HTML
// for pages, JSON for /api/), malformed parameters 400s, never a 500.
func TestNotFound(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	for _, c := range []struct {
		path string
		code int
		html bool
	}{
		{"/root?root=/nope", 404, true},
		{"/generation?root=/config&g=99", 404, true},
		{"/generation?root=/nope&g=1", 404, true},
		{"/agent?root=/config&id=nobody", 404, true},
		{"/no/such/page", 404, true},
		{"/generation?root=/config&g=abc", 400, true},
		{"/api/root?root=/nope", 404, false},
		{"/api/root/agents?root=/nope", 404, false},
		{"/api/root/history?root=/nope", 404, false},
		{"/api/root/events?root=/nope", 404, false},
		{"/api/generation?root=/config&g=99", 404, false},
		{"/api/diff?root=/config&from=1&to=99", 404, false},
		{"/api/agent?root=/config&id=nobody", 404, false},
		{"/api/nothing", 404, false},
		{"/api/root", 400, false},
		{"/api/generation?root=/config&g=-1", 400, false},
		{"/api/root/agents?root=/config&limit=x", 400, false},
		{"/api/root/agents?root=/config&state=bogus", 400, false},
	} {
		code, ctype, b := e.get(c.path)
		if code != c.code {
			t.Errorf("GET %s = %d, want %d: %s", c.path, code, c.code, b)
			continue
		}
		if c.html != strings.HasPrefix(ctype, "text/html") {
			t.Errorf("GET %s: content type %s", c.path, ctype)
		}
		if !c.html {
			var body struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(b, &body) != nil || body.Error == "" {
				t.Errorf("GET %s: no JSON error: %s", c.path, b)
			}
		}
	}
	for _, p := range []string{"/", "/root?root=/config", "/generation?root=/config&g=1", "/agent?root=/config&id=host-a",
		"/static/app.js", "/static/style.css"} {
		if code, _, b := e.get(p); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", p, code, b)
		}
	}
}

// TestEventsAndRestart: the event stream sends the root's view at once
// and after a publish; it says when ZooKeeper is gone, and after ZooKeeper
// restarts the live view follows the next publish again.
func TestEventsAndRestart(t *testing.T) {
	e := startOn(t, zktest.Start(t), dashboard.Options{}) // its own server: the test stops it
	e.waitFleet("both agents at generation 1", allAt(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.http.URL+"/api/root/events?root=/config", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := bufio.NewScanner(resp.Body)
	next := func() dashboard.RootView {
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var v dashboard.RootView
				if err := json.Unmarshal([]byte(data), &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("event stream ended: %v", events.Err())
		return dashboard.RootView{}
	}
	if v := next(); v.Root != root || v.Generation != 1 {
		t.Fatalf("first event %+v", v)
	}
	g := e.publish("a=2\n")
	for v := next(); v.Generation != g || v.AtLatest != 2; v = next() {
	}

	// ZooKeeper down: the stream says the view is not live.
	e.zk.Stop(0)
	for v := next(); v.Connected; v = next() {
	}
	// Requests are answered from the watched view, not from ZooKeeper.
	var page agentsPage
	e.api("/api/root/agents?root=/config", &page)
	if page.Total != 2 || page.Generation != 2 {
		t.Fatalf("agents while ZooKeeper is down: %+v", page)
	}
	e.zk.StartServer(0)
	e.zk.WaitServing(0)
	g = e.publish("a=3\n")
	e.waitFleet("both agents at the generation published after the restart", allAt(g))
	var rv dashboard.RootView
	e.api("/api/root?root=/config", &rv)
	if !rv.Connected || rv.Generation != g {
		t.Fatalf("after the restart: %+v", rv)
	}
	for v := next(); v.Generation != g || v.AtLatest != 2 || !v.Connected; v = next() {
	}
}

// TestLargeFleet: 10,000 more status nodes (ephemeral, as agents create
// them) are served page by page from the watched view; filters and the
// last page work at that size.
func TestLargeFleet(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	conn := dial(t, e.zk)
	parent := layout.New(root, layout.DefaultMeta).Status()
	const n = 10000
	for batch := 0; batch < n; batch += 500 {
		var ops []any
		for i := batch; i < batch+500; i++ {
			id := fmt.Sprintf("bulk-%05d", i)
			st := fleet.Status{AgentID: id, Root: root, Generation: 1, CacheGeneration: 1, State: "live", Ready: true,
				Labels: map[string]string{"rack": fmt.Sprint("r", i%10)}}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, &zk.CreateRequest{Path: parent + "/" + id, Data: b, Acl: zk.WorldACL(zk.PermAll),
				Flags: zk.FlagEphemeral})
		}
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	var page agentsPage
	for {
		e.api("/api/root/agents?root=/config&offset=10000&limit=50", &page)
		if page.Total == n+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the view did not reach %d agents within 120s: total %d", n+2, page.Total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(page.Agents) != 2 || page.Agents[0].ID != "host-a" || page.Agents[1].ID != "host-b" {
		t.Fatalf("last page = %+v", page.Agents)
	}
	e.api("/api/root/agents?root=/config&offset=100&limit=1000", &page)
	if len(page.Agents) != 1000 || page.Agents[0].ID != "bulk-00100" || page.Agents[999].ID != "bulk-01099" {
		t.Fatalf("page of 1000 from 100: %d rows, %+v ... ", len(page.Agents), page.Agents[:1])
	}
	e.api("/api/root/agents?root=/config&limit=5000", &page)
	if len(page.Agents) != 1000 {
		t.Fatalf("limit is not capped at 1000: %d rows", len(page.Agents))
	}
	e.api("/api/root/agents?root=/config&q=rack%3Dr7", &page)
	if page.Total != n/10 {
		t.Fatalf("q=rack=r7: total %d", page.Total)
	}
	var rv dashboard.RootView
	e.api("/api/root?root=/config", &rv)
	if rv.Agents != n+2 || rv.AtLatest != n+2 || len(rv.Spread) != 1 || rv.Spread[0].Agents != n+2 {
		t.Fatalf("root view: %+v", rv)
	}
}

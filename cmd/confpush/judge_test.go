package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cmd/confpush/internal/dashboard"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/zkclient"
)

// TestStatusAndDashboardAgree: `confpush status` and the dashboard judge
// every agent of one fleet alike (fleet.Agent.State), for every state an
// agent can be in. Before fleet judged agents, each had its own copy and
// they disagreed: an agent whose cache is stale read "stale" in status and
// "ok" on the dashboard, and an expected agent whose status node is forged
// read "gone" in status and "untrusted" on the dashboard (it is gone: its
// agent does not report, and rollouts wait for it). The dashboard's state
// filter takes every state, and both show an agent's failure alike.
func TestStatusAndDashboardAgree(t *testing.T) {
	const root = "/judge/app"
	c, nodes := fleetFixture(t, root, 2)
	now := time.Now()
	ok := []fleet.TargetResult{{Name: "app", OK: true, Generation: 2, LastAttempt: 2}}
	live := func(id string, gen int64, state string) fleet.Status {
		return fleet.Status{AgentID: id, Root: root, Generation: gen, CacheGeneration: gen, State: state, Since: now,
			AppliedAt: now, Ready: true, Targets: ok}
	}
	nodes.put(live("web-ok", 2, "live"))
	nodes.put(live("web-behind", 1, "live"))
	failing := live("web-failing", 1, "live")
	failing.Attempted, failing.LastError = 2, "render app.conf: template: bad"
	nodes.put(failing)
	retrying := live("web-retrying", 2, "live")
	retrying.Targets = []fleet.TargetResult{{Name: "nginx", OK: false, Generation: 2, LastAttempt: 2,
		LastError: "reload: exit status 1", Retrying: "reload", Retries: 3, ReloadPending: true}}
	nodes.put(retrying)
	const retried = "target nginx: reload failure retried (3 retries): reload: exit status 1"
	nodes.put(live("web-stale", 2, "stale"))
	nodes.put(live("web-expired", 2, "expired"))
	nodes.put(fleet.Status{AgentID: "web-starting", Root: root, State: "starting", Since: now})
	// A status node named web-untrusted that another agent wrote, and
	// one named web-forged, an agent the registry expects.
	forged := live("web-forged", 2, "live")
	forged.AgentID = "someone-else"
	nodes.putAt("web-forged", forged)
	untrusted := live("web-untrusted", 2, "live")
	untrusted.AgentID = "someone-else"
	nodes.putAt("web-untrusted", untrusted)
	nodes.putRaw("web-unreadable", []byte("{not json"))
	nodes.register("web-forged")
	nodes.register("web-gone")

	want := map[string]string{
		"web-ok": fleet.StateOK, "web-behind": fleet.StateBehind, "web-failing": fleet.StateFailing, "web-retrying": fleet.StateFailing,
		"web-stale": fleet.StateStale, "web-expired": fleet.StateExpired, "web-starting": fleet.StateStarting,
		"web-forged": fleet.StateGone, "web-gone": fleet.StateGone, "web-untrusted": fleet.StateUntrusted,
		"web-unreadable": fleet.StateUnreadable,
	}
	_, obj := c.json("status")
	cliState := map[string]string{}
	for _, a := range obj["agents"].([]any) {
		m := a.(map[string]any)
		cliState[m["id"].(string)], _ = m["state"].(string)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := dashboard.New(ctx, dashboard.Options{Client: zkclient.Fixed(nodes.conn, nil)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	type page struct {
		Total  int `json:"total"`
		Agents []struct {
			ID        string `json:"id"`
			State     string `json:"state"`
			LastError string `json:"last_error"`
		} `json:"agents"`
	}
	get := func(query string) (int, page) {
		t.Helper()
		resp, err := http.Get(hs.URL + "/api/root/agents?root=" + url.QueryEscape(root) + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var p page
		_ = json.Unmarshal(b, &p)
		return resp.StatusCode, p
	}
	// The dashboard's view is filled by its watches: wait for it to hold
	// every agent (generously bounded; it is a wait, not a speed).
	var dash page
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, p := get("")
		if code == http.StatusOK && p.Total == len(want) {
			dash = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard did not show the %d agents within 60s: %d %+v", len(want), code, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dashState := map[string]string{}
	for _, a := range dash.Agents {
		dashState[a.ID] = a.State
		// The error shown is one judgement too (fleet.Status.Failure).
		if a.ID == "web-retrying" && a.LastError != retried {
			t.Errorf("the dashboard's last_error of web-retrying: %q, want %q", a.LastError, retried)
		}
	}
	if l := strings.Join(row(t, c.run("status").stdout, "web-retrying"), " "); !strings.Contains(l, retried) {
		t.Errorf("confpush status's LAST ERROR of web-retrying: %s", l)
	}
	for id, w := range want {
		if cliState[id] != w || dashState[id] != w {
			t.Errorf("%s: confpush status says %q, the dashboard %q; want %q", id, cliState[id], dashState[id], w)
		}
		code, p := get("&state=" + w)
		found := false
		for _, a := range p.Agents {
			found = found || a.ID == id
		}
		if code != http.StatusOK || !found {
			t.Errorf("the dashboard's state=%s filter: %d, %+v without %s", w, code, p, id)
		}
	}
}

// putAt writes st as the status node named id (whatever its agent_id).
func (s statusNodes) putAt(id string, st fleet.Status) {
	s.t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		s.t.Fatal(err)
	}
	s.putRaw(id, b)
}

// putRaw creates the status node named id with data b.
func (s statusNodes) putRaw(id string, b []byte) {
	s.t.Helper()
	if err := zkclient.EnsurePath(context.Background(), s.conn, s.paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.conn.Create(s.paths.StatusNode(id), b, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
}

// register writes agent id's registry node, as the agent does.
func (s statusNodes) register(id string) {
	s.t.Helper()
	b, err := json.Marshal(fleet.Registration{FirstSeen: time.Now(), LastSeen: time.Now(), Hostname: id + ".example"})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := zkclient.EnsurePath(context.Background(), s.conn, s.paths.Agents(), zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.conn.Create(s.paths.AgentNode(id), b, 0, zk.WorldACL(zk.PermAll)); err != nil {
		s.t.Fatal(err)
	}
}

// TestWatchRefusesEmptyCanary: watch --canary applies publish's rule: a
// selection that selects no expected agent is refused, nothing written
// (it used to start a rollout nobody follows, which then refused every
// later change of the directory); the next change is judged again.
func TestWatchRefusesEmptyCanary(t *testing.T) {
	const root = "/judge/watch"
	c, nodes := fleetFixture(t, root, 1)
	st := fleet.Status{AgentID: "web-1", Root: root, Generation: 1, CacheGeneration: 1, State: "live", Ready: true,
		Labels: map[string]string{"zone": "a"}}
	nodes.put(st)
	bin := buildBinary(t, ".", "confpush")
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "changed\n"})
	w := startWatcher(t, bin, "--zk", c.zk, "--root", root, "--session-timeout", "10s",
		"watch", "--debounce", "100ms", "--canary", "zone=b", "--auto", "--bake", "1s", dir)
	w.waitFor(t, "watch", `publish refused: canary selection "zone=b" selects none of the 1 expected agents`)
	if m := rootOf(t, nodes.conn, root); m.Generation != 1 || m.Canary != nil {
		t.Fatalf("a refused canary wrote: generation %d, canary %+v", m.Generation, m.Canary)
	}
}

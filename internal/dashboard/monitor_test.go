package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

type rootsPage struct {
	Roots []struct {
		Root   string    `json:"root"`
		Exists bool      `json:"exists"`
		ReadAt time.Time `json:"read_at"`
	} `json:"roots"`
}

// TestMissingRoot: a root the dashboard follows (an agent's status node
// under its metadata) whose znode does not exist is a 404, page and API,
// saying so, not a root at generation 0 with one agent; /api/roots lists
// it with "exists": false.
func TestMissingRoot(t *testing.T) {
	e := start(t, false)
	conn := dial(t, e.zk)
	p := layout.New("/typo", layout.DefaultMeta)
	if err := zkclient.EnsurePath(context.Background(), conn, p.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(fleet.Status{AgentID: "web-9", Root: "/typo", State: "starting", Targets: []fleet.TargetResult{}})
	if _, err := conn.Create(p.StatusNode("web-9"), st, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	roots := waitAPI(e, "/api/roots", "the dashboard read /typo", func(r rootsPage) bool {
		for _, x := range r.Roots {
			if x.Root == "/typo" && !x.ReadAt.IsZero() {
				return true
			}
		}
		return false
	})
	for _, x := range roots.Roots {
		if want := x.Root != "/typo"; x.Exists != want {
			t.Errorf("/api/roots: root %s exists=%v, want %v", x.Root, x.Exists, want)
		}
	}
	for _, path := range []string{"/root?root=/typo", "/api/root?root=/typo", "/api/root/agents?root=/typo", "/api/root/history?root=/typo"} {
		code, _, b := e.get(path)
		if code != http.StatusNotFound || !strings.Contains(string(b), "root /typo does not exist") ||
			!strings.Contains(string(b), "1 agent(s) follow it") {
			t.Errorf("GET %s = %d %s, want 404 saying the root does not exist and an agent follows it", path, code, b)
		}
	}
	if code, _, b := e.get("/api/root?root=/config"); code != http.StatusOK {
		t.Errorf("GET /api/root?root=/config = %d %s", code, b)
	}
}

// TestLastSeenLiveAgent: an agent with a trusted status node was last
// seen now, not when it last refreshed its registry node (every
// fleet.RegistryRefresh, minutes).
func TestLastSeenLiveAgent(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	conn := dial(t, e.zk)
	node := layout.New(root, layout.DefaultMeta).AgentNode("host-a")
	b, _, err := conn.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	var reg fleet.Registration
	if err := json.Unmarshal(b, &reg); err != nil {
		t.Fatal(err)
	}
	reg.LastSeen = time.Now().Add(-10 * time.Minute).UTC()
	b, _ = json.Marshal(reg)
	if _, err := conn.Set(node, b, -1); err != nil {
		t.Fatal(err)
	}
	// A publish makes the view read the fleet again, registry included.
	e.publish("a=2\n")
	e.waitFleet("both agents at generation 2", allAt(2))

	before := time.Now().Add(-time.Second)
	var page struct {
		Agents []struct {
			ID       string    `json:"id"`
			LastSeen time.Time `json:"last_seen"`
		} `json:"agents"`
	}
	e.api("/api/root/agents?root="+root, &page)
	var agentPage struct {
		Row struct {
			LastSeen time.Time `json:"last_seen"`
		} `json:"row"`
	}
	e.api("/api/agent?root="+root+"&id=host-a", &agentPage)
	for _, a := range page.Agents {
		if a.ID == "host-a" && a.LastSeen.Before(before) {
			t.Errorf("/api/root/agents: live agent host-a last seen %v, before the request (%v): the registry refresh, not now", a.LastSeen, before)
		}
	}
	if agentPage.Row.LastSeen.Before(before) {
		t.Errorf("/api/agent: live agent host-a last seen %v, before the request (%v)", agentPage.Row.LastSeen, before)
	}
}

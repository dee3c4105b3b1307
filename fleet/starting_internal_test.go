package fleet

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// startingAgent returns a function that does what an agent does when it
// starts (agent/statusnode.go): its ephemeral status node first, then its
// registry node.
func startingAgent(t *testing.T, conn *zk.Conn, root, id string) func() {
	t.Helper()
	p := layout.New(root, layout.DefaultMeta)
	acl := zk.WorldACL(zk.PermAll)
	return func() {
		st, _ := json.Marshal(Status{AgentID: id, Root: root, State: "live", Ready: true, Targets: []TargetResult{}})
		if err := zkclient.EnsurePath(context.Background(), conn, p.Status(), acl); err != nil {
			t.Error(err)
			return
		}
		if _, err := conn.Create(p.StatusNode(id), st, zk.FlagEphemeral, acl); err != nil {
			t.Error(err)
			return
		}
		now := time.Now().UTC()
		reg, _ := json.Marshal(Registration{FirstSeen: now, LastSeen: now})
		if err := zkclient.EnsurePath(context.Background(), conn, p.Agents(), acl); err != nil {
			t.Error(err)
			return
		}
		if _, err := conn.Create(p.AgentNode(id), reg, 0, acl); err != nil {
			t.Error(err)
		}
	}
}

// TestStartingAgentNotGone starts an agent between a reader's listing of
// the registry and its listing of the status nodes, the one place where
// it could be seen registered without its status node: List and Wait
// must show it with its status node, never gone (make demo printed "1
// gone (web-2)" for an agent that was starting).
func TestStartingAgentNotGone(t *testing.T) {
	c := zktest.Start(t)
	conn := c.Connect(t, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("List", func(t *testing.T) {
		const root = "/starting/list"
		f, err := read(ctx, conn, layout.New(root, layout.DefaultMeta), startingAgent(t, conn, root, "web-2"))
		if err != nil {
			t.Fatal(err)
		}
		agents := f.Agents
		i := slices.IndexFunc(agents, func(a Agent) bool { return a.ID == "web-2" })
		if i < 0 {
			t.Fatalf("the agent registered and with a status node before the status listing is not listed: %+v", agents)
		}
		if a := agents[i]; a.Gone() || !a.Trusted() {
			t.Fatalf("an agent starting during the listing is listed gone: %+v", a)
		}
	})

	t.Run("NotStarted", func(t *testing.T) {
		const root = "/starting/policy"
		p := layout.New(root, layout.DefaultMeta)
		if err := zkclient.EnsurePath(context.Background(), conn, p.Agents(), zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		reg, _ := json.Marshal(Registration{FirstSeen: now, LastSeen: now})
		// web-c registered itself (it ran, then stopped); web-e's node has
		// no data, as confpush init may create it; web-9 is only named.
		for id, data := range map[string][]byte{"web-c": reg, "web-e": nil} {
			if _, err := conn.Create(p.AgentNode(id), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		w := newWaiter(conn, p, aclmodel.Trust{})
		w.g, w.opts = 1, WaitOptions{All: true}
		w.policy["web-9"], w.policy["web-e"] = true, true
		if err := w.observe(ctx); err != nil {
			t.Fatal(err)
		}
		pr := w.progress()
		if !slices.Equal(pr.Gone, []string{"web-9", "web-c", "web-e"}) || !slices.Equal(pr.NotStarted, []string{"web-9", "web-e"}) {
			t.Fatalf("gone %v, not started %v; want gone [web-9 web-c web-e], not started [web-9 web-e]", pr.Gone, pr.NotStarted)
		}
		msg := (&RolloutError{Progress: pr}).Error()
		if !strings.Contains(msg, "web-9 not started (named by the access policy, never reported)") ||
			!strings.Contains(msg, "web-c gone (no status node") {
			t.Fatalf("rollout error: %s", msg)
		}
	})

	t.Run("Wait", func(t *testing.T) {
		const root = "/starting/wait"
		w := newWaiter(conn, layout.New(root, layout.DefaultMeta), aclmodel.Trust{})
		w.g, w.opts = 1, WaitOptions{All: true}
		w.between = startingAgent(t, conn, root, "web-2")
		if err := w.observe(ctx); err != nil {
			t.Fatal(err)
		}
		pr := w.progress()
		if slices.Contains(pr.Gone, "web-2") {
			t.Fatalf("an agent starting during the wait's reads is reported gone: %+v", pr)
		}
		if !slices.Contains(pr.Pending, "web-2") {
			t.Fatalf("the starting agent (generation 0 of 1) is not pending: %+v", pr)
		}
	})
}

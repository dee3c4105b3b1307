package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestOpenModeUntrusted: without ACLs a node still counts only when it is
// ephemeral, parses, and names itself: a persistent node, one claiming
// another agent_id and one that is not JSON are listed untrusted with the
// reason and expected by nobody. On the old code the first two counted as
// applied.
func TestOpenModeUntrusted(t *testing.T) {
	c := zooKeeper.For(t)
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	g := fleettest.PublishConf(t, p, "v1")
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("persistent"), fleettest.ForgedStatus(t, root, "persistent", g), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("liar"), fleettest.ForgedStatus(t, root, "someone-else", g), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.StatusNode("garbage"), []byte("not json"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agents, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, reason := range map[string]string{"persistent": "not ephemeral", "liar": `its agent_id "someone-else" is not its name`,
		"garbage": "is not valid JSON"} {
		a, ok := fleettest.Find(agents, id)
		if !ok || a.Trusted() || a.Expected || !strings.Contains(a.Untrusted, reason) {
			t.Errorf("%s listed as %+v; want untrusted (%s), not expected", id, a, reason)
		}
	}
	_, err = fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if !errors.Is(err, fleet.ErrNoExpectedAgents) {
		t.Errorf("wait with untrusted nodes only = %v; want ErrNoExpectedAgents", err)
	}
}

// TestWaitNoExpectedAgents: a --all wait on a root no agent ever followed
// fails at once with ErrNoExpectedAgents, not at the deadline.
func TestWaitNoExpectedAgents(t *testing.T) {
	c := zooKeeper.For(t)
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	g := fleettest.PublishConf(t, p, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if !errors.Is(err, fleet.ErrNoExpectedAgents) || ctx.Err() != nil {
		t.Fatalf("wait = %v (deadline: %v); want ErrNoExpectedAgents at once", err, ctx.Err())
	}
}

// TestWaitComparesIncarnations: after a ZooKeeper wipe generation numbers
// start again, so an agent still holding the old incarnation's generation
// 7 has not applied the new incarnation's generation 1, and an agent that
// refuses the new incarnation fails the rollout at once (it cannot apply
// it until an operator adopts).
func TestWaitComparesIncarnations(t *testing.T) {
	c := zooKeeper.For(t)
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	g := fleettest.PublishConf(t, p, "v1")
	b, _, err := conn.Get(paths.Root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(b)
	if err != nil || m.Incarnation == "" {
		t.Fatalf("live manifest has no incarnation: %v", err)
	}
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	put := func(st fleet.Status) {
		t.Helper()
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(paths.StatusNode(st.AgentID), data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	old := manifest.NewIncarnation()
	put(fleet.Status{AgentID: "current", Root: paths.Root, Generation: g, CacheGeneration: g, Incarnation: m.Incarnation, State: "live"})
	put(fleet.Status{AgentID: "stuck", Root: paths.Root, Generation: 7, CacheGeneration: 7, Incarnation: old, State: "live"})

	// The stuck agent's generation 7 must not count for generation 1: with
	// Min 2 the wait can only end by its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{Min: 2})
	if err == nil || !slices.Equal(pr.Applied, []string{"current"}) || !slices.Equal(pr.Pending, []string{"stuck"}) {
		t.Fatalf("old incarnation's generation counted: applied %v, pending %v, err %v", pr.Applied, pr.Pending, err)
	}

	// A refusing agent makes an --all wait fail early, naming the cause.
	if err := conn.Delete(paths.StatusNode("stuck"), -1); err != nil {
		t.Fatal(err)
	}
	put(fleet.Status{AgentID: "stuck", Root: paths.Root, Generation: 7, CacheGeneration: 7, Incarnation: old,
		IncarnationRefused: m.Incarnation, Attempted: 7, State: "stale"})
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err = fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	var re *fleet.RolloutError
	if !errors.As(err, &re) || !slices.Equal(pr.Rejected, []string{"stuck"}) || !strings.Contains(err.Error(), "confagent adopt") {
		t.Fatalf("refusing agent: rejected %v, err %v", pr.Rejected, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the wait ran to its deadline instead of failing early: %v", err)
	}
}

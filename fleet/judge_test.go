package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestAgentState: the one judgement of an agent, first match wins: an
// expected agent without a trusted node is gone whatever squats its name;
// unreadable and untrusted nodes of agents nobody expects; failing before
// the cache state; behind; ok. Every state is in fleet.States.
func TestAgentState(t *testing.T) {
	live := fleet.Status{AgentID: "a", Generation: 5, State: "live"}
	with := func(f func(*fleet.Status)) fleet.Status { s := live; f(&s); return s }
	cases := []struct {
		name string
		a    fleet.Agent
		want string
	}{
		{"registered, no node", fleet.Agent{ID: "a", Expected: true}, fleet.StateGone},
		{"registered, forged node", fleet.Agent{ID: "a", Expected: true, HasNode: true, Status: live, Untrusted: "bad ACL"}, fleet.StateGone},
		{"unreadable", fleet.Agent{ID: "a", HasNode: true, Err: errors.New("bad JSON"), Untrusted: "bad JSON"}, fleet.StateUnreadable},
		{"untrusted", fleet.Agent{ID: "a", HasNode: true, Status: live, Untrusted: "bad ACL"}, fleet.StateUntrusted},
		{"failing and stale", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: with(func(s *fleet.Status) {
			s.State, s.LastError = "stale", "render: bad"
		})}, fleet.StateFailing},
		{"stale", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: with(func(s *fleet.Status) { s.State = "stale" })}, fleet.StateStale},
		{"starting", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: fleet.Status{AgentID: "a", State: "starting"}}, fleet.StateStarting},
		{"expired and behind", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: with(func(s *fleet.Status) {
			s.State, s.Generation = "expired", 4
		})}, fleet.StateExpired},
		{"behind", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: with(func(s *fleet.Status) { s.Generation = 4 })}, fleet.StateBehind},
		{"ok", fleet.Agent{ID: "a", HasNode: true, Expected: true, Status: live}, fleet.StateOK},
	}
	for _, c := range cases {
		if got := c.a.State(5); got != c.want || !slices.Contains(fleet.States, got) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestForget: Forget deletes the registry nodes of the agents named, all
// or none: an unknown agent among them is an *UnknownAgentsError and the
// known ones stay registered; it says which forgotten agents still run.
func TestForget(t *testing.T) {
	c := zooKeeper.For(t)
	conn := c.Connect(t, 10*time.Second)
	f := fleettest.Fleet(t, conn, root, paths.Meta)
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Agents(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"web-1", "web-2"} {
		b, _ := json.Marshal(fleet.Registration{LastSeen: time.Now()})
		if _, err := conn.Create(paths.AgentNode(id), b, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zkclient.EnsurePath(context.Background(), conn, paths.Status(), zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(fleet.Status{AgentID: "web-2", Root: root, State: "live"})
	if _, err := conn.Create(paths.StatusNode("web-2"), b, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := f.Forget(ctx, []string{"web-1", "nobody"})
	var unknown *fleet.UnknownAgentsError
	if !errors.As(err, &unknown) || !slices.Equal(unknown.IDs, []string{"nobody"}) {
		t.Fatalf("forget with an unknown agent: %v", err)
	}
	if ok, _, _ := conn.Exists(paths.AgentNode("web-1")); !ok {
		t.Fatal("a refused forget deleted web-1's registry node")
	}
	done, err := f.Forget(ctx, []string{"web-2", "web-1", "web-2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Forgotten{{ID: "web-1"}, {ID: "web-2", Running: true}}
	if !slices.Equal(done, want) {
		t.Errorf("forgotten %+v, want %+v", done, want)
	}
	for _, id := range []string{"web-1", "web-2"} {
		if ok, _, _ := conn.Exists(paths.AgentNode(id)); ok {
			t.Errorf("%s still registered", id)
		}
	}
}

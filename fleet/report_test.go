package fleet_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestReport: a report of a root that was never published judges every
// agent against generation 0 and fails a health check for the failing,
// the gone and the incarnation-refusing agents, never a healthy one.
func TestReport(t *testing.T) {
	c := zooKeeper.For(t)
	conn := c.Connect(t, 10*time.Second)
	ctx := context.Background()
	f := fleettest.Fleet(t, conn, root, paths.Meta)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{root, paths.Agents(), paths.Status()} {
		if err := zkclient.EnsurePath(ctx, conn, p, acl); err != nil {
			t.Fatal(err)
		}
	}
	for id, st := range map[string]fleet.Status{
		"web-1": {State: "live"},
		"web-2": {State: "live", LastError: "render: bad template"},
		"web-4": {State: "live", IncarnationRefused: "inc-2", Incarnation: "inc-1"},
	} {
		st.AgentID, st.Root = id, root
		b, _ := json.Marshal(st)
		if _, err := conn.Create(paths.StatusNode(id), b, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"web-1", "web-3"} {
		b, _ := json.Marshal(fleet.Registration{LastSeen: time.Now()})
		if _, err := conn.Create(paths.AgentNode(id), b, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	r, err := f.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Live.Generation != 0 || len(r.Agents) != 4 || r.Summary.Total != 4 || r.Summary.Gone != 1 || r.Summary.Failing != 1 {
		t.Fatalf("report: live %d, %d agents, summary %+v", r.Live.Generation, len(r.Agents), r.Summary)
	}
	if !slices.Equal(r.Failing, []string{"web-2", "web-3", "web-4"}) {
		t.Fatalf("failing %v, want [web-2 web-3 web-4]", r.Failing)
	}
	if len(r.IncarnationProblems) != 1 || r.IncarnationProblems[0].ID != "web-4" {
		t.Fatalf("incarnation problems %+v", r.IncarnationProblems)
	}
}

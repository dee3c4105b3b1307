package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
)

// TestCLIRollout: publish --canary refuses a selection that selects no
// expected agent (unless --allow-empty-canary) and bad selectors (all
// problems at once, nothing written); starts a candidate the root
// announces; a plain publish and put are refused (exit 4) unless
// --supersede; rollout status classifies the agents; widen only widens;
// promote publishes C+1; history shows the events; abort ends a second
// rollout.
func TestCLIRollout(t *testing.T) {
	c, nodes := fleetFixture(t, "/rollout/app", 1)
	conn := nodes.conn
	nodes.put(fleet.Status{AgentID: "web-a", Generation: 1, Ready: true, Labels: map[string]string{"zone": "a", "hostname": "web-a"}})
	nodes.put(fleet.Status{AgentID: "web-b", Generation: 1, Ready: true, Labels: map[string]string{"zone": "b", "hostname": "web-b"}})
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "candidate"})
	before := snapshot(t, conn, "/rollout", "/zkconf")

	c.run("publish", "--canary", "zone in (a", "--canary-percent", "200", dir).want(t, 2, "canary", "percent 200")
	c.run("publish", "--canary", "zone=c", dir).want(t, 2, "selects none of the 2 expected agents", "--allow-empty-canary")
	c.run("publish", "--canary", "zone=a", "--wait", dir).want(t, 2, "--wait does not apply")
	if after := snapshot(t, conn, "/rollout", "/zkconf"); after != before {
		t.Fatalf("a refused canary wrote:\nbefore %s\nafter %s", before, after)
	}

	// The smallest percent that selects web-a.
	pct := strconv.FormatFloat(float64(manifest.Bucket("web-a")+1)/100, 'f', 2, 64)
	c.run("publish", "--canary", "zone=a", "--canary-percent", pct, "-m", "try it", dir).want(t, 0, "started a canary rollout on /rollout/app: candidate generation 2 for selection \"zone=a\" and")
	root := rootOf(t, conn, c.root)
	if root.Generation != 1 || root.Canary == nil || root.Canary.Generation != 2 || root.Canary.Selector != "zone=a" {
		t.Fatalf("root after --canary: %+v", root)
	}
	id := root.Canary.RolloutID

	other := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "other"})
	c.run("publish", other).want(t, 4, "rollout "+id, "candidate generation 2 over stable 1", "--supersede")
	code, obj := c.json("publish", other)
	if code != 4 || obj["kind"] != "rollout_in_progress" {
		t.Fatalf("--json refusal: %d %v", code, obj)
	}
	c.run("put", "b.conf", filepath.Join(other, "a.conf")).want(t, 4, "rollout is in progress")

	nodes.put(fleet.Status{AgentID: "web-a", Generation: 2, Ready: true, Labels: map[string]string{"zone": "a", "hostname": "web-a"}})
	out := c.run("rollout", "status")
	out.want(t, 0, "rollout "+id, "candidate generation 2 over stable 1", `"zone=a"`, "1 applied", "1 stable", "zone=a")
	if r := row(t, out.stdout, "web-a"); r[1] != "true" || r[3] != "applied" {
		t.Fatalf("web-a row %v", r)
	}
	if r := row(t, out.stdout, "web-b"); r[1] != "false" || r[3] != "stable" {
		t.Fatalf("web-b row %v", r)
	}
	st := c.run("status")
	st.want(t, 0, "rollout "+id+": candidate generation 2 over stable 1", "LABELS")
	if r := row(t, st.stdout, "web-b"); !slices.Contains(r, "hostname=web-b,zone=b") {
		t.Fatalf("status shows no labels for web-b: %v", r)
	}
	code, obj = c.json("rollout", "status")
	if code != 0 || obj["rollout_id"] != id || num(obj["candidate_generation"]) != 2 || obj["driver_alive"] != false {
		t.Fatalf("rollout status --json: %d %v", code, obj)
	}

	c.run("rollout", "widen").want(t, 2, "--canary-percent")
	c.run("rollout", "widen", "--canary-percent", "100").want(t, 0, "widened rollout "+id)
	c.run("rollout", "widen", "--canary-percent", pct).want(t, 2, "only widens")
	if r := rootOf(t, conn, c.root); r.Canary.Percent != 0 || r.Canary.Selector != "zone=a" {
		t.Fatalf("after widen: %+v", r.Canary)
	}

	c.run("rollout", "promote", "--rollout", "0000000000000000").want(t, 3, "not 0000000000000000")
	c.run("rollout", "promote", "-m", "good").want(t, 0, "published generation 3")
	if r := rootOf(t, conn, c.root); r.Canary != nil || r.PromoteOf != 2 {
		t.Fatalf("after promote: %+v", r)
	}
	c.run("get", "a.conf").want(t, 0, "candidate")
	c.run("rollout", "promote").want(t, 3, "no canary rollout in progress")
	c.run("rollout", "status").want(t, 0, "no canary rollout in progress")
	c.run("history").want(t, 0, "promote of 2", `candidate for "zone=a"`, "try it", "good")
	_, hist := c.json("history")
	gens, _ := hist["generations"].([]any)
	if len(gens) != 3 || num(gens[0].(map[string]any)["promote_of"]) != 2 || gens[1].(map[string]any)["candidate"] == nil {
		t.Fatalf("history --json: %v", hist)
	}

	// A second rollout by explicit agents, aborted.
	c.run("publish", "--canary-agents", "web-b", other).want(t, 0, "candidate generation 4 for selection \"agent in (web-b)\"")
	if r := rootOf(t, conn, c.root); r.Canary == nil || r.Canary.Selector != "agent in (web-b)" {
		t.Fatalf("--canary-agents: %+v", r.Canary)
	}
	c.run("rollout", "abort", "-m", "bad").want(t, 0, "published generation 5")
	c.run("get", "a.conf").want(t, 0, "candidate")
	c.run("history").want(t, 0, "abort of 4")

	// --supersede: a third rollout ended by a plain publish.
	c.run("publish", "--canary", "zone=b", other).want(t, 0, "candidate generation 6 for selection \"zone=b\"")
	c.run("publish", "--supersede", other).want(t, 0, "published generation 7")
	if r := rootOf(t, conn, c.root); r.Canary != nil {
		t.Fatalf("after --supersede: %+v", r.Canary)
	}
	c.run("get", "a.conf").want(t, 0, "other")
	if strings.Contains(c.run("rollout", "status").stdout, "rollout ") && !strings.Contains(c.run("rollout", "status").stdout, "no canary") {
		t.Fatal("rollout still shown after --supersede")
	}
}

func rootOf(t *testing.T, conn *zk.Conn, root string) *manifest.Manifest {
	t.Helper()
	b, _, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

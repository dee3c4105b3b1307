package main

import (
	"testing"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
)

// TestStatusReportsIncarnationProblems: confpush status names the agents
// that refuse the root's new incarnation (incarnation: refuse) or hold
// another one, and fails with --fail-on-error like any other failing agent;
// agents that follow it are fine.
func TestStatusReportsIncarnationProblems(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/inc/app"}
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "1"})).want(t, 0)
	data, _, err := conn.Get("/inc/app")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	live, old := m.Incarnation, manifest.NewIncarnation()
	put := statusNodes{t: t, conn: conn, paths: layout.New("/inc/app", layout.DefaultMeta)}.put
	put(fleet.Status{AgentID: "good", Root: "/inc/app", Generation: 1, CacheGeneration: 1, State: "live", Incarnation: live, Ready: true})
	c.run("status").want(t, 0, "incarnation "+live)

	put(fleet.Status{AgentID: "refusing", Root: "/inc/app", Generation: 3, CacheGeneration: 3, State: "stale",
		Incarnation: old, IncarnationRefused: live})
	put(fleet.Status{AgentID: "elsewhere", Root: "/inc/app", Generation: 7, CacheGeneration: 7, State: "live", Incarnation: old})
	lines := []string{"INCARNATION: agent refusing refuses the new incarnation " + live,
		"INCARNATION: agent elsewhere holds incarnation " + old}
	c.run("status").want(t, 0, lines...)
	c.run("status", "--fail-on-error").want(t, 8, append(lines, "do not follow the root's incarnation: ")...)
	code, obj := c.json("status", "--fail-on-error")
	st, _ := obj["status"].(map[string]any)
	if code != 8 || obj["kind"] != "agents_failing" || st == nil || len(strs(st["incarnation_problems"])) != 2 || st["incarnation"] != live {
		t.Fatalf("--json: exit %d, %v", code, obj)
	}
}

package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// startCanary starts a canary rollout of items by hand, as docs/design.md
// ("Canary rollouts") lays it out, on the root the publisher published:
// one Multi sets the root's data to the stable manifest plus the canary
// and creates the candidate node and the contents no stable item has.
func startCanary(t *testing.T, conn *zk.Conn, sel manifest.Selection, items map[string]string) int64 {
	t.Helper()
	p := layout.New(root, layout.DefaultMeta)
	data, stat, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	stable, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	if err := zkclient.EnsurePath(context.Background(), conn, p.Base(), acl); err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	cm := &manifest.Manifest{Format: manifest.FormatVersion, Generation: stable.Generation + 1, PublishID: hex.EncodeToString(id),
		PublishedAt: time.Now().UTC(), Publisher: "test@host", Mode: manifest.ModeMulti, Incarnation: stable.Incarnation,
		Items: map[string]manifest.Item{}, Candidate: &sel}
	have := map[string]bool{}
	for _, it := range stable.Items {
		have[it.SHA256] = true
	}
	var contents []any
	for name, v := range items {
		it := manifest.ItemOf([]byte(v))
		cm.Items[name] = it
		if !have[it.SHA256] {
			have[it.SHA256] = true
			contents = append(contents, &zk.CreateRequest{Path: p.CandidateContent(it.SHA256), Data: []byte(v), Acl: acl})
		}
	}
	cdata := cm.Encode()
	stable.Canary = &manifest.Canary{Generation: cm.Generation, ManifestSHA256: manifest.Hash(cdata), Selection: sel,
		RolloutID: hex.EncodeToString(id), StartedAt: time.Now().UTC(), Publisher: "test@host"}
	ops := append([]any{&zk.SetDataRequest{Path: root, Data: stable.Encode(), Version: stat.Version},
		&zk.CreateRequest{Path: p.Candidate(), Data: cdata, Acl: acl}}, contents...)
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	return cm.Generation
}

// waitStatusNode polls id's status node until ok holds.
func waitStatusNode(t *testing.T, conn *zk.Conn, id string, ok func(fleet.Status) bool) fleet.Status {
	t.Helper()
	path := layout.New(root, layout.DefaultMeta).StatusNode(id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var s fleet.Status
		b, _, err := conn.Get(path)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("status node of %s never as expected: %+v", id, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCanaryAgents runs two agents, zone=a and zone=b, through a rollout
// selecting zone=a: the first renders the candidate and reports it
// (status node and /status), the second reads the root and stays on the
// stable content.
func TestCanaryAgents(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	res := mustPublish(t, p, map[string]string{"app.conf": "stable"})
	conn := c.Connect(t, 4*time.Second)
	start := func(id, zone string) (*running, string) {
		dest := t.TempDir()
		r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{dirSpec(dest)}, func(o *agent.Options) {
			o.AgentID, o.Labels = id, map[string]string{"zone": zone}
		})
		return r, dest
	}
	a, destA := start("agent-a", "a")
	b, destB := start("agent-b", "b")
	a.waitGeneration(t, res.Generation)
	b.waitGeneration(t, res.Generation)
	before := b.d.Cache().Stats().RootReads

	cg := startCanary(t, conn, manifest.Selection{Selector: "zone=a"}, map[string]string{"app.conf": "canary"})
	st := a.waitGeneration(t, cg)
	if !st.Candidate || readFile(t, join(destA, "app.conf")) != "canary" {
		t.Errorf("agent-a: status %+v, file %q: want the candidate rendered and reported", st, readFile(t, join(destA, "app.conf")))
	}
	waitStatusNode(t, conn, "agent-a", func(s fleet.Status) bool { return s.Generation == cg && s.Candidate })

	// Nothing changes for agent-b, so no status event says it read the
	// root: poll its cache.
	for deadline := time.Now().Add(30 * time.Second); b.d.Cache().Stats().RootReads <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agent-b never read the rollout's root")
		}
	}
	if s := b.d.Status(); s.Generation != res.Generation || s.Candidate || readFile(t, join(destB, "app.conf")) != "stable" {
		t.Errorf("agent-b: status %+v: want the stable generation %d rendered", s, res.Generation)
	}
	waitStatusNode(t, conn, "agent-b", func(s fleet.Status) bool { return s.Generation == res.Generation && !s.Candidate })
}

// TestAgentLabelRefused: "agent" is the agent id in selectors, never a
// configured label.
func TestAgentLabelRefused(t *testing.T) {
	_, err := agent.NewDaemon(context.Background(), agent.Options{Root: root, AgentID: "x", NoPersist: true,
		ZK:     zkclient.Config{Servers: []string{"127.0.0.1:1"}, SessionTimeout: 4 * time.Second},
		Labels: map[string]string{"agent": "y"}})
	if err == nil || !strings.Contains(err.Error(), `label "agent"`) {
		t.Fatalf("NewDaemon with an agent label: %v", err)
	}
}

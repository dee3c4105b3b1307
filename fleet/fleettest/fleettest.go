// Package fleettest is what zkconf's tests of the status protocol share: a
// real agent run in-process, a publisher on a test ensemble, the Fleet of a
// root, forged status documents. The tests of fleet, agent and confpush
// (its access policy, status, dashboard, failure reporting) use it.
//
// It is test support, as net/http/httptest is, kept beside the package it
// serves because it runs agents and publishers, which no package under
// internal/ may import (internal/ holds leaves). It is not part of zkconf's
// compatibility promise: its names change with zkconf's tests.
package fleettest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// Fleet is the Fleet of root (metadata under meta) read through conn.
func Fleet(t testing.TB, conn *zk.Conn, root, meta string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(zkclient.Fixed(conn, nil), root, fleet.WithMeta(meta))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// RunAgent runs a real agent of root with id, one file target (item
// app.conf) and a state dir in a temporary directory; adjust sets the rest
// (at least the ZooKeeper config). The agent stops with the test.
func RunAgent(t *testing.T, root, id string, adjust func(*agent.Options)) *agent.Daemon {
	t.Helper()
	d, _ := StartAgent(t, root, id, adjust)
	return d
}

// StartAgent is RunAgent for a test that stops the agent itself: stop
// cancels its run, waits for it to return and closes it; it is idempotent
// and also runs at the end of the test.
func StartAgent(t *testing.T, root, id string, adjust func(*agent.Options)) (d *agent.Daemon, stop func()) {
	t.Helper()
	dir := t.TempDir()
	opts := agent.Options{
		Root: root, AgentID: id, StateDir: filepath.Join(dir, "state"),
		Targets: []agent.TargetSpec{{Name: "conf", Kind: agent.KindFile, Item: "app.conf",
			Dest: filepath.Join(dir, "app.conf"), Mode: 0o640, UID: -1, GID: -1}},
	}
	adjust(&opts)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := agent.NewDaemon(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done; _ = d.Close() }) }
	t.Cleanup(stop)
	return d, stop
}

// NewPublisher dials servers without credentials and returns a Publisher
// of root on that connection, both closed with the test.
func NewPublisher(t testing.TB, servers []string, root string) (*publish.Publisher, *zk.Conn) {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: servers, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p, err := publish.New(zkclient.Fixed(conn, sess), root)
	if err != nil {
		t.Fatal(err)
	}
	return p, conn
}

// PublishConf publishes content as the set's one item, app.conf, and
// returns the generation.
func PublishConf(t *testing.T, p *publish.Publisher, content string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte(content)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Generation
}

// ForgedStatus is a status document of root claiming that agent id runs
// generation g, live and ready.
func ForgedStatus(t *testing.T, root, id string, g int64) []byte {
	t.Helper()
	b, err := json.Marshal(fleet.Status{AgentID: id, Root: root, Generation: g, Attempted: g, State: "live", Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Find returns the agent of agents with id, and whether there is one.
func Find(agents []fleet.Agent, id string) (fleet.Agent, bool) {
	i := slices.IndexFunc(agents, func(a fleet.Agent) bool { return a.ID == id })
	if i < 0 {
		return fleet.Agent{}, false
	}
	return agents[i], true
}

// Eventually polls cond until it holds or 60 s pass: for an agent's state
// (its Status, what it logged), which it offers no event for.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

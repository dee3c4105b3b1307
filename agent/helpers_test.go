package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

// testLog sends slog output to t.Log, so failures show the agent's story.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// publisher returns a publisher on its own session.
func publisher(t testing.TB, c *zktest.Cluster) *publish.Publisher {
	t.Helper()
	p, _ := fleettest.NewPublisher(t, c.Addrs(), root)
	return p
}

func mustPublish(t testing.TB, p *publish.Publisher, items map[string]string) *publish.Result {
	t.Helper()
	req := publish.Request{Items: map[string][]byte{}, AllowEmpty: len(items) == 0}
	for k, v := range items {
		req.Items[k] = []byte(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Publish(ctx, req)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

// running is a daemon under test with a stream of its statuses.
type running struct {
	d        *agent.Daemon
	statuses chan agent.Status
	cancel   context.CancelFunc
	done     chan error
}

// startDaemon starts a daemon on the cluster and stops it in t.Cleanup.
func startDaemon(t testing.TB, addrs []string, stateDir string, specs []agent.TargetSpec, mutate ...func(*agent.Options)) *running {
	t.Helper()
	r := &running{statuses: make(chan agent.Status, 10000), done: make(chan error, 1)}
	opts := agent.Options{
		// The test servers' longest session (4s): a loaded machine must not
		// expire it by stalling the daemon.
		Root: root, ZK: zkclient.Config{Servers: addrs, SessionTimeout: 4 * time.Second},
		AgentID: "test-agent", StateDir: stateDir, Targets: specs, Logger: testLog(t),
		OnStatus: func(s agent.Status) {
			select {
			case r.statuses <- s:
			default:
			}
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := agent.NewDaemon(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r.d, r.cancel = d, cancel
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.d.Close()
	r.cancel = nil
}

// waitFor consumes statuses until ok holds (checking the current status
// first), failing after a generous bound.
func (r *running) waitFor(t testing.TB, what string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	if s := r.d.Status(); ok(s) {
		return s
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-r.statuses:
			if s := r.d.Status(); ok(s) {
				return s
			}
		case <-timeout:
			t.Fatalf("agent never %s; status %+v", what, r.d.Status())
		}
	}
}

func (r *running) waitGeneration(t testing.TB, g int64) agent.Status {
	t.Helper()
	return r.waitFor(t, fmt.Sprintf("applied generation %d", g), func(s agent.Status) bool { return s.Generation >= g })
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func mode(t testing.TB, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// zkGet reads a znode with a fresh session.
func zkGet(t testing.TB, c *zktest.Cluster, p string) ([]byte, *zk.Stat) {
	t.Helper()
	conn := c.Connect(t, 4*time.Second)
	b, st, err := conn.Get(p)
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	return b, st
}

func dirSpec(dest string) agent.TargetSpec {
	return agent.TargetSpec{Name: "dir", Kind: agent.KindDir, Dest: dest, Mode: 0o640, UID: -1, GID: -1}
}

func join(dir, name string) string { return filepath.Join(dir, name) }

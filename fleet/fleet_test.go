package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

var paths = layout.New(root, layout.DefaultMeta)

// fleetOf is the Fleet of root (metadata under meta) read through conn.
func fleetOf(t testing.TB, conn *zk.Conn, root, meta string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(zkclient.Fixed(conn, nil), root, fleet.WithMeta(meta))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func startAgent(t *testing.T, servers []string, id, check string) *agent.Daemon {
	t.Helper()
	return runAgent(t, id, func(o *agent.Options) {
		// The test servers' longest session: a loaded machine must not
		// expire it by stalling the agent; the expiry test blackholes it.
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: 4 * time.Second}
		o.Targets[0].Check = check
	})
}

// runAgent runs a real agent with id, one file target (item app.conf) and
// a state dir in a temporary directory; adjust sets the rest (at least the
// ZooKeeper config). The agent stops with the test.
func runAgent(t *testing.T, id string, adjust func(*agent.Options)) *agent.Daemon {
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
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; d.Close() })
	return d
}

func publishConf(t *testing.T, p *publish.Publisher, content string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte(content)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Generation
}

func newPublisher(t *testing.T, c *zktest.Cluster) (*publish.Publisher, *zk.Conn) {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
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

// TestWaitAllAndFailingCheck: with three agents a --wait --all rollout
// returns once all three applied; when one agent's check fails, the wait
// fails naming that agent and its error.
func TestWaitAllAndFailingCheck(t *testing.T) {
	c := zktest.Start(t)
	p, conn := newPublisher(t, c)
	publishConf(t, p, "v1")
	startAgent(t, c.Addrs(), "host-a", "")
	startAgent(t, c.Addrs(), "host-b", "")
	// host-c refuses any content containing "v3".
	startAgent(t, c.Addrs(), "host-c", "! grep -q v3 {{.src}}")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// All three must be registered and at 1 before the scenario starts.
	if _, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, 1, fleet.WaitOptions{Min: 3}); err != nil {
		t.Fatal(err)
	}

	g := publishConf(t, p, "v2")
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil {
		t.Fatalf("wait --all: %v", err)
	}
	if len(pr.Applied) != 3 {
		t.Fatalf("applied = %v", pr.Applied)
	}
	agents, err := fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil || len(agents) != 3 {
		t.Fatalf("list = %v, %v", agents, err)
	}
	if s := fleet.Summarize(agents, g); s.AtLatest != 3 || s.Failing != 0 {
		t.Fatalf("summary %v", s)
	}

	g = publishConf(t, p, "v3")
	pr, err = fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	var re *fleet.RolloutError
	if !errors.As(err, &re) {
		t.Fatalf("wait with a failing check = %v", err)
	}
	if fmt.Sprint(pr.Rejected) != "[host-c]" || len(pr.Applied) != 2 {
		t.Fatalf("progress %+v", pr)
	}
	if !strings.Contains(err.Error(), "host-c failed") || !strings.Contains(err.Error(), "check") {
		t.Fatalf("error does not name the agent and its error: %v", err)
	}
	agents, _ = fleetOf(t, conn, paths.Root, paths.Meta).List(ctx)
	if s := fleet.Summarize(agents, g); s.AtLatest != 2 || s.Behind != 1 || s.Failing != 1 {
		t.Fatalf("summary %v", s)
	}
}

// TestStatusNodeRecreatedAfterExpiry: an agent whose session expires
// (blackholed past the session timeout) re-creates its status node on the
// new session, prompted by the session event: the waits are bounded by a
// generous deadline, far below the 10-minute safety-net resync
// (cache.DefaultResyncInterval) that could otherwise re-create the node,
// and nothing is asserted about how long it took.
func TestStatusNodeRecreatedAfterExpiry(t *testing.T) {
	c := zktest.Start(t)
	p, conn := newPublisher(t, c)
	publishConf(t, p, "v1")
	proxy := faultproxy.Start(t, c.Addrs()[0])
	startAgent(t, []string{proxy.Addr()}, "host-x", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, 1, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	_, stat, err := conn.Get(paths.StatusNode("host-x"))
	if err != nil {
		t.Fatal(err)
	}
	owner := stat.EphemeralOwner

	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy.Blackhole(true)
	// The server deletes the ephemeral node when the session expires.
	for {
		ok, _, ev, err := conn.ExistsW(paths.StatusNode("host-x"))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatal("status node never went away while blackholed")
		}
	}
	proxy.Blackhole(false)
	start := time.Now()
	for {
		ok, st, ev, err := conn.ExistsW(paths.StatusNode("host-x"))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if st.EphemeralOwner == owner {
				t.Fatal("status node re-created by the expired session")
			}
			break
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatal("status node not re-created after the session expired")
		}
	}
	t.Logf("status node re-created %v after the partition ended", time.Since(start).Round(time.Millisecond))
}

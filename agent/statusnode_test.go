package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestFastRestartWaitsForOldSession: an agent restarted while its previous
// session is still alive (here: the old process cut off by a blackholed
// proxy, its session not yet expired) does not write into the old
// session's node; once that session expires, it creates its own. On the
// old code the new process overwrote the old session's node at once.
func TestFastRestartWaitsForOldSession(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	// The old session lives long enough (15 s) for the new process to
	// find its node on a loaded machine.
	c := zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second})
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	fleettest.PublishConf(t, p, "v1")
	statusNode := layout.New(root, layout.DefaultMeta).StatusNode("host-r")
	proxy := faultproxy.Start(t, c.Addrs()[0])
	startVersioned(t, []string{proxy.Addr()}, "host-r", "old", 15*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleettest.Fleet(t, conn, root, layout.DefaultMeta).Wait(ctx, 1, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	_, old, err := conn.Get(statusNode)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole(true)
	t.Cleanup(func() { proxy.Blackhole(false) })
	d := startVersioned(t, c.Addrs(), "host-r", "new", 4*time.Second)
	fleettest.Eventually(t, "the new process to report the old session's node", func() bool {
		return d.Status().StatusNodeConflict != ""
	})
	if !stillOwnedBy(conn, old.EphemeralOwner) {
		t.Fatal("the old session's node went before the conflict could be checked")
	}
	if b, _, err := conn.Get(statusNode); err != nil || strings.Contains(string(b), `"version":"new"`) {
		t.Fatalf("the new process wrote into the old session's node: %s %v", b, err)
	}
	fleettest.Eventually(t, "the new process's own node", func() bool {
		b, st, err := conn.Get(statusNode)
		return err == nil && st.EphemeralOwner != old.EphemeralOwner && strings.Contains(string(b), `"version":"new"`)
	})
	fleettest.Eventually(t, "the conflict to clear", func() bool { return d.Status().StatusNodeConflict == "" })
}

func stillOwnedBy(conn *zk.Conn, owner int64) bool {
	ok, st, err := conn.Exists(layout.New(root, layout.DefaultMeta).StatusNode("host-r"))
	return err == nil && ok && st.EphemeralOwner == owner
}

func startVersioned(t *testing.T, servers []string, id, version string, timeout time.Duration) *agent.Daemon {
	t.Helper()
	return fleettest.RunAgent(t, root, id, func(o *agent.Options) {
		o.Version = version
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: timeout}
	})
}

// TestStatusNodeRecreatedAfterExpiry: an agent whose session expires
// (blackholed past the session timeout) re-creates its status node on the
// new session, prompted by the session event: the waits are bounded by a
// generous deadline, far below the 10-minute safety-net resync
// (cache.DefaultResyncInterval) that could otherwise re-create the node,
// and nothing is asserted about how long it took.
func TestStatusNodeRecreatedAfterExpiry(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	c := zktest.Start(t)
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	fleettest.PublishConf(t, p, "v1")
	statusNode := layout.New(root, layout.DefaultMeta).StatusNode("host-x")
	proxy := faultproxy.Start(t, c.Addrs()[0])
	fleettest.RunAgent(t, root, "host-x", func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: []string{proxy.Addr()}, SessionTimeout: 4 * time.Second}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fleettest.Fleet(t, conn, root, layout.DefaultMeta).Wait(ctx, 1, fleet.WaitOptions{Min: 1}); err != nil {
		t.Fatal(err)
	}
	_, stat, err := conn.Get(statusNode)
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
		ok, _, ev, err := conn.ExistsW(statusNode)
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
		ok, st, ev, err := conn.ExistsW(statusNode)
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

package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

var paths = layout.New(root, layout.DefaultMeta)

func startAgent(t *testing.T, servers []string, id, check string) *agent.Daemon {
	t.Helper()
	return fleettest.RunAgent(t, root, id, func(o *agent.Options) {
		// The test servers' longest session: a loaded machine must not
		// expire it by stalling the agent; the expiry test blackholes it.
		o.ZK = zkclient.Config{Servers: servers, SessionTimeout: 4 * time.Second}
		o.Targets[0].Check = check
	})
}

// TestWaitAllAndFailingCheck: with three agents a --wait --all rollout
// returns once all three applied; when one agent's check fails, the wait
// fails naming that agent and its error.
func TestWaitAllAndFailingCheck(t *testing.T) {
	c := zooKeeper.For(t)
	p, conn := fleettest.NewPublisher(t, c.Addrs(), root)
	fleettest.PublishConf(t, p, "v1")
	startAgent(t, c.Addrs(), "host-a", "")
	startAgent(t, c.Addrs(), "host-b", "")
	// host-c refuses any content containing "v3".
	startAgent(t, c.Addrs(), "host-c", "! grep -q v3 {{.src}}")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// All three must be registered and at 1 before the scenario starts.
	if _, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, 1, fleet.WaitOptions{Min: 3}); err != nil {
		t.Fatal(err)
	}

	g := fleettest.PublishConf(t, p, "v2")
	pr, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil {
		t.Fatalf("wait --all: %v", err)
	}
	if len(pr.Applied) != 3 {
		t.Fatalf("applied = %v", pr.Applied)
	}
	agents, err := fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
	if err != nil || len(agents) != 3 {
		t.Fatalf("list = %v, %v", agents, err)
	}
	if s := fleet.Summarize(agents, g); s.AtLatest != 3 || s.Failing != 0 {
		t.Fatalf("summary %v", s)
	}

	g = fleettest.PublishConf(t, p, "v3")
	pr, err = fleettest.Fleet(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
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
	agents, _ = fleettest.Fleet(t, conn, paths.Root, paths.Meta).List(ctx)
	if s := fleet.Summarize(agents, g); s.AtLatest != 2 || s.Behind != 1 || s.Failing != 1 {
		t.Fatalf("summary %v", s)
	}
}

package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// zooKeeper is the throw-away server the examples run against (an
// application passes the addresses of its own ensemble instead), and the
// tests that need only "a ZooKeeper" (zktest.Shared.For, emptied for
// each); the tests that reach a server through a fault proxy start their
// own.
var zooKeeper zktest.Shared

// TestMain stops the examples' server after the run.
func TestMain(m *testing.M) { zooKeeper.Main(m) }

// exampleAgent runs a real agent (what confagent runs on every host) that
// renders item app.conf to a file and refuses, with its check command, any
// content containing "broken". The returned function stops it.
func exampleAgent(cfg zkclient.Config, root, id string) (stop func()) {
	dir, err := os.MkdirTemp("", "fleet-example")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: root, AgentID: id, ZK: cfg, StateDir: filepath.Join(dir, "state"),
		Logger: slog.New(slog.DiscardHandler),
		Targets: []agent.TargetSpec{{Name: "conf", Kind: agent.KindFile, Item: "app.conf",
			Dest: filepath.Join(dir, "app.conf"), Mode: 0o640, UID: -1, GID: -1,
			Check: "! grep -q broken {{.src}}"}},
	})
	if err != nil {
		cancel()
		panic(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	return func() { cancel(); <-done; d.Close(); os.RemoveAll(dir) }
}

// A publisher waits for a rollout: until every expected agent reports the
// new generation on its status node, or until success is impossible.
func ExampleFleet_Wait() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const root = "/config/web"
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}
	cl, err := zkclient.Dial(cfg)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cl.Close()
	p, err := publish.New(cl, root)
	if err != nil {
		fmt.Println("publisher:", err)
		return
	}
	f, err := fleet.New(cl, root)
	if err != nil {
		fmt.Println("fleet:", err)
		return
	}
	publishConf := func(content string) int64 {
		res, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte(content)}})
		if err != nil {
			panic(err)
		}
		return res.Generation
	}
	// report branches on the errors Wait documents.
	report := func(pr fleet.Progress, err error) {
		var rollout *fleet.RolloutError
		switch {
		case err == nil:
			fmt.Printf("generation %d applied by %v\n", pr.Generation, pr.Applied)
		case errors.Is(err, fleet.ErrNoExpectedAgents):
			fmt.Printf("generation %d: no agent follows the root yet\n", pr.Generation)
		case errors.As(err, &rollout):
			p := rollout.Progress
			fmt.Printf("generation %d failed: applied by %v, rejected by %v, pending %v, gone %v\n",
				p.Generation, p.Applied, p.Rejected, p.Pending, p.Gone)
		default:
			fmt.Println("wait:", err)
		}
	}

	g := publishConf("workers = 4\n")
	report(f.Wait(ctx, g, fleet.WaitOptions{All: true}))

	// An agent starts. Until it has registered, an All wait still has
	// nobody to wait for; Min waits for a number of agents instead.
	stop := exampleAgent(cfg, root, "web-1")
	defer stop()
	report(f.Wait(ctx, g, fleet.WaitOptions{Min: 1}))

	// The agent's check refuses this content: the wait fails as soon as
	// no expected agent can still apply it, not at the deadline.
	g = publishConf("workers = broken\n")
	report(f.Wait(ctx, g, fleet.WaitOptions{All: true}))

	agents, err := f.List(ctx)
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	fmt.Println(fleet.Summarize(agents, g))
	// Output:
	// generation 1: no agent follows the root yet
	// generation 1 applied by [web-1]
	// generation 2 failed: applied by [], rejected by [web-1], pending [], gone []
	// 1 agent(s): 0 at generation 2, 1 behind, 1 failing, 0 untrusted, 0 gone
}

package rollout_test

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
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
	"github.com/zkconf/zkconf/zkclient"
)

// zooKeeper is the throw-away server the examples run against; an
// application passes the addresses of its own ensemble instead.
var zooKeeper zktest.Shared

// TestMain stops the examples' server after the run.
func TestMain(m *testing.M) { zooKeeper.Main(m) }

// exampleAgent runs a real agent labelled zone=zone that renders item
// app.conf to a file. The returned function stops it.
func exampleAgent(cfg zkclient.Config, root, id, zone string) (stop func()) {
	dir, err := os.MkdirTemp("", "rollout-example")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: root, AgentID: id, ZK: cfg, StateDir: filepath.Join(dir, "state"),
		Logger: slog.New(slog.DiscardHandler), Labels: map[string]string{"zone": zone},
		Targets: []agent.TargetSpec{{Name: "conf", Kind: agent.KindFile, Item: "app.conf",
			Dest: filepath.Join(dir, "app.conf"), Mode: 0o640, UID: -1, GID: -1}},
	})
	if err != nil {
		cancel()
		panic(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	return func() { cancel(); <-done; d.Close(); os.RemoveAll(dir) }
}

// A canary rollout driven to its end: Start refuses a selection that
// selects no expected agent (a typo must not become a rollout nobody
// follows), then starts one for zone a; Drive follows the fleet and
// promotes once every selected agent applied the candidate and stayed
// healthy for the bake time.
func ExampleDrive() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const root = "/config/web"
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}
	cl, err := zkclient.Dial(cfg)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cl.Close()
	pub, err := publish.New(cl, root)
	if err != nil {
		fmt.Println("publisher:", err)
		return
	}
	fl, err := fleet.New(cl, root)
	if err != nil {
		fmt.Println("fleet:", err)
		return
	}
	res, err := pub.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte("workers = 4\n")}})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	stop := exampleAgent(cfg, root, "web-1", "a")
	defer stop()
	if _, err := fl.Wait(ctx, res.Generation, fleet.WaitOptions{Min: 1}); err != nil {
		fmt.Println("wait:", err)
		return
	}

	candidate := map[string][]byte{"app.conf": []byte("workers = 8\n")}
	sel := manifest.Selection{Selector: "zone=b"}
	_, err = rollout.Start(ctx, pub, fl, publish.Request{Items: candidate, Canary: &sel}, false)
	var empty *rollout.EmptySelectionError
	if errors.As(err, &empty) {
		fmt.Printf("refused: %s selects none of the %d expected agents\n", publish.DescribeSelection(empty.Selection), empty.Expected)
	}

	sel = manifest.Selection{Selector: "zone=a"}
	bake := time.Second
	res, err = rollout.Start(ctx, pub, fl, publish.Request{Items: candidate, Canary: &sel,
		RolloutPlan: &publish.RolloutPlan{Bake: bake, Auto: true}}, false)
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	rs, err := pub.Rollout(ctx)
	if err != nil {
		fmt.Println("rollout:", err)
		return
	}
	fmt.Printf("candidate generation %d for %s\n", res.Generation, publish.DescribeSelection(sel))
	dr, err := rollout.Drive(ctx, pub, fl, rollout.Plan{RolloutID: rs.Canary.RolloutID, Selector: sel.Selector, Bake: bake})
	if err != nil {
		fmt.Println("drive:", err)
		return
	}
	fmt.Printf("%s as generation %d\n", dr.Outcome, dr.Generation)
	// Output:
	// refused: "zone=b" selects none of the 1 expected agents
	// candidate generation 2 for "zone=a"
	// promoted as generation 3
}

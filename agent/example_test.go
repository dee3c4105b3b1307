package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// An application embeds the agent to render a root's items to files, as
// confagent does. Once renders the live generation and returns: confagent
// --once, or the first step of a program that then calls Run to follow
// every later publish.
func ExampleDaemon_Once() {
	var zooKeeper zktest.Shared // the throw-away server of this example
	defer zooKeeper.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const root = "/config/web"
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}

	// What confpush does on the publishing side.
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
	if _, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte("port = 8080\n")}}); err != nil {
		fmt.Println("publish:", err)
		return
	}

	dir, err := os.MkdirTemp("", "agent-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: root, AgentID: "web-1", ZK: cfg, StateDir: filepath.Join(dir, "state"),
		Logger: slog.New(slog.DiscardHandler),
		Targets: []agent.TargetSpec{{Name: "conf", Kind: agent.KindFile, Item: "app.conf",
			Dest: filepath.Join(dir, "app.conf"), Mode: 0o640, UID: -1, GID: -1,
			Check: "grep -q port {{.src}}"}},
	})
	if err != nil {
		fmt.Println("agent:", err)
		return
	}
	defer d.Close()
	out, err := d.Once(ctx)
	switch {
	case errors.Is(err, agent.ErrUnreachable):
		fmt.Println("no ZooKeeper server answered:", err)
		return
	case err != nil:
		fmt.Println("apply:", err)
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, "app.conf"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("generation %d, changed %v: %s", out.Generation, out.Changed, b)
	// Output: generation 1, changed [conf]: port = 8080
}

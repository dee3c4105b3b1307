package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestOnceMakesNoPool: confagent --once (Daemon.Once) renders a dir
// target and leaves no pool of empty files behind it: the pool is for a
// next write, and a one-shot process has none.
func TestOnceMakesNoPool(t *testing.T) {
	c := zktest.Start(t)
	mustPublish(t, publisher(t, c), map[string]string{"a.conf": "a\n", "b.conf": "b\n"})
	dest := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: root, ZK: zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second},
		AgentID: "once-agent", StateDir: filepath.Join(t.TempDir(), "state"),
		Targets: []agent.TargetSpec{dirSpec(dest)}, Logger: testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dest, "b.conf")); got != "b\n" {
		t.Fatalf("b.conf = %q after Once", got)
	}
	if _, err := os.Lstat(filepath.Join(dest, render.PoolDir)); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(filepath.Join(dest, render.PoolDir))
		t.Errorf("%s after Once: %v (%d entries), want none", render.PoolDir, err, len(ents))
	}
}

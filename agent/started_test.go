package agent_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
)

// TestStartedBoundedBySlowFirstApply: a first apply whose check command
// does not end (here: until the test lets it) does not hold the start-up:
// OnStarted is called once StartTimeout has passed, while the apply is
// still running, and the apply completes afterwards.
func TestStartedBoundedBySlowFirstApply(t *testing.T) {
	c := sharedZooKeeper.For(t)
	mustPublish(t, publisher(t, c), map[string]string{"a": "1"})
	dir := t.TempDir()
	fifo := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "out", "a")
	spec := agent.TargetSpec{Name: "a", Kind: agent.KindFile, Item: "a", Dest: dest, Mode: 0o644, UID: -1, GID: -1,
		Check: "read x < " + fifo, Timeout: 5 * time.Minute}
	started := make(chan struct{})
	r := startDaemon(t, c.Addrs(), filepath.Join(dir, "state"), []agent.TargetSpec{spec}, func(o *agent.Options) {
		o.StartTimeout = time.Second
		o.OnStarted = func() { close(started) }
	})
	select {
	case <-started:
	case <-time.After(90 * time.Second):
		t.Fatal("OnStarted was never called while the first apply hung")
	}
	// The check has not been let through: the apply cannot have swapped
	// the output in.
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("output in place before its check ended: %v", err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.WriteString("go\n")
	_ = w.Close()
	r.waitGeneration(t, 1)
}

// TestStartedWhenRootMissing: an agent whose root was never published
// counts as started as soon as the cache says so (it knows where it
// stands), without waiting for the start-up bound.
func TestStartedWhenRootMissing(t *testing.T) {
	c := sharedZooKeeper.For(t)
	dir := t.TempDir()
	started := make(chan struct{})
	r := startDaemon(t, c.Addrs(), filepath.Join(dir, "state"), []agent.TargetSpec{dirSpec(filepath.Join(dir, "out"))}, func(o *agent.Options) {
		o.StartTimeout = time.Hour
		o.OnStarted = func() { close(started) }
	})
	select {
	case <-started:
	case <-time.After(90 * time.Second):
		t.Fatal("OnStarted was never called for a missing root")
	}
	if s := r.d.Status(); s.Ready || s.Generation != 0 {
		t.Fatalf("status %+v: want not ready, nothing applied", s)
	}
}

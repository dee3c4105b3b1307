package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
)

// watcher is a `confpush watch` subprocess whose output lines are kept.
type watcher struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	wake  chan struct{}
	done  chan struct{}
}

func startWatcher(t *testing.T, bin string, args ...string) *watcher {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = zktest.ChildAttr(false)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watcher{cmd: cmd, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		_ = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-w.done })
	return w
}

func (w *watcher) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// lineCount is the number of output lines so far.
func (w *watcher) lineCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lines)
}

// waitFor waits for an output line containing s.
func (w *watcher) waitFor(t *testing.T, name, s string) {
	t.Helper()
	w.waitForSince(t, name, s, 0)
}

// waitForSince waits for an output line containing s after the first from
// lines.
func (w *watcher) waitForSince(t *testing.T, name, s string, from int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		found := slices.ContainsFunc(w.lines[from:], func(l string) bool { return strings.Contains(l, s) })
		w.mu.Unlock()
		if found {
			return
		}
		select {
		case <-w.wake:
		case <-w.done:
			t.Fatalf("%s exited before printing %q:\n%s", name, s, w.output())
		case <-timeout:
			t.Fatalf("%s never printed %q:\n%s", name, s, w.output())
		}
	}
}

// TestWatchFencedFailover: two `confpush watch` processes; the leader's
// connection is blackholed while the directory changes. Its session
// expires, the other process leads and publishes the change, and when the
// old leader gets through again its pending publish is rejected by the
// fence: no generation is published twice.
func TestWatchFencedFailover(t *testing.T) {
	bin := buildBinary(t, ".", "confpush")
	c := zktest.Start(t)
	proxy := faultproxy.Start(t, c.Addrs()[0])
	dir := t.TempDir()
	write := func(v string) {
		if err := os.WriteFile(filepath.Join(dir, "app.conf"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("v1")
	args := func(zk, debounce, level string) []string {
		return []string{"--zk", zk, "--root", "/config", "--session-timeout", "1s", "--log-level", level,
			"watch", "--debounce", debounce, dir}
	}
	a := startWatcher(t, bin, args(proxy.Addr(), "2s", "debug")...)
	a.waitFor(t, "A", "published generation 1")
	b := startWatcher(t, bin, args(c.Addrs()[0], "200ms", "info")...)
	b.waitFor(t, "B", "campaigning")

	from := a.lineCount()
	proxy.Blackhole(true)
	// The change must find A disconnected, whatever the scheduling: wait
	// for A's ZooKeeper client (go-zookeeper, at debug level) to fail a
	// reconnection attempt, which it logs only after it has reported the
	// disconnection to A's session tracker.
	a.waitForSince(t, "A", "authentication failed", from)
	write("v2")
	// A sees the change but, disconnected, holds its publish back.
	a.waitFor(t, "A", "publish pending until reconnected")
	// A's session expires on the server; B leads and publishes v2.
	b.waitFor(t, "B", "published generation 2")
	proxy.Blackhole(false)
	// A gets through on a new session; its commit carries the fence (its
	// old election node), which is gone: rejected.
	a.waitFor(t, "A", "leadership lost")
	if !strings.Contains(a.output(), "fence") {
		t.Fatalf("A lost leadership but not through the fence:\n%s", a.output())
	}
	if strings.Contains(a.output(), "published generation 2") || strings.Contains(a.output(), "published generation 3") {
		t.Fatalf("the old leader published after losing:\n%s", a.output())
	}

	conn := c.Connect(t, 4*time.Second)
	kids, _, err := conn.Children(layout.New("/config", layout.DefaultMeta).History())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(len(kids)) != "2" {
		t.Fatalf("history has %d generations, want 2 (v1 by A, v2 by B): %v", len(kids), kids)
	}
}

package cache

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStateNotLeftBehindOnFullDisk: when the state directory is full, the
// snapshot the cache hands out cannot be persisted; the older persisted
// generation must not stay behind as the restart state, or an agent
// crashing right after acting on the new generation would restart from
// the older one (never backwards). The test runs as root (tmpfs mount).
func TestStateNotLeftBehindOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	path := filepath.Join(dir, "state")

	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, logs := testLogger(t)
	small := map[string][]byte{"a.conf": []byte("small")}
	g1, _ := pub.publish(small)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	waitGen(t, c, g1, small)
	if p, err := loadState(path, "/config"); err != nil || p == nil || p.Generation() != g1 {
		t.Fatalf("generation %d not persisted: %v %v", g1, p, err)
	}

	big := map[string][]byte{"a.conf": []byte(strings.Repeat("x", 200<<10))} // more than the tmpfs holds
	g2, _ := pub.publish(big)
	waitGen(t, c, g2, big)
	p, err := loadState(path, "/config")
	if err == nil && p != nil && p.Generation() < g2 {
		t.Fatalf("generation %d was handed out, but the state on disk still holds generation %d: a restart would go backwards", g2, p.Generation())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("commit file still there after the failed write: %v", err)
	}
	if !strings.Contains(logs.String(), "could not persist the snapshot; removed the older persisted one") {
		t.Fatalf("no warning about the failed persist in the log:\n%s", logs.String())
	}

	// Space again: the next generation is persisted as usual.
	if out, err := exec.Command("mount", "-o", "remount,size=8m", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	g3, _ := pub.publish(small)
	waitGen(t, c, g3, small)
	if p, err := loadState(path, "/config"); err != nil || p == nil || p.Generation() != g3 {
		t.Fatalf("generation %d not persisted once space returned: %v %v", g3, p, err)
	}
}

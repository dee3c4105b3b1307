package cache

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestStateAppendOnFullDisk: an append that the disk cannot hold (ENOSPC
// in its contents or in its commit record) fails and leaves the previous
// commit loadable, its torn tail beside it; once space is back, the next
// write, of the same process or of a restarted one, cuts the tail off,
// appends and commits. The test runs as root (tmpfs mount).
func TestStateAppendOnFullDisk(t *testing.T) {
	v1 := bigSet(20, 512, "v1")
	for _, tc := range []struct {
		name      string
		restarted bool
		// inRecord: the disk runs out in the append's commit record
		// (its contents fit), else in its contents.
		inRecord bool
	}{
		{"contents", false, false},
		{"contents/restarted", true, false},
		{"record", false, true},
		{"record/restarted", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Fatalf("mount tmpfs (the test needs root): %v: %s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
			path := filepath.Join(dir, "state", "snapshot.state")
			st := newStateStore(path, "/r")
			if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
				t.Fatal(err)
			}
			end := st.end
			filler := filepath.Join(dir, "filler")
			const free = 8 << 10
			fillDisk(t, dir, filler, free)
			// What an append can write: the rest of the pack's last
			// page and the free pages. The commit record (about 2.5
			// KiB here) does not fit in 512 bytes.
			room := int(4096-end%4096) + free
			big := room + 4096
			if tc.inRecord {
				big = room - 512
			}
			appended := false
			hook := func(step string) error {
				appended = appended || step == stepAppended
				return nil
			}
			st.crashAt.Store(&hook)
			v2 := withItem(v1, "item003", strings.Repeat("x", big))
			err := st.write(newTestSnapshot(t, 2, v2))
			if err == nil || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("the append of %d bytes with %d free: %v, want ENOSPC", big, free, err)
			}
			if appended != tc.inRecord {
				t.Fatalf("the contents were written: %v, want %v (%v)", appended, tc.inRecord, err)
			}
			st.crashAt.Store(nil)
			s, lerr := loadState(path, "/r")
			if lerr != nil || s.Generation() != 1 {
				t.Fatalf("after the failed append: generation %d, %v; want the previous commit, 1", genOf(s), lerr)
			}
			checkItems(t, s, v1)

			// Space again.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if tc.restarted {
				st = newStateStore(path, "/r")
				if _, err := st.load(); err != nil {
					t.Fatal(err)
				}
			}
			v3 := withItem(v1, "item004", "third")
			if err := st.write(newTestSnapshot(t, 3, v3)); err != nil {
				t.Fatalf("the write once space is back: %v", err)
			}
			if st.last.newPack {
				t.Fatalf("a new pack after a failed append: %+v", st.last)
			}
			if fs, _, _ := lastFrame(t, onlyPack(t, path)); fs != end {
				t.Fatalf("the frame after the failed append starts at %d, want %d (the torn tail cut off)", fs, end)
			}
			s, lerr = loadState(path, "/r")
			if lerr != nil || s.Generation() != 3 {
				t.Fatalf("after the write: generation %d, %v; want 3", genOf(s), lerr)
			}
			checkItems(t, s, v3)
		})
	}
}

// fillDisk writes filler until the filesystem of dir has about free bytes
// left.
func fillDisk(t *testing.T, dir, filler string, free int) {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	avail := int64(fs.Bavail) * int64(fs.Bsize)
	if avail <= int64(free) {
		t.Fatalf("only %d bytes free", avail)
	}
	if err := os.WriteFile(filler, make([]byte, avail-int64(free)), 0o600); err != nil {
		t.Fatal(err)
	}
}

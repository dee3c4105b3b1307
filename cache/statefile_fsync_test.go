package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestStatePersistsWhenDirFsyncSaysEINVAL: on filesystems that refuse
// directory fsyncs with EINVAL (some FUSE and network filesystems), the
// cache persists its state and a restarted process starts from it, as the
// agent's renderer on the same filesystem writes its files. Before
// internal/durable the state file failed every write there.
func TestStatePersistsWhenDirFsyncSaysEINVAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fuse", "state.json")
	refused := 0
	einval := func(d *os.File) error {
		refused++
		return &os.PathError{Op: "sync", Path: d.Name(), Err: syscall.EINVAL}
	}
	st := newStateStore(path, "/r")
	st.fsyncDir = einval
	v1 := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}
	if err := st.write(newTestSnapshot(t, 3, v1)); err != nil {
		t.Fatalf("first write: %v", err)
	}
	v2 := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta 2")}
	if err := st.write(newTestSnapshot(t, 4, v2)); err != nil {
		t.Fatalf("second write: %v", err)
	}
	if refused == 0 {
		t.Fatal("the simulated directory fsync was never called")
	}

	// The restart: a new store on the same path.
	got, err := newStateStore(path, "/r").load()
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Generation() != 4 || !got.FromStateFile() {
		t.Fatalf("restarted from %v, want generation 4 from the state file", got)
	}
	checkItems(t, got, v2)
}

// TestStateAppendSyncsOnce: an append syncs the pack and nothing else (no
// directory, no rename: the pointer stays the same file), except the first
// write of a process that loaded the state, which syncs both directories
// too, so that a pointer or pack an earlier process renamed or created
// without syncing its directory (killed in between) is durable before
// this process's first commit counts.
func TestStateAppendSyncsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "snapshot.state")
	items := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}
	if err := writeState(path, "/r", newTestSnapshot(t, 1, items)); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex // the two directories are synced at once
		synced []string
	)
	st := newStateStore(path, "/r")
	st.fsyncDir = func(d *os.File) error {
		mu.Lock()
		synced = append(synced, d.Name())
		mu.Unlock()
		return d.Sync()
	}
	if s, err := st.load(); err != nil || s.Generation() != 1 {
		t.Fatalf("load: %v %v", s, err)
	}
	ptr, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for gen := int64(2); gen <= 4; gen++ {
		synced = nil
		items = withItem(items, "b", fmt.Sprint("beta ", gen))
		if err := st.write(newTestSnapshot(t, gen, items)); err != nil {
			t.Fatal(err)
		}
		if st.last.newPack {
			t.Fatalf("generation %d: a new pack", gen)
		}
		want := 0
		if gen == 2 {
			want = 2 // the process's first write
		}
		if len(synced) != want {
			t.Fatalf("generation %d: directories synced %v, want %d", gen, synced, want)
		}
		if now, err := os.Stat(path); err != nil || !os.SameFile(ptr, now) {
			t.Fatalf("generation %d: the pointer was replaced (%v)", gen, err)
		}
	}
}

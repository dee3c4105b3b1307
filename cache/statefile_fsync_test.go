package cache

import (
	"os"
	"path/filepath"
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

package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
)

// bigSet is count items of size bytes each, tagged.
func bigSet(count, size int, tag string) map[string][]byte {
	m := make(map[string][]byte, count)
	for i := range count {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(b, fmt.Sprintf("%s/item%03d/", tag, i))
		m[fmt.Sprintf("item%03d", i)] = b
	}
	return m
}

// itemFiles lists the item directory of state path.
func itemFiles(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(path + itemDirSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// hashesOf is the sorted distinct hashes of items.
func hashesOf(items map[string][]byte) []string {
	set := map[string]bool{}
	for _, d := range items {
		set[manifest.Hash(d)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func TestStateFileRoundTrip(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "bin": {0, 1, 2, 255}, "empty": {}, "same-as-a": []byte("alpha")}
	s := newTestSnapshot(t, 9, items)
	path := filepath.Join(t.TempDir(), "d1", "d2", "state.json")
	if err := writeState(path, "/r", s); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(path+itemDirSuffix, manifest.Hash([]byte("alpha")))} {
		if m := fileMode(t, p); m != 0o600 {
			t.Fatalf("%s: mode %o", p, m)
		}
	}
	for _, p := range []string{filepath.Dir(path), path + itemDirSuffix} {
		if m := fileMode(t, p); m != 0o700 {
			t.Fatalf("%s: dir mode %o", p, m)
		}
	}
	// Equal contents share a file.
	if got, want := itemFiles(t, path), hashesOf(items); !slices.Equal(got, want) {
		t.Fatalf("item files %v, want %v", got, want)
	}
	got, err := loadState(path, "/r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation() != 9 || got.Zxid() != s.Zxid() || got.PublishID() != s.PublishID() || !got.FromStateFile() {
		t.Fatalf("loaded %+v", got)
	}
	checkItems(t, got, items)
	// Overwrite keeps the state file and its item directory, no
	// temporaries, no file of the old contents.
	items2 := map[string][]byte{"a": []byte("alpha2")}
	if err := writeState(path, "/r", newTestSnapshot(t, 10, items2)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 2 {
		t.Fatalf("%d entries in the state directory", len(ents))
	}
	if got, want := itemFiles(t, path), hashesOf(items2); !slices.Equal(got, want) {
		t.Fatalf("item files %v, want %v", got, want)
	}
	if s, _ := loadState(filepath.Join(t.TempDir(), "missing"), "/r"); s != nil {
		t.Fatal("missing file loaded")
	}
}

// TestStateIncrementalWrite: an apply writes the changed item's file and a
// small commit file, nothing else, removes the replaced content's file,
// and leaves every unchanged item file alone.
func TestStateIncrementalWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	st := newStateStore(path, "/r")
	v1 := bigSet(100, 4096, "v1")
	if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 100 || st.last.itemBytes != 100*4096 {
		t.Fatalf("first write: %+v", st.last)
	}
	before := map[string]os.FileInfo{}
	for _, n := range itemFiles(t, path) {
		fi, err := os.Stat(filepath.Join(path+itemDirSuffix, n))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = fi
	}

	v2 := maps.Clone(v1)
	v2["item042"] = bytes.Repeat([]byte("2"), 4096)
	if err := st.write(newTestSnapshot(t, 2, v2)); err != nil {
		t.Fatal(err)
	}
	t.Logf("write of 1 changed item of 100 x 4 KiB: %+v (%d bytes; the single-file format 1 wrote %d)", st.last,
		st.last.itemBytes+st.last.commitBytes, len(encodeLegacyState(t, "/r", newTestSnapshot(t, 2, v2), time.Now())))
	if st.last.itemFiles != 1 || st.last.itemBytes != 4096 || st.last.removedFiles != 1 {
		t.Fatalf("second write: %+v, want 1 item file of 4096 bytes written, 1 removed", st.last)
	}
	if st.last.commitBytes > 16<<10 {
		t.Fatalf("commit file of %d bytes", st.last.commitBytes)
	}
	if got, want := itemFiles(t, path), hashesOf(v2); !slices.Equal(got, want) {
		t.Fatalf("item files %v, want %v", got, want)
	}
	for n, fi := range before {
		if n == manifest.Hash(v1["item042"]) {
			continue
		}
		now, err := os.Stat(filepath.Join(path+itemDirSuffix, n))
		if err != nil || !os.SameFile(fi, now) || !now.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("unchanged item file %s was rewritten (%v)", n, err)
		}
	}
	got, err := loadState(path, "/r")
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, got, v2)

	// Nothing changed but the generation: only the commit file.
	if err := st.write(newTestSnapshot(t, 3, v2)); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 0 || st.last.removedFiles != 0 {
		t.Fatalf("third write: %+v", st.last)
	}
}

// TestStateCrashBeforeCommit: a crash after the new item files are durable
// and before the commit file is replaced leaves the previous generation,
// complete; the next process's first write removes the orphans.
func TestStateCrashBeforeCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	st := newStateStore(path, "/r")
	v1 := bigSet(10, 100, "v1")
	if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
		t.Fatal(err)
	}
	v2 := bigSet(10, 100, "v2") // every item changes
	crash := errors.New("crash")
	hook := func() error { return crash }
	st.beforeCommit.Store(&hook)
	if err := st.write(newTestSnapshot(t, 2, v2)); !errors.Is(err, crash) {
		t.Fatalf("write: %v", err)
	}
	if n := len(itemFiles(t, path)); n != 20 {
		t.Fatalf("%d item files, want both generations' 20", n)
	}
	// The "restarted process".
	st2 := newStateStore(path, "/r")
	s, err := st2.load()
	if err != nil || s == nil || s.Generation() != 1 {
		t.Fatalf("after the crash: %v %v, want generation 1", s, err)
	}
	checkItems(t, s, v1)
	v3 := maps.Clone(v1)
	v3["item000"] = []byte("three")
	if err := st2.write(newTestSnapshot(t, 3, v3)); err != nil {
		t.Fatal(err)
	}
	if got, want := itemFiles(t, path), hashesOf(v3); !slices.Equal(got, want) {
		t.Fatalf("item files %v, want %v (orphans left?)", got, want)
	}
	if st2.last.itemFiles != 1 || st2.last.removedFiles != 11 {
		t.Fatalf("write after the crash: %+v, want 1 written, 10 orphans + 1 replaced removed", st2.last)
	}

	// A crash in the middle of writing an item file leaves a temporary
	// (never a file under a hash name that is not complete): the same.
	if err := os.WriteFile(filepath.Join(path+itemDirSuffix, "."+strings.Repeat("ab", 32)+tmpMarker+"123"), []byte("part"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := loadState(path, "/r"); err != nil || s.Generation() != 3 {
		t.Fatalf("with a temporary left: %v %v", s, err)
	}
}

// TestStateItemFileCorrupt: a corrupted, truncated, grown or missing item
// file makes the whole state unusable (errStateFile), never a snapshot
// with one bad item.
func TestStateItemFileCorrupt(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta-beta")}
	for name, damage := range map[string]func(p string) error{
		"bit flip": func(p string) error {
			b, _ := os.ReadFile(p)
			b[2] ^= 0x10
			return os.WriteFile(p, b, 0o600)
		},
		"truncated": func(p string) error { return os.Truncate(p, 3) },
		"grown":     func(p string) error { return os.WriteFile(p, []byte("beta-beta-and-more"), 0o600) },
		"missing":   os.Remove,
		"emptied":   func(p string) error { return os.WriteFile(p, nil, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			if err := writeState(path, "/r", newTestSnapshot(t, 4, items)); err != nil {
				t.Fatal(err)
			}
			if err := damage(filepath.Join(path+itemDirSuffix, manifest.Hash(items["b"]))); err != nil {
				t.Fatal(err)
			}
			s, err := loadState(path, "/r")
			if s != nil || !errors.Is(err, errStateFile) || !strings.Contains(err.Error(), `item "b"`) {
				t.Fatalf("loaded %v, %v; want errStateFile naming item b", s, err)
			}
			t.Log(err)
		})
	}
}

// TestStateOrphanCleanup: the first write of a process removes item files
// and temporaries nothing references, and nothing that is not its own.
func TestStateOrphanCleanup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	dir := path + itemDirSuffix
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orphan := manifest.Hash([]byte("orphan"))
	for _, n := range []string{orphan, "." + orphan + tmpMarker + "42", "README", "ABC", strings.Repeat("0", 63)} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("orphan"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, strings.Repeat("1", 64)), 0o700); err != nil {
		t.Fatal(err)
	}
	commitTmp := filepath.Join(filepath.Dir(path), ".state"+tmpMarker+"99")
	if err := os.WriteFile(commitTmp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	items := map[string][]byte{"a": []byte("alpha")}
	st := newStateStore(path, "/r")
	if err := st.write(newTestSnapshot(t, 1, items)); err != nil {
		t.Fatal(err)
	}
	want := []string{strings.Repeat("0", 63), strings.Repeat("1", 64), "ABC", "README", manifest.Hash(items["a"])}
	slices.Sort(want)
	if got := itemFiles(t, path); !slices.Equal(got, want) {
		t.Fatalf("item directory %v, want %v", got, want)
	}
	if _, err := os.Stat(commitTmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("commit temporary left: %v", err)
	}
	if st.last.removedFiles != 2 {
		t.Fatalf("%+v", st.last)
	}
}

// TestStateLegacyFormat: a format 1 state file (items inline, the previous
// zkconf's) loads, and the first write replaces it with format 2.
func TestStateLegacyFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	items := map[string][]byte{"a": []byte("alpha"), "b": {}}
	if err := os.WriteFile(path, encodeLegacyState(t, "/r", newTestSnapshot(t, 5, items), time.Now()), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || s.Generation() != 5 || !s.FromStateFile() {
		t.Fatalf("legacy load: %v %v", s, err)
	}
	checkItems(t, s, items)
	items6 := withItem(items, "c", "new")
	if err := st.write(newTestSnapshot(t, 6, items6)); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 3 {
		t.Fatalf("migration wrote %d item files, want every one", st.last.itemFiles)
	}
	var h stateHeader
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &h) != nil || h.Format != stateFormat {
		t.Fatalf("state file not rewritten in format %d: %v", stateFormat, err)
	}
	s, err = loadState(path, "/r")
	if err != nil || s.Generation() != 6 {
		t.Fatalf("after migration: %v %v", s, err)
	}
	checkItems(t, s, items6)
}

func TestStateFileRejects(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}
	good, h := encodedState(t, items)
	var b stateBody
	_ = json.Unmarshal(h.Body, &b)
	// Format 2 with items inline.
	b.Items = map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}
	inline := reseal(t, h, b)
	// Format 1 whose checksum is right but whose item does not match its
	// manifest (written by something else, or a bug), or is missing.
	h1 := h
	h1.Format = stateFormatV1
	b.Items["a"] = []byte("tampered")
	tampered := reseal(t, h1, b)
	b.Items = map[string][]byte{"a": []byte("alpha")}
	missing := reseal(t, h1, b)
	h3 := h
	h3.Format = 3
	future, _ := json.Marshal(h3)

	for name, data := range map[string][]byte{
		"other root":     good,
		"bit flip":       bytes.Replace(good, []byte(`"generation":2`), []byte(`"generation":3`), 1),
		"items inline":   inline,
		"tampered item":  tampered,
		"missing item":   missing,
		"future format":  future,
		"not json":       []byte("{"),
		"wrong kind":     []byte(`{"kind":"x","format":1}`),
		"truncated":      good[:40],
		"checksum empty": bytes.Replace(good, []byte(h.Checksum), []byte(""), 1),
	} {
		root := "/r"
		if name == "other root" {
			root = "/other"
		}
		if s, err := decodeState(root, data); err == nil || !errors.Is(err, errStateFile) {
			t.Errorf("%s: decoded %v, err %v", name, s, err)
		}
	}
}

// reseal re-encodes body b under h with a correct checksum.
func reseal(t *testing.T, h stateHeader, b stateBody) []byte {
	t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	h.Body = body
	h.Checksum = sha256hex(body)
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCacheStateIncremental follows publishes with a real ZooKeeper: each
// apply adds exactly the changed item's file and removes the replaced one;
// a crash between the item files and the commit point (the hook fails the
// write there) restarts from the previous generation; a corrupt item file
// makes the restarted cache start from nothing and re-read everything.
func TestCacheStateIncremental(t *testing.T) {
	zkc := zktest.Start(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	log, buf := testLogger(t)
	path := filepath.Join(t.TempDir(), "state")
	start := func() *Cache {
		return newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithStateFile(path))
	}

	v1 := bigSet(20, 1024, "v1")
	g1, _ := pub.publish(v1)
	c := start()
	waitGen(t, c, g1, v1)
	ino := map[string]os.FileInfo{}
	for _, n := range itemFiles(t, path) {
		ino[n], _ = os.Stat(filepath.Join(path+itemDirSuffix, n))
	}
	v2 := maps.Clone(v1)
	v2["item007"] = []byte("second")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)
	files := itemFiles(t, path)
	if !slices.Equal(files, hashesOf(v2)) {
		t.Fatalf("item files %v, want %v", files, hashesOf(v2))
	}
	for _, n := range files {
		fi, _ := os.Stat(filepath.Join(path+itemDirSuffix, n))
		if old, ok := ino[n]; ok != (n != manifest.Hash(v2["item007"])) || (ok && !os.SameFile(old, fi)) {
			t.Fatalf("item file %s: rewritten or missing", n)
		}
	}

	// The crash: the next apply stops just before its commit point.
	c.Close()
	c = start()
	waitGen(t, c, g2, v2)
	// The hook takes an image of the state as a crash at this point
	// leaves it (item files durable, the commit file still the previous
	// one); the write then fails, and the cache, which lives on, removes
	// the older commit file (TestStateNotLeftBehindOnFullDisk). The
	// restart below starts from the image: what the dead process left.
	crashed := make(chan struct{}, 1)
	image := t.TempDir()
	hook := func() error {
		select {
		case crashed <- struct{}{}:
			if out, err := exec.Command("cp", "-a", path, path+itemDirSuffix, image).CombinedOutput(); err != nil {
				return fmt.Errorf("image of the state: %v: %s", err, out)
			}
		default:
		}
		return errors.New("simulated crash before the commit point")
	}
	c.store.beforeCommit.Store(&hook)
	v3 := maps.Clone(v2)
	v3["item008"] = []byte("third")
	g3, _ := pub.publish(v3)
	waitGen(t, c, g3, v3) // handed out anyway (the persist failure is logged and counted)
	<-crashed
	if c.Stats().PersistErrors != 1 {
		t.Fatalf("persist errors %d", c.Stats().PersistErrors)
	}
	c.Close()
	zkc.Stop(0)
	if err := os.RemoveAll(path + itemDirSuffix); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(image, filepath.Base(path)), filepath.Join(image, filepath.Base(path)+itemDirSuffix), filepath.Dir(path)).CombinedOutput(); err != nil {
		t.Fatalf("restore the crash image: %v: %s", err, out)
	}
	c = start()
	if s := c.Snapshot(); s == nil || s.Generation() != g2 || !s.FromStateFile() {
		t.Fatalf("after the crash: %v, want generation %d from the state file", s, g2)
	}
	checkItems(t, c.Snapshot(), v2)
	c.Close()

	// Corrupt one item file: the state is ignored as a whole, logged.
	p := filepath.Join(path+itemDirSuffix, manifest.Hash(v2["item003"]))
	if err := os.WriteFile(p, []byte("corrupt"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = start()
	if s := c.Snapshot(); s != nil {
		t.Fatalf("served generation %d with a corrupt item file", s.Generation())
	}
	if !strings.Contains(buf.String(), "ignoring the state file") || !strings.Contains(buf.String(), "item003") {
		t.Fatalf("not logged:\n%s", buf.String())
	}
	zkc.Restart(0)
	waitGen(t, c, g3, v3)
	c.Close()
	if got := itemFiles(t, path); !slices.Equal(got, hashesOf(v3)) {
		t.Fatalf("item files %v, want %v", got, hashesOf(v3))
	}
	if s, err := loadState(path, "/config"); err != nil || s.Generation() != g3 {
		t.Fatalf("state after recovery: %v %v", s, err)
	}
}

// encodedState is a valid state file of generation 2 for root "/r" holding
// items, and its decoded header.
func encodedState(t *testing.T, items map[string][]byte) ([]byte, stateHeader) {
	t.Helper()
	good, err := encodeState("/r", newTestSnapshot(t, 2, items), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var h stateHeader
	if err := json.Unmarshal(good, &h); err != nil {
		t.Fatal(err)
	}
	return good, h
}

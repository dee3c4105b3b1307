package cache

import (
	"bytes"
	"encoding/binary"
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

// onlyPack is the path of the one file of state path's item directory,
// which must be a pack.
func onlyPack(t *testing.T, path string) string {
	t.Helper()
	files := itemFiles(t, path)
	if len(files) != 1 || !validPackName(files[0]) {
		t.Fatalf("item directory holds %v, want one pack", files)
	}
	return filepath.Join(path+itemDirSuffix, files[0])
}

// committed decodes the commit file at path.
func committed(t *testing.T, path, root string) *stateCommit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := decodeState(root, b)
	if err != nil {
		t.Fatal(err)
	}
	if c.format == stateFormat {
		// The pointer: the offsets are in the pack's last commit.
		st := newStateStore(path, root)
		if _, err := st.load(); err != nil {
			t.Fatal(err)
		}
		c.at = st.have
	}
	return c
}

// lastFrame reads the trailer at the end of the framed pack at pack and
// returns where its frame starts, where its body starts and its size.
func lastFrame(t *testing.T, pack string) (frameStart, bodyStart, size int64) {
	t.Helper()
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < packHeaderSize+packTrailerSize || string(b[len(b)-packTrailerSize:][:8]) != trailerMagic {
		t.Fatalf("pack %s of %d bytes does not end with a commit record", pack, len(b))
	}
	tr := b[len(b)-packTrailerSize:]
	size = int64(len(b))
	bodyStart = size - packTrailerSize - int64(binary.BigEndian.Uint64(tr[16:]))
	return int64(binary.BigEndian.Uint64(tr[8:])), bodyStart, size
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
	pack := onlyPack(t, path)
	for _, p := range []string{path, pack} {
		if m := fileMode(t, p); m != 0o600 {
			t.Fatalf("%s: mode %o", p, m)
		}
	}
	for _, p := range []string{filepath.Dir(path), path + itemDirSuffix} {
		if m := fileMode(t, p); m != 0o700 {
			t.Fatalf("%s: dir mode %o", p, m)
		}
	}
	// Equal contents are packed once, in one frame after the header.
	if fs, bs, _ := lastFrame(t, pack); fs != packHeaderSize || bs-fs != int64(len("alpha")+4) {
		t.Fatalf("frame of contents [%d, %d), want each distinct content once after the header", fs, bs)
	}
	if c := committed(t, path, "/r"); c.format != stateFormat || !slices.Equal(slices.Sorted(maps.Keys(c.at)), hashesOf(items)) {
		t.Fatalf("commit file format %d, offsets %v", c.format, c.at)
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
	// temporaries, one pack.
	items2 := map[string][]byte{"a": []byte("alpha2")}
	if err := writeState(path, "/r", newTestSnapshot(t, 10, items2)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 2 {
		t.Fatalf("%d entries in the state directory", len(ents))
	}
	onlyPack(t, path)
	got, err = loadState(path, "/r")
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, got, items2)
	if s, _ := loadState(filepath.Join(t.TempDir(), "missing"), "/r"); s != nil {
		t.Fatal("missing file loaded")
	}
}

// TestStateIncrementalWrite: an apply appends the changed item's bytes to
// the pack and writes a small commit file, nothing else: no new file in
// the item directory, the pack's earlier bytes untouched.
func TestStateIncrementalWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	st := newStateStore(path, "/r")
	v1 := bigSet(100, 4096, "v1")
	if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 100 || st.last.itemBytes != 100*4096 || !st.last.newPack {
		t.Fatalf("first write: %+v", st.last)
	}
	pack := onlyPack(t, path)
	before, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := os.ReadFile(pack)

	v2 := maps.Clone(v1)
	v2["item042"] = bytes.Repeat([]byte("2"), 4096)
	if err := st.write(newTestSnapshot(t, 2, v2)); err != nil {
		t.Fatal(err)
	}
	t.Logf("write of 1 changed item of 100 x 4 KiB: %+v (%d bytes; the single-file format 1 wrote %d)", st.last,
		st.last.itemBytes+st.last.commitBytes, len(encodeLegacyState(t, "/r", newTestSnapshot(t, 2, v2), time.Now())))
	if st.last.itemFiles != 1 || st.last.itemBytes != 4096 || st.last.newPack || st.last.removedFiles != 0 {
		t.Fatalf("second write: %+v, want 1 content of 4096 bytes appended, no new pack, nothing removed", st.last)
	}
	if st.last.commitBytes > 16<<10 {
		t.Fatalf("commit file of %d bytes", st.last.commitBytes)
	}
	if p := onlyPack(t, path); p != pack {
		t.Fatalf("pack %s replaced by %s", pack, p)
	}
	after, err := os.Stat(pack)
	if err != nil || !os.SameFile(before, after) || after.Size() != before.Size()+4096+st.last.commitBytes {
		t.Fatalf("pack not appended to: %v", err)
	}
	if fs, bs, _ := lastFrame(t, pack); fs != before.Size() || bs != fs+4096 {
		t.Fatalf("the last frame holds [%d, %d), want the one content appended at %d", fs, bs, before.Size())
	}
	if now, _ := os.ReadFile(pack); !bytes.Equal(now[:len(head)], head) {
		t.Fatal("the pack's earlier bytes changed")
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
	if st.last.itemFiles != 0 || st.last.itemBytes != 0 || st.last.newPack || st.last.removedFiles != 0 {
		t.Fatalf("third write: %+v", st.last)
	}
}

// TestStatePackBounded: a pack grows until it holds more than packGrowth
// times the live bytes plus the slack; the write then starts a new pack holding the
// live contents only, and removes the older pack after its commit point.
func TestStatePackBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	st := newStateStore(path, "/r")
	st.slack = 8 << 10
	var newPacks int
	var last map[string][]byte
	for gen := int64(1); gen <= 40; gen++ {
		last = bigSet(20, 1024, fmt.Sprint("v", gen)) // every item changes
		if err := st.write(newTestSnapshot(t, gen, last)); err != nil {
			t.Fatal(err)
		}
		pack := onlyPack(t, path) // the older pack is gone
		fi, err := os.Stat(pack)
		if err != nil {
			t.Fatal(err)
		}
		// The commit records count as live bytes too (about the
		// manifest's size each).
		if live := int64(20*1024) + st.last.commitBytes; fi.Size() > packGrowth*live+st.slack {
			t.Fatalf("generation %d: pack of %d bytes for %d live", gen, fi.Size(), live)
		}
		if st.last.newPack {
			newPacks++
			if gen > 1 && (fi.Size() != packHeaderSize+20*1024+st.last.commitBytes || st.last.removedFiles != 1) {
				t.Fatalf("generation %d: new pack of %d bytes, %d files removed", gen, fi.Size(), st.last.removedFiles)
			}
		}
	}
	// 20 KiB live (and ~2.5 KiB of commit record), 8 KiB slack: a pack
	// takes three generations' appends after the one that starts it.
	if newPacks < 8 {
		t.Fatalf("%d new packs in 40 generations", newPacks)
	}
	got, err := loadState(path, "/r")
	if err != nil || got.Generation() != 40 {
		t.Fatalf("%v %v", got, err)
	}
	checkItems(t, got, last)
}

// TestStateCrashBeforeCommit: a write that stops after the pack's new
// contents are written and before its commit record leaves the previous
// generation, complete; the next process's first write cuts the torn tail
// off before it appends, and removes what the failed one left.
func TestStateCrashBeforeCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	st := newStateStore(path, "/r")
	v1 := bigSet(10, 100, "v1")
	if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
		t.Fatal(err)
	}
	_, _, end1 := lastFrame(t, onlyPack(t, path))
	v2 := bigSet(10, 100, "v2") // every item changes
	crash := errors.New("crash")
	hook := func(step string) error {
		if step == stepAppended {
			return crash
		}
		return nil
	}
	st.crashAt.Store(&hook)
	if err := st.write(newTestSnapshot(t, 2, v2)); !errors.Is(err, crash) {
		t.Fatalf("write: %v", err)
	}
	if fi, err := os.Stat(onlyPack(t, path)); err != nil || fi.Size() != end1+1000 {
		t.Fatalf("pack: %v %v, want generation 1 and the new contents", fi, err)
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
	if st2.last.itemFiles != 1 || st2.last.truncated != 1000 || st2.last.newPack {
		t.Fatalf("write after the crash: %+v, want the 1000 torn bytes cut off and 1 content appended", st2.last)
	}
	if fs, _, _ := lastFrame(t, onlyPack(t, path)); fs != end1 {
		t.Fatalf("the frame after the crash starts at %d, want %d (right after generation 1's)", fs, end1)
	}
	if s, err := loadState(path, "/r"); err != nil || s.Generation() != 3 {
		t.Fatalf("after the write: %v %v", s, err)
	}

	// A crash in the middle of starting a pack leaves a pack nothing
	// names: ignored, and removed by the next process's first write.
	if err := os.WriteFile(filepath.Join(path+itemDirSuffix, packPrefix+"123"), []byte("part"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+itemDirSuffix, "."+strings.Repeat("ab", 32)+tmpMarker+"123"), []byte("part"), 0o600); err != nil {
		t.Fatal(err)
	}
	st3 := newStateStore(path, "/r")
	if s, err := st3.load(); err != nil || s.Generation() != 3 {
		t.Fatalf("with an orphan pack left: %v %v", s, err)
	}
	if err := st3.write(newTestSnapshot(t, 4, v3)); err != nil {
		t.Fatal(err)
	}
	if st3.last.removedFiles != 2 {
		t.Fatalf("%+v, want the orphan pack and temporary removed", st3.last)
	}
	onlyPack(t, path)
}

// TestStateItemFileCorrupt: a corrupted, truncated, missing or emptied
// pack makes the whole state unusable (errStateFile), never a snapshot
// with one bad item; bytes appended past the last commit record (an append
// a crash cut short) do not matter.
func TestStateItemFileCorrupt(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta-beta")}
	for name, damage := range map[string]func(p string, off int64) error{
		"bit flip": func(p string, off int64) error {
			b, _ := os.ReadFile(p)
			b[off+2] ^= 0x10
			return os.WriteFile(p, b, 0o600)
		},
		"truncated": func(p string, off int64) error { return os.Truncate(p, off+3) },
		"missing":   func(p string, _ int64) error { return os.Remove(p) },
		"emptied":   func(p string, _ int64) error { return os.WriteFile(p, nil, 0o600) },
		"tail":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			st := newStateStore(path, "/r")
			if err := st.write(newTestSnapshot(t, 3, items)); err != nil {
				t.Fatal(err)
			}
			// Generation 4 appends c: a and b are in an earlier
			// frame than the last commit's, where a mismatch is
			// corruption (not a torn append).
			items := withItem(items, "c", "gamma")
			if err := st.write(newTestSnapshot(t, 4, items)); err != nil {
				t.Fatal(err)
			}
			pack := onlyPack(t, path)
			if damage == nil {
				f, err := os.OpenFile(pack, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.Write([]byte("half an append"))
				if cerr := f.Close(); err != nil || cerr != nil {
					t.Fatal(err, cerr)
				}
				s, err := loadState(path, "/r")
				if err != nil {
					t.Fatal(err)
				}
				checkItems(t, s, items)
				return
			}
			if err := damage(pack, committed(t, path, "/r").at[manifest.Hash(items["b"])]); err != nil {
				t.Fatal(err)
			}
			s, err := loadState(path, "/r")
			if s != nil || !errors.Is(err, errStateFile) || (name == "bit flip" && !strings.Contains(err.Error(), `item "b"`)) {
				t.Fatalf("loaded %v, %v; want errStateFile naming an item", s, err)
			}
			t.Log(err)
		})
	}
}

// TestStateTailFloodedWithMagic: a torn tail holding the trailer's magic
// over and over (a published content that says it, torn in its append)
// passes for no commit record (the checksum is keyed), and the loader
// gives up after maxScanCandidates of them rather than read on: the state
// is unusable (ZooKeeper's is read), never a forged generation.
func TestStateTailFloodedWithMagic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	items := map[string][]byte{"a": []byte("alpha")}
	if err := writeState(path, "/r", newTestSnapshot(t, 1, items)); err != nil {
		t.Fatal(err)
	}
	pack := onlyPack(t, path)
	intact, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		copies int
		ok     bool
	}{{maxScanCandidates / 2, true}, {maxScanCandidates + packTrailerSize/len(trailerMagic), false}} {
		b := append(bytes.Clone(intact), bytes.Repeat([]byte(trailerMagic), tc.copies)...)
		if err := os.WriteFile(pack, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := loadState(path, "/r")
		if tc.ok && (err != nil || s.Generation() != 1) {
			t.Fatalf("%d copies: %v %v, want generation 1", tc.copies, genOf(s), err)
		}
		if !tc.ok && (s != nil || !errors.Is(err, errStateFile)) {
			t.Fatalf("%d copies: generation %d, %v; want errStateFile", tc.copies, genOf(s), err)
		}
	}
}

// TestStateOrphanCleanup: the first write of a process removes packs,
// item files and temporaries nothing references, and nothing that is not
// its own.
func TestStateOrphanCleanup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	dir := path + itemDirSuffix
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orphan := manifest.Hash([]byte("orphan"))
	for _, n := range []string{orphan, "." + orphan + tmpMarker + "42", packPrefix + "77", "README", "ABC", strings.Repeat("0", 63), packPrefix + "x1", packPrefix} {
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
	want := []string{strings.Repeat("0", 63), strings.Repeat("1", 64), "ABC", "README", packPrefix, packPrefix + "x1", st.pack}
	slices.Sort(want)
	if got := itemFiles(t, path); !slices.Equal(got, want) {
		t.Fatalf("item directory %v, want %v", got, want)
	}
	if _, err := os.Stat(commitTmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("commit temporary left: %v", err)
	}
	if st.last.removedFiles != 3 {
		t.Fatalf("%+v", st.last)
	}
}

// TestStateLegacyFormat: a format 1 state file (items inline) loads, and
// the first write replaces it with the packed format.
func TestStateLegacyFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	items := map[string][]byte{"a": []byte("alpha"), "b": {}}
	if err := os.WriteFile(path, encodeLegacyState(t, "/r", newTestSnapshot(t, 5, items), time.Now()), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || s.Generation() != 5 || !s.FromStateFile() || !st.legacy {
		t.Fatalf("legacy load: %v %v (legacy %v)", s, err, st.legacy)
	}
	checkItems(t, s, items)
	items6 := withItem(items, "c", "new")
	if err := st.write(newTestSnapshot(t, 6, items6)); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 3 || !st.last.newPack {
		t.Fatalf("migration wrote %+v, want every content to a new pack", st.last)
	}
	if c := committed(t, path, "/r"); c.format != stateFormat {
		t.Fatalf("state file not rewritten in format %d: %d", stateFormat, c.format)
	}
	s, err = loadState(path, "/r")
	if err != nil || s.Generation() != 6 {
		t.Fatalf("after migration: %v %v", s, err)
	}
	checkItems(t, s, items6)
}

// writeV2State lays out the format 2 state of s at path, as zkconf wrote
// it before the pack: one file per distinct content, named by its hash.
func writeV2State(t *testing.T, path, root string, s *Snapshot) {
	t.Helper()
	if err := os.MkdirAll(path+itemDirSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Names() {
		d, _ := s.Get(n)
		if err := os.WriteFile(filepath.Join(path+itemDirSuffix, manifest.Hash(d)), d, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, encodeV2State(t, root, s, time.Now()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeV3State lays out the format 3 state of s at path, as zkconf wrote
// it before the commit record moved into the pack: a pack of the bare
// contents, and a commit file naming it and each content's offset.
func writeV3State(t *testing.T, path, root string, s *Snapshot) {
	t.Helper()
	if err := os.MkdirAll(path+itemDirSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	pack, at := packOf(s.itemMap())
	if err := os.WriteFile(filepath.Join(path+itemDirSuffix, packPrefix+"3333"), pack, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, encodeV3State(t, root, s, packPrefix+"3333", at, time.Now()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStateV3Layout: a format 3 state (a commit file naming a pack of
// bare contents) loads, and the first write converts it: a new, framed
// pack and a pointer, the older pack removed after the commit point, and
// the next write an append to the new pack.
func TestStateV3Layout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	items := bigSet(20, 100, "v3")
	items["dup"] = items["item003"]
	writeV3State(t, path, "/r", newTestSnapshot(t, 7, items))
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || s.Generation() != 7 || !st.legacy {
		t.Fatalf("format 3 load: %v %v (legacy %v)", s, err, st.legacy)
	}
	checkItems(t, s, items)
	if err := st.write(s); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 20 || !st.last.newPack || st.last.removedFiles != 1 || st.legacy {
		t.Fatalf("conversion: %+v, want 20 contents in a new pack and the old pack removed", st.last)
	}
	if p := onlyPack(t, path); filepath.Base(p) == packPrefix+"3333" {
		t.Fatal("the bare pack was kept")
	}
	if c := committed(t, path, "/r"); c.format != stateFormat {
		t.Fatalf("format %d after the conversion", c.format)
	}
	items8 := withItem(items, "item001", "eight")
	if err := st.write(newTestSnapshot(t, 8, items8)); err != nil {
		t.Fatal(err)
	}
	if st.last.newPack || st.last.itemFiles != 1 {
		t.Fatalf("the write after the conversion: %+v, want an append", st.last)
	}
	s, err = loadState(path, "/r")
	if err != nil || s.Generation() != 8 {
		t.Fatalf("after the conversion: %v %v", s, err)
	}
	checkItems(t, s, items8)
}

// TestStateV2Layout: a format 2 state (a file per item) loads, and the
// first write converts it: the generation packed, the item files removed
// after the commit point.
func TestStateV2Layout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	items := bigSet(20, 100, "v2")
	items["dup"] = items["item003"]
	writeV2State(t, path, "/r", newTestSnapshot(t, 7, items))
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || s.Generation() != 7 || !st.legacy {
		t.Fatalf("format 2 load: %v %v (legacy %v)", s, err, st.legacy)
	}
	checkItems(t, s, items)
	if err := st.write(s); err != nil {
		t.Fatal(err)
	}
	if st.last.itemFiles != 20 || !st.last.newPack || st.last.removedFiles != 20 || st.legacy {
		t.Fatalf("conversion: %+v, want 20 contents packed and 20 item files removed", st.last)
	}
	onlyPack(t, path)
	if c := committed(t, path, "/r"); c.format != stateFormat {
		t.Fatalf("format %d after the conversion", c.format)
	}
	s, err = loadState(path, "/r")
	if err != nil || s.Generation() != 7 {
		t.Fatalf("after the conversion: %v %v", s, err)
	}
	checkItems(t, s, items)
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
	h4 := h
	h4.Format = stateFormat + 1
	future, _ := json.Marshal(h4)
	// Format 3 with a pack name that is a path, an offset missing, one
	// too many, one negative; format 2 with a pack.
	_ = json.Unmarshal(h.Body, &b)
	b.Items = nil
	good3 := b
	b.Pack = "../../etc/pack-1"
	badPack := reseal(t, h, b)
	b = good3
	b.At = good3.At[:1]
	noOffset := reseal(t, h, b)
	b.At = append(slices.Clone(good3.At), 0)
	extraOffset := reseal(t, h, b)
	b.At = slices.Clone(good3.At)
	b.At[0] = -4
	negative := reseal(t, h, b)
	h2 := h
	h2.Format = stateFormatV2
	v2Pack := reseal(t, h2, good3)
	// Format 4: a pointer holding more than the pack's name, or a pack
	// name that is a path.
	hp := h
	hp.Format = stateFormat
	fatPointer := reseal(t, hp, good3)
	badPointer := reseal(t, hp, stateBody{Root: "/r", Pack: "../pack-1"})

	for name, data := range map[string][]byte{
		"other root":     good,
		"bit flip":       bytes.Replace(good, []byte(`"generation":2`), []byte(`"generation":3`), 1),
		"items inline":   inline,
		"tampered item":  tampered,
		"missing item":   missing,
		"future format":  future,
		"pack path":      badPack,
		"no offset":      noOffset,
		"extra offset":   extraOffset,
		"negative":       negative,
		"v2 with pack":   v2Pack,
		"fat pointer":    fatPointer,
		"pointer path":   badPointer,
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
// apply appends exactly the changed item's bytes (and its commit record)
// to the one pack; a crash between the contents' append and the commit
// record (the hook fails the write there) restarts from the previous
// generation; a corrupt pack makes the
// restarted cache start from nothing and re-read everything.
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
	pack := onlyPack(t, path)
	before, _ := os.Stat(pack)
	v2 := maps.Clone(v1)
	v2["item007"] = []byte("second")
	g2, _ := pub.publish(v2)
	waitGen(t, c, g2, v2)
	after, err := os.Stat(onlyPack(t, path))
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("pack not appended to: %v", err)
	}
	if fs, bs, _ := lastFrame(t, pack); fs != before.Size() || bs != fs+int64(len("second")) {
		t.Fatalf("the apply's frame holds [%d, %d), want the changed item only, appended at %d", fs, bs, before.Size())
	}

	// The crash: the next apply stops before its commit record.
	c.Close()
	c = start()
	waitGen(t, c, g2, v2)
	// The hook takes an image of the state as a crash at this point
	// leaves it (the pack's new contents written, no commit record for
	// them); the write then fails, and the cache, which lives on,
	// removes the older commit file (TestStateNotLeftBehindOnFullDisk).
	// The restart below starts from the image: what the dead process
	// left.
	crashed := make(chan struct{}, 1)
	image := t.TempDir()
	hook := func(step string) error {
		if step != stepAppended {
			return nil
		}
		select {
		case crashed <- struct{}{}:
			if out, err := exec.Command("cp", "-a", path, path+itemDirSuffix, image).CombinedOutput(); err != nil {
				return fmt.Errorf("image of the state: %v: %s", err, out)
			}
		default:
		}
		return errors.New("simulated crash before the commit point")
	}
	c.store.crashAt.Store(&hook)
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

	// Corrupt one item's bytes in the pack: the state is ignored as a
	// whole, logged.
	pack = onlyPack(t, path)
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	b[committed(t, path, "/config").at[manifest.Hash(v2["item003"])]] ^= 1
	if err := os.WriteFile(pack, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c = start()
	if s := c.Snapshot(); s != nil {
		t.Fatalf("served generation %d with a corrupt pack", s.Generation())
	}
	if !strings.Contains(buf.String(), "ignoring the state file") || !strings.Contains(buf.String(), "item003") {
		t.Fatalf("not logged:\n%s", buf.String())
	}
	zkc.Restart(0)
	waitGen(t, c, g3, v3)
	c.Close()
	if p := onlyPack(t, path); p == pack {
		t.Fatal("the corrupt pack was appended to")
	}
	if s, err := loadState(path, "/config"); err != nil || s.Generation() != g3 {
		t.Fatalf("state after recovery: %v %v", s, err)
	}
}

// TestCacheConvertsOldLayout: a cache started on a state directory of an
// older layout (format 3: a commit file and a pack of bare contents;
// format 2: a file per item; format 1: items inline) serves its generation
// at once, before ZooKeeper answers, and converts the directory to the
// framed pack: one pack, no older file left, the same generation.
func TestCacheConvertsOldLayout(t *testing.T) {
	zkc := zktest.Start(t)
	addrs := zkc.Addrs()
	zkc.Stop(0) // the restarts below serve from the state file alone
	for _, tc := range []struct {
		name   string
		format int
		lay    func(t *testing.T, path string, s *Snapshot)
	}{
		{"v3", stateFormatV3, func(t *testing.T, path string, s *Snapshot) { writeV3State(t, path, "/config", s) }},
		{"v2", stateFormatV2, func(t *testing.T, path string, s *Snapshot) { writeV2State(t, path, "/config", s) }},
		{"v1", stateFormatV1, func(t *testing.T, path string, s *Snapshot) {
			if err := os.WriteFile(path, encodeLegacyState(t, "/config", s, time.Now()), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, buf := testLogger(t)
			path := filepath.Join(t.TempDir(), "state")
			items := bigSet(20, 1024, "old")
			tc.lay(t, path, newTestSnapshot(t, 12, items))
			if c := committed(t, path, "/config"); c.format != tc.format {
				t.Fatalf("laid out format %d", c.format)
			}
			c := newCache(t, "/config", WithServers(addrs, 4*time.Second), WithLogger(log), WithStateFile(path))
			s := c.Snapshot()
			if s == nil || s.Generation() != 12 || !s.FromStateFile() {
				t.Fatalf("served %v, want generation 12 from the old layout", s)
			}
			checkItems(t, s, items)
			onlyPack(t, path)
			if cm := committed(t, path, "/config"); cm.format != stateFormat {
				t.Fatalf("format %d after the start", cm.format)
			}
			if !strings.Contains(buf.String(), "converted the state file to the packed layout") {
				t.Fatalf("conversion not logged:\n%s", buf.String())
			}
			c.Close()
			got, err := loadState(path, "/config")
			if err != nil || got.Generation() != 12 {
				t.Fatalf("after the conversion: %v %v", got, err)
			}
			checkItems(t, got, items)
		})
	}
}

// encodedState is a valid state file of generation 2 for root "/r" holding
// items, and its decoded header.
func encodedState(t *testing.T, items map[string][]byte) ([]byte, stateHeader) {
	t.Helper()
	good := encodeTestState(t, "/r", newTestSnapshot(t, 2, items), time.Now())
	var h stateHeader
	if err := json.Unmarshal(good, &h); err != nil {
		t.Fatal(err)
	}
	return good, h
}

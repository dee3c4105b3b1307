package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/fuzzdir"
	"github.com/zkconf/zkconf/manifest"
)

var fzRoots = []string{"/config", "/config/web", "/c"}

// fzItems are the contents whose item files every fuzzed commit file finds
// in its item directory.
var fzItems = map[string][]byte{"app.json": []byte(`{"port": 80}`), "empty": {}, "bin": {0, 0xff, 1}, "a": bytes.Repeat([]byte("x"), 5000), "b": []byte("bee")}

func fzSnapshot(gen int64, items map[string][]byte) *Snapshot {
	m := &manifest.Manifest{Format: 1, Generation: gen, PublishID: "pid-1", PublishedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Publisher: "u@h", Mode: manifest.ModeMulti, Items: map[string]manifest.Item{}}
	for n, d := range items {
		m.Items[n] = manifest.ItemOf(d)
	}
	return newSnapshot(m, 4294967321, items, false)
}

// fzState is a valid commit file of the older format 3 for root, whose
// contents are in the bare pack fzStore writes (a content that is not there
// is given offset 0, where it does not match).
func fzState(tb testing.TB, root string, gen int64, items map[string][]byte) []byte {
	tb.Helper()
	_, all := packOf(fzItems)
	at := map[string]int64{}
	for _, d := range items {
		at[manifest.Hash(d)] = all[manifest.Hash(d)]
	}
	return encodeV3State(tb, root, fzSnapshot(gen, items), fzPack, at, time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC))
}

// fzPack is the name of the bare pack (format 3) fzStore writes, and
// fzFramed of its framed pack (format 4), which holds two generations of
// fzRoots[0]: fzFramedGens.
const (
	fzPack   = "pack-1"
	fzFramed = "pack-2"
)

// fzFramedGens are the generations fzStore writes to the framed pack, in
// order (the last is the one it loads as).
var fzFramedGens = []map[string][]byte{
	{"app.json": fzItems["app.json"], "a": fzItems["a"]},
	{"app.json": fzItems["app.json"], "a": fzItems["a"], "b": fzItems["b"], "empty": {}},
}

// fzPointer is the pointer (format 4) to pack for root.
func fzPointer(tb testing.TB, root, pack string) []byte {
	tb.Helper()
	b, err := encodePointer(root, pack)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// packOf is a pack holding the distinct contents of items (in the order
// of their hashes) and the offset of each.
func packOf(items map[string][]byte) ([]byte, map[string]int64) {
	byHash := map[string][]byte{}
	for _, d := range items {
		byHash[manifest.Hash(d)] = d
	}
	var pack []byte
	at := map[string]int64{}
	for _, h := range slices.Sorted(maps.Keys(byHash)) {
		at[h] = int64(len(pack))
		pack = append(pack, byHash[h]...)
	}
	return pack, at
}

// encodeTestState is the commit file of the older format 3 of s for root,
// its contents in a pack named fzPack as packOf lays it out.
func encodeTestState(tb testing.TB, root string, s *Snapshot, now time.Time) []byte {
	tb.Helper()
	_, at := packOf(s.itemMap())
	return encodeV3State(tb, root, s, fzPack, at, now)
}

// encodeV3State is the format 3 commit file of s (its contents at the
// offsets at of the bare pack pack), as zkconf wrote it before the commit
// record moved into the pack.
func encodeV3State(tb testing.TB, root string, s *Snapshot, pack string, at map[string]int64, now time.Time) []byte {
	tb.Helper()
	var offsets []int64
	seen := map[string]bool{}
	for i := range s.names {
		h := s.items[i].meta.SHA256
		if !seen[h] {
			seen[h] = true
			offsets = append(offsets, at[h])
		}
	}
	saved := now.UTC()
	return encodeOldState(tb, stateFormatV3, stateBody{Root: root, Zxid: s.zxid, SavedAt: &saved, Manifest: s.Manifest().Encode(), Left: s.left, Pack: pack, At: offsets})
}

// encodeLegacyState is the format 1 state file (every item inline), as
// zkconf wrote it before the item directory.
func encodeLegacyState(tb testing.TB, root string, s *Snapshot, now time.Time) []byte {
	tb.Helper()
	saved := now.UTC()
	return encodeOldState(tb, stateFormatV1, stateBody{Root: root, Zxid: s.zxid, SavedAt: &saved, Manifest: s.Manifest().Encode(), Items: s.itemMap()})
}

// encodeV2State is the format 2 commit file (contents in one file per
// hash in the item directory), as zkconf wrote it before the pack.
func encodeV2State(tb testing.TB, root string, s *Snapshot, now time.Time) []byte {
	tb.Helper()
	saved := now.UTC()
	return encodeOldState(tb, stateFormatV2, stateBody{Root: root, Zxid: s.zxid, SavedAt: &saved, Manifest: s.Manifest().Encode(), Left: s.left})
}

func encodeOldState(tb testing.TB, format int, b stateBody) []byte {
	body, err := json.Marshal(b)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := json.Marshal(stateHeader{Kind: stateKind, Format: format, Checksum: sha256hex(body), Body: body})
	if err != nil {
		tb.Fatal(err)
	}
	return append(out, '\n')
}

// fzStore is a state path whose item directory holds fzItems' bare pack
// (fzPack), their item files of format 2, and the framed pack fzFramed.
func fzStore(f *testing.F) string {
	path := filepath.Join(fuzzdir.Temp(f), "snapshot.state")
	if err := os.Mkdir(path+itemDirSuffix, 0o700); err != nil {
		f.Fatal(err)
	}
	for _, d := range fzItems {
		if err := os.WriteFile(filepath.Join(path+itemDirSuffix, manifest.Hash(d)), d, 0o600); err != nil {
			f.Fatal(err)
		}
	}
	pack, _ := packOf(fzItems)
	if err := os.WriteFile(filepath.Join(path+itemDirSuffix, fzPack), pack, 0o600); err != nil {
		f.Fatal(err)
	}
	framed := filepath.Join(filepath.Dir(path), "framed", "state")
	st := newStateStore(framed, fzRoots[0])
	for i, items := range fzFramedGens {
		if err := st.write(fzSnapshot(int64(i+1), items)); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(st.dir, st.pack), filepath.Join(path+itemDirSuffix, fzFramed)); err != nil {
		f.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(framed)); err != nil {
		f.Fatal(err)
	}
	return path
}

// FuzzStateFile feeds the state loader an arbitrary commit file (its item
// directory holds the seeds' items, packed and in item files): it never panics, every failure is
// errStateFile (the caller ignores the state with a warning), and a state
// it accepts holds a snapshot whose every item matches its manifest, that
// is tied to its root, and that survives being written and read again.
func FuzzStateFile(f *testing.F) {
	f.Add(fzState(f, "/config", 7, map[string][]byte{"app.json": fzItems["app.json"], "empty": {}, "bin": fzItems["bin"]}), uint8(0))
	f.Add(fzState(f, "/config/web", 1, map[string][]byte{}), uint8(1))
	f.Add(fzState(f, "/c", 3, map[string][]byte{"a": fzItems["a"], "a2": fzItems["a"]}), uint8(2))
	f.Add(fzState(f, "/config", 7, map[string][]byte{"a": []byte("1")}), uint8(0))  // item file missing
	f.Add(fzState(f, "/config", 7, map[string][]byte{"b": fzItems["b"]}), uint8(1)) // another root's
	f.Add(encodeLegacyState(f, "/config", fzSnapshot(4, map[string][]byte{"x": []byte("y")}), time.Unix(5, 0)), uint8(0))
	f.Add(encodeV2State(f, "/config", fzSnapshot(5, map[string][]byte{"app.json": fzItems["app.json"], "b": fzItems["b"]}), time.Unix(5, 0)), uint8(0))
	f.Add(encodeV2State(f, "/c", fzSnapshot(5, map[string][]byte{"x": []byte("1")}), time.Unix(5, 0)), uint8(2)) // item file missing
	f.Add(fzPointer(f, "/config", fzFramed), uint8(0))
	f.Add(fzPointer(f, "/c", fzFramed), uint8(2))      // the records are another root's
	f.Add(fzPointer(f, "/config", fzPack), uint8(0))   // a bare pack
	f.Add(fzPointer(f, "/config", "pack-9"), uint8(0)) // missing
	for _, s := range []string{"", "\n", "{}", "null", `{"kind":"zkconf-cache-state","format":2}`,
		`{"kind":"zkconf-cache-state","format":3,"checksum":"","body":{}}`,
		`{"kind":"zkconf-cache-state","format":2,"checksum":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","body":{}}`} {
		f.Add([]byte(s), uint8(0))
	}
	path := fzStore(f)
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		fzCheckState(t, path, data, fzRoots[int(sel)%len(fzRoots)])
	})
}

// FuzzStateBody fuzzes the body of a commit file (format 3, 2 or 1 by
// sel%4) or of a pointer (format 4, sel%4 == 3) under a correct checksum,
// so that mutations get past it into the body, manifest, pack and item
// checks.
func FuzzStateBody(f *testing.F) {
	formats := []int{stateFormatV3, stateFormatV2, stateFormatV1, stateFormat}
	for i, root := range fzRoots {
		var h stateHeader
		items := map[string][]byte{"a.json": fzItems["app.json"], "b": fzItems["b"]}
		if err := json.Unmarshal(fzState(f, root, int64(i+1), items), &h); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(h.Body), uint8(i*4))
		if err := json.Unmarshal(encodeV2State(f, root, fzSnapshot(int64(i+1), items), time.Unix(1, 0)), &h); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(h.Body), uint8(i*4+1))
		if err := json.Unmarshal(encodeLegacyState(f, root, fzSnapshot(int64(i+1), map[string][]byte{"b": fzItems["b"]}), time.Unix(1, 0)), &h); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(h.Body), uint8(i*4+2))
		if err := json.Unmarshal(fzPointer(f, root, fzFramed), &h); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(h.Body), uint8(i*4+3))
	}
	f.Add([]byte(`{"root":"/config","pack":"pack-2","zxid":3}`), uint8(3))
	f.Add([]byte(`{"root":"/config","pack":"pack-2","extra":1}`), uint8(3))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{}}}`), uint8(1))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{}},"pack":"pack-1","at":{}}`), uint8(0))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{}},"pack":"../x","at":{}}`), uint8(0))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"x":{"sha256":"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881","size":1}}},"items":{"x":"eA=="}}`), uint8(2))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"x":{"sha256":"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881","size":1}}},"items":{"x":"eA=="}}`), uint8(1))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"x":{"sha256":"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881","size":1}}},"pack":"pack-1","at":{"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881":-1}}`), uint8(0))
	f.Add([]byte(`{"root":"/config","zxid":-5,"manifest":null,"items":{"x":null}}`), uint8(1))
	path := fzStore(f)
	f.Fuzz(func(t *testing.T, body []byte, sel uint8) {
		format := formats[int(sel)%4]
		sum := sha256.Sum256(body)
		data := fmt.Appendf(nil, `{"kind":%q,"format":%d,"checksum":%q,"body":%s}`, stateKind, format, hex.EncodeToString(sum[:]), body)
		fzCheckState(t, path, data, fzRoots[int(sel/4)%len(fzRoots)])
	})
}

// fzCheckState checks one commit file against the loader's promises.
func fzCheckState(t *testing.T, path string, data []byte, root string) {
	_, derr := decodeState(root, data)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(path, root)
	if derr != nil && err == nil {
		t.Fatalf("loadState accepted a commit file decodeState refuses: %v", derr)
	}
	if err == nil && s == nil {
		t.Fatalf("loadState of an existing file returned neither snapshot nor error")
	}
	if err != nil {
		if s != nil {
			t.Fatalf("snapshot returned with error %v", err)
		}
		if !errors.Is(err, errStateFile) {
			t.Fatalf("error does not match errStateFile: %v", err)
		}
		return
	}
	m := s.Manifest()
	if s.Generation() < 1 || s.Zxid() <= 0 || !s.FromStateFile() || s.Len() != len(m.Items) {
		t.Fatalf("accepted snapshot: generation %d zxid %d persisted %v len %d/%d", s.Generation(), s.Zxid(), s.FromStateFile(), s.Len(), len(m.Items))
	}
	items := map[string][]byte{}
	for _, n := range s.Names() {
		d, ok := s.Get(n)
		if !ok || !m.Matches(n, d) {
			t.Fatalf("accepted snapshot's item %q does not match its manifest", n)
		}
		if err := manifest.ValidateName(n); err != nil {
			t.Fatalf("accepted snapshot holds item name %q: %v", n, err)
		}
		items[n] = d
	}
	for _, other := range fzRoots {
		if other != root {
			if _, err := decodeState(other, data); err == nil {
				t.Fatalf("a state file of root %s is accepted for root %s", root, other)
			}
		}
	}
	out := filepath.Join(filepath.Dir(path), "roundtrip", "state")
	defer os.RemoveAll(filepath.Dir(out))
	if err := writeState(out, root, s); err != nil {
		t.Fatalf("an accepted snapshot cannot be written: %v", err)
	}
	s2, err := loadState(out, root)
	if err != nil {
		t.Fatalf("a written snapshot cannot be read back: %v", err)
	}
	got := map[string][]byte{}
	for _, n := range s2.Names() {
		got[n], _ = s2.Get(n)
	}
	if !bytes.Equal(s2.Manifest().Encode(), m.Encode()) || s2.Zxid() != s.Zxid() ||
		!maps.EqualFunc(got, items, bytes.Equal) {
		t.Fatalf("write/read changed the snapshot")
	}
}

// FuzzStatePackTail feeds the loader a framed pack (fzFramed: two
// generations) cut short by cut bytes and followed by an arbitrary tail,
// as a crash in the middle of an append or a disk's garbage leaves it: it
// never panics, it loads one of the pack's generations whole (never an
// error: the first frame is intact, and nothing in a tail passes for a
// commit record without the pack's key), and the next write cuts the tail
// off and appends a frame that loads.
func FuzzStatePackTail(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{}, uint16(10))
	f.Add(make([]byte, 4096), uint16(0))
	f.Add([]byte(trailerMagic+"\x00\x00\x00\x00\x00\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x02{}"), uint16(3))
	f.Add(bytes.Repeat([]byte(trailerMagic), 20), uint16(64))
	path := fzStore(f)
	src, err := os.ReadFile(filepath.Join(path+itemDirSuffix, fzFramed))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tail []byte, cut uint16) {
		dir := filepath.Join(filepath.Dir(path), "tail")
		defer os.RemoveAll(dir)
		state := filepath.Join(dir, "state")
		if err := os.MkdirAll(state+itemDirSuffix, 0o700); err != nil {
			t.Fatal(err)
		}
		n := max(len(src)-int(cut), 0)
		pack := append(bytes.Clone(src[:n]), tail...)
		if err := os.WriteFile(filepath.Join(state+itemDirSuffix, fzFramed), pack, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(state, fzPointer(t, fzRoots[0], fzFramed), 0o600); err != nil {
			t.Fatal(err)
		}
		st := newStateStore(state, fzRoots[0])
		s, err := st.load()
		if n < packHeaderSize {
			if err == nil {
				t.Fatalf("a pack without its header loaded")
			}
			return
		}
		if err != nil || s == nil || s.Generation() < 1 || s.Generation() > int64(len(fzFramedGens)) {
			// A cut into the first frame leaves no commit.
			if first := fzFirstFrameEnd(t, src); n < first && err != nil && errors.Is(err, errStateFile) {
				return
			}
			// A tail flooded with trailer magic: given up on.
			if bytes.Count(pack, []byte(trailerMagic)) > maxScanCandidates && errors.Is(err, errStateFile) {
				return
			}
			t.Fatalf("loaded generation %d, %v", genOf(s), err)
		}
		want := fzFramedGens[s.Generation()-1]
		got := s.itemMap()
		if !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("generation %d loaded with other items", s.Generation())
		}
		end := st.end
		next := fzSnapshot(9, map[string][]byte{"app.json": fzItems["app.json"], "new": []byte("new")})
		if err := st.write(next); err != nil {
			t.Fatalf("write after the tail: %v", err)
		}
		if !st.last.newPack {
			b, _ := os.ReadFile(filepath.Join(state+itemDirSuffix, fzFramed))
			if fs := int64(binary.BigEndian.Uint64(b[len(b)-packTrailerSize+8:])); fs != end {
				t.Fatalf("the new frame starts at %d, want %d", fs, end)
			}
		}
		s2, err := loadState(state, fzRoots[0])
		if err != nil || s2.Generation() != 9 {
			t.Fatalf("after the write: generation %d, %v", genOf(s2), err)
		}
	})
}

// fzFirstFrameEnd is where the first frame of the framed pack src ends.
func fzFirstFrameEnd(t *testing.T, src []byte) int {
	t.Helper()
	i := bytes.Index(src, []byte(trailerEnd))
	if i < 0 {
		t.Fatal("no trailer in the framed pack")
	}
	return i + len(trailerEnd)
}

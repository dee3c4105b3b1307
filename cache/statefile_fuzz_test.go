package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/manifest"
)

var fzRoots = []string{"/config", "/config/web", "/c"}

// fzState is a valid state file for root.
func fzState(tb testing.TB, root string, gen int64, items map[string][]byte) []byte {
	tb.Helper()
	m := &manifest.Manifest{Format: 1, Generation: gen, PublishID: "pid-1", PublishedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Publisher: "u@h", Mode: manifest.ModeMulti, Items: map[string]manifest.Item{}}
	for n, d := range items {
		m.Items[n] = manifest.ItemOf(d)
	}
	b, err := encodeState(root, newSnapshot(m, 4294967321, items, false), time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzStateFile feeds the state-file loader arbitrary bytes: it never
// panics, every failure is errStateFile (the caller ignores the file with
// a warning), and a file it accepts holds a snapshot whose every item
// matches its manifest, that is tied to its root, and that survives being
// written and read again.
func FuzzStateFile(f *testing.F) {
	f.Add(fzState(f, "/config", 7, map[string][]byte{"app.json": []byte(`{"port": 80}`), "empty": {}, "bin": {0, 0xff, 1}}), uint8(0))
	f.Add(fzState(f, "/config/web", 1, map[string][]byte{}), uint8(1))
	f.Add(fzState(f, "/c", 3, map[string][]byte{"a": bytes.Repeat([]byte("x"), 5000)}), uint8(2))
	f.Add(fzState(f, "/config", 7, map[string][]byte{"a": []byte("1")}), uint8(1)) // another root's
	for _, s := range []string{"", "\n", "{}", "null", `{"kind":"zkconf-cache-state","format":1}`,
		`{"kind":"zkconf-cache-state","format":2,"checksum":"","body":{}}`,
		`{"kind":"zkconf-cache-state","format":1,"checksum":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","body":{}}`} {
		f.Add([]byte(s), uint8(0))
	}
	path := filepath.Join(fzTempDir(f), "snapshot.state")
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		fzCheckState(t, path, data, fzRoots[int(sel)%len(fzRoots)])
	})
}

// FuzzStateBody fuzzes the body of a state file under a correct checksum,
// so that mutations get past it into the body, manifest and item checks.
func FuzzStateBody(f *testing.F) {
	for i, root := range fzRoots {
		var h stateHeader
		if err := json.Unmarshal(fzState(f, root, int64(i+1), map[string][]byte{"a.json": []byte(`{}`), "b": []byte("bee")}), &h); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(h.Body), uint8(i))
	}
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{}},"items":{}}`), uint8(0))
	f.Add([]byte(`{"root":"/config","zxid":1,"manifest":{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"x":{"sha256":"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881","size":1}}},"items":{"x":"eA=="}}`), uint8(0))
	f.Add([]byte(`{"root":"/config","zxid":-5,"manifest":null,"items":{"x":null}}`), uint8(0))
	path := filepath.Join(fzTempDir(f), "snapshot.state")
	f.Fuzz(func(t *testing.T, body []byte, sel uint8) {
		sum := sha256.Sum256(body)
		data := fmt.Appendf(nil, `{"kind":%q,"format":%d,"checksum":%q,"body":%s}`, stateKind, stateFormat, hex.EncodeToString(sum[:]), body)
		fzCheckState(t, path, data, fzRoots[int(sel)%len(fzRoots)])
	})
}

// fzCheckState checks one state file against the loader's promises.
func fzCheckState(t *testing.T, path string, data []byte, root string) {
	s, err := decodeState(root, data)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ls, lerr := loadState(path, root)
	if (lerr == nil) != (err == nil) && len(bytes.TrimSpace(data)) > 0 {
		t.Fatalf("decodeState and loadState disagree: %v / %v", err, lerr)
	}
	if lerr == nil && ls == nil && len(data) > 0 {
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
	out, err := encodeState(root, s, time.Now())
	if err != nil {
		t.Fatalf("an accepted snapshot cannot be written: %v", err)
	}
	s2, err := decodeState(root, out)
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

// fzTempDir is a directory for files written on every fuzz input: on
// tmpfs when there is one, because a disk shared with fsync-heavy tests
// stalls the fuzzer.
func fzTempDir(f *testing.F) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "zkconf-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return f.TempDir()
}

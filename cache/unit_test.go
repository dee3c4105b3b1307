package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/manifest"
)

func newTestSnapshot(t *testing.T, gen int64, items map[string][]byte) *Snapshot {
	t.Helper()
	m := &manifest.Manifest{Format: manifest.FormatVersion, Generation: gen, PublishID: "p" + string(rune('a'+gen%26)),
		PublishedAt: time.Unix(1700000000, 0).UTC(), Publisher: "u@h", Mode: manifest.ModeMulti, Items: map[string]manifest.Item{}}
	for n, d := range items {
		m.Items[n] = manifest.ItemOf(d)
	}
	// Round-trip through Decode so the manifest is validated like a real one.
	m, err := manifest.Decode(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return newSnapshot(m, 1000+gen, items, false)
}

func TestSnapshotAccessors(t *testing.T) {
	items := map[string][]byte{"b": []byte("2"), "a": []byte("1"), "empty": {}}
	s := newTestSnapshot(t, 3, items)
	if s.Generation() != 3 || s.Zxid() != 1003 || s.Len() != 3 || s.FromStateFile() {
		t.Fatalf("accessors: %d %d %d", s.Generation(), s.Zxid(), s.Len())
	}
	names := s.Names()
	if want := []string{"a", "b", "empty"}; !equalStrings(names, want) {
		t.Fatalf("names %v", names)
	}
	names[0] = "mutated"
	if s.Names()[0] != "a" {
		t.Fatal("Names shares its slice")
	}
	m := s.Manifest()
	delete(m.Items, "a")
	if _, ok := s.Manifest().Items["a"]; !ok {
		t.Fatal("Manifest shares its map")
	}
	if v, ok := s.Get("a"); !ok || string(v) != "1" {
		t.Fatal("Get")
	}
	if _, ok := s.Get("zz"); ok {
		t.Fatal("Get of a missing item")
	}
	if !s.supersededBy(4, 1004) || s.supersededBy(4, 1003) || s.supersededBy(3, 2000) || s.supersededBy(2, 5000) {
		t.Fatal("supersededBy must require both generation and zxid to grow")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStateFileRoundTrip(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "bin": {0, 1, 2, 255}, "empty": {}}
	s := newTestSnapshot(t, 9, items)
	path := filepath.Join(t.TempDir(), "d1", "d2", "state.json")
	if err := writeState(path, "/r", s); err != nil {
		t.Fatal(err)
	}
	if m := fileMode(t, path); m != 0o600 {
		t.Fatalf("mode %o", m)
	}
	if m := fileMode(t, filepath.Dir(path)); m != 0o700 {
		t.Fatalf("dir mode %o", m)
	}
	got, err := loadState(path, "/r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation() != 9 || got.Zxid() != s.Zxid() || got.PublishID() != s.PublishID() || !got.FromStateFile() {
		t.Fatalf("loaded %+v", got)
	}
	checkItems(t, got, items)
	// Overwrite keeps one file, no temporaries.
	if err := writeState(path, "/r", newTestSnapshot(t, 10, items)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("%d files in the state directory", len(ents))
	}
	if s, _ := loadState(filepath.Join(t.TempDir(), "missing"), "/r"); s != nil {
		t.Fatal("missing file loaded")
	}
}

func TestStateFileRejects(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}
	good, err := encodeState("/r", newTestSnapshot(t, 2, items), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var h stateHeader
	if err := json.Unmarshal(good, &h); err != nil {
		t.Fatal(err)
	}
	// A body whose checksum is right but whose item does not match its
	// manifest (written by something else, or a bug) is refused too.
	var b stateBody
	_ = json.Unmarshal(h.Body, &b)
	b.Items["a"] = []byte("tampered")
	tampered := reseal(t, h, b)
	b.Items = map[string][]byte{"a": []byte("alpha")}
	missing := reseal(t, h, b)
	h2 := h
	h2.Format = 2
	future, _ := json.Marshal(h2)

	for name, data := range map[string][]byte{
		"other root":     good,
		"bit flip":       bytes.Replace(good, []byte(`"generation":2`), []byte(`"generation":3`), 1),
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

func sha256hex(b []byte) string { return manifest.Hash(b) }

func TestBackoffBounds(t *testing.T) {
	for attempt := 1; attempt < 40; attempt++ {
		d := tornBackoff(attempt)
		if d <= 0 || d > tornSlowCap {
			t.Fatalf("torn backoff %d = %v", attempt, d)
		}
		if attempt <= tornPatience && d > tornCap {
			t.Fatalf("torn backoff %d = %v above %v", attempt, d, tornCap)
		}
		if e := backoff(errBase, errCap, attempt); e < errBase/2 || e > errCap {
			t.Fatalf("error backoff %d = %v", attempt, e)
		}
	}
	if d := tornBackoff(1); d > tornBase {
		t.Fatalf("first torn backoff %v", d)
	}
	for range 100 {
		if d := jittered(time.Minute); d < 54*time.Second || d > 66*time.Second {
			t.Fatalf("jittered %v", d)
		}
	}
}

func TestStateStrings(t *testing.T) {
	for s, want := range map[State]string{StateStarting: "starting", StateLive: "live", StateStale: "stale", StateExpired: "expired", State(9): "state(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", int(s), s.String())
		}
	}
	err := error(&BackwardsError{HeldGeneration: 5, SeenGeneration: 2})
	if !errors.Is(err, ErrBackwards) {
		t.Fatal("BackwardsError does not match ErrBackwards")
	}
}

// TestOfferLatestValue: a slow reader gets the newest value, never a
// backlog, and the sender never blocks.
func TestOfferLatestValue(t *testing.T) {
	ch := make(chan int, 1)
	for i := range 100 {
		offer(ch, i)
	}
	if v := <-ch; v != 99 {
		t.Fatalf("got %d", v)
	}
	select {
	case v := <-ch:
		t.Fatalf("backlog %d", v)
	default:
	}
}

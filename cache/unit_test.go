package cache

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
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

func sha256hex(b []byte) string { return manifest.Hash(b) }

func TestBackoffBounds(t *testing.T) {
	for attempt := 1; attempt < 40; attempt++ {
		d := tornDelay(attempt)
		if d <= 0 || d > tornSlow.Max {
			t.Fatalf("torn backoff %d = %v", attempt, d)
		}
		if attempt <= tornPatience && d > tornFast.Max {
			t.Fatalf("torn backoff %d = %v above %v", attempt, d, tornFast.Max)
		}
		if e := errBackoff.Delay(attempt); e < errBackoff.Base/2 || e > errBackoff.Max {
			t.Fatalf("error backoff %d = %v", attempt, e)
		}
	}
	if d := tornDelay(1); d > tornFast.Base {
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

// itemMap returns s's contents by name.
func (s *Snapshot) itemMap() map[string][]byte {
	m := make(map[string][]byte, len(s.names))
	for i, name := range s.names {
		m[name] = s.items[i].data
	}
	return m
}

// TestReuseHeld checks how a cycle assembles a generation from the held
// snapshot: an item whose manifest entry is unchanged takes the held
// content, every other one is to be read, and the positions, names and
// entries stay aligned whether the set of names is the held one's or not
// (added, removed and renamed items).
func TestReuseHeld(t *testing.T) {
	held := newTestSnapshot(t, 1, map[string][]byte{"a": []byte("A1"), "b": []byte("B1"), "c": []byte("C1")})
	cases := []struct {
		name     string
		items    map[string][]byte
		wantRead []string
	}{
		{"one changed", map[string][]byte{"a": []byte("A1"), "b": []byte("B2"), "c": []byte("C1")}, []string{"b"}},
		{"none changed", map[string][]byte{"a": []byte("A1"), "b": []byte("B1"), "c": []byte("C1")}, nil},
		{"all changed", map[string][]byte{"a": []byte("A2"), "b": []byte("B2"), "c": []byte("C2")}, []string{"a", "b", "c"}},
		{"renamed", map[string][]byte{"a": []byte("A1"), "bb": []byte("B1"), "c": []byte("C1")}, []string{"bb"}},
		{"added", map[string][]byte{"a": []byte("A1"), "b": []byte("B1"), "c": []byte("C1"), "d": []byte("D1")}, []string{"d"}},
		{"removed, one changed", map[string][]byte{"a": []byte("A2"), "c": []byte("C1")}, []string{"a"}},
		{"content moved to another name", map[string][]byte{"a": []byte("B1"), "b": []byte("A1"), "c": []byte("C1")}, []string{"a", "b"}},
		{"added first", map[string][]byte{"0": []byte("Z1"), "a": []byte("A1"), "b": []byte("B1"), "c": []byte("C1")}, []string{"0"}},
		{"removed first and last", map[string][]byte{"b": []byte("B2")}, []string{"b"}},
	}
	for _, tc := range cases {
		next := newTestSnapshot(t, 2, tc.items)
		for _, h := range []*Snapshot{held, nil} {
			names := next.names
			items, todo := reuseHeld(names, next.metas(), h)
			if len(items) != len(names) {
				t.Fatalf("%s: %d entries for names %q", tc.name, len(items), names)
			}
			var read []string
			for _, i := range todo {
				read = append(read, names[i])
			}
			want := tc.wantRead
			if h == nil {
				want = next.names
			}
			if !equalStrings(read, want) {
				t.Errorf("%s (held %v): reads %q, want %q", tc.name, h != nil, read, want)
			}
			for i, name := range names {
				if want := next.Manifest().Items[name]; items[i].meta != want {
					t.Errorf("%s: entry %d (%s) is %v, want %v", tc.name, i, name, items[i].meta, want)
				}
				if slices.Contains(todo, i) {
					if items[i].data != nil {
						t.Errorf("%s: item %s to read already has content %q", tc.name, name, items[i].data)
					}
				} else if string(items[i].data) != string(tc.items[name]) {
					t.Errorf("%s: item %s reused %q, want %q", tc.name, name, items[i].data, tc.items[name])
				}
			}
		}
	}
	if b, ok := held.Get("bb"); ok || b != nil {
		t.Errorf("Get of a missing item: %q, %v", b, ok)
	}
	for _, name := range []string{"a", "b", "c"} {
		if b, ok := held.Get(name); !ok || string(b) != strings.ToUpper(name)+"1" {
			t.Errorf("Get(%s) = %q, %v", name, b, ok)
		}
	}
}

// metas returns s's entries' manifest entries, in s.names' order (a root
// read's items).
func (s *Snapshot) metas() []manifest.Item {
	out := make([]manifest.Item, len(s.items))
	for i, e := range s.items {
		out[i] = e.meta
	}
	return out
}

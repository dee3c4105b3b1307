package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// checkSorted decodes data with DecodeOwnedSorted and fails unless it is
// exactly DecodeOwned's result in the other form: the same error (text
// too), the same manifest without its Items map, and the map's entries as
// the lists, names increasing. It reports whether data decoded.
func checkSorted(t *testing.T, data []byte) bool {
	t.Helper()
	want, werr := DecodeOwned(bytes.Clone(data))
	got, names, items, gerr := DecodeOwnedSorted(bytes.Clone(data))
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("on %q\nerror %v, DecodeOwned's %v", data, gerr, werr)
	}
	if werr != nil {
		if got != nil || names != nil || items != nil {
			t.Fatalf("on %q: a result with the error %v", data, gerr)
		}
		return false
	}
	if got.Items != nil {
		t.Fatalf("on %q: Items %v, want nil", data, got.Items)
	}
	if len(names) != len(items) || len(names) != len(want.Items) {
		t.Fatalf("on %q: %d names, %d entries, DecodeOwned's %d items", data, len(names), len(items), len(want.Items))
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("on %q: names %q not increasing", data, names)
	}
	for i, name := range names {
		if it, ok := want.Items[name]; !ok || it != items[i] {
			t.Fatalf("on %q: entry %s is %v, DecodeOwned's %v (%v)", data, name, items[i], it, ok)
		}
	}
	// WithItems gives DecodeOwned's manifest back, and the header is
	// every other field of it.
	if full := WithItems(got, names, items); !reflect.DeepEqual(full, want) {
		t.Fatalf("on %q\ngot  %#v\nwant %#v", data, full, want)
	}
	hdr := *want
	hdr.Items = nil
	if !reflect.DeepEqual(got, &hdr) {
		t.Fatalf("on %q\nheader %#v\nwant   %#v", data, got, &hdr)
	}
	return true
}

// randomManifest is a manifest of format f with up to 30 items named from
// a small set, some of them invalid for one format or both, and sometimes
// the optional fields.
func randomManifest(r *rand.Rand, f int) *Manifest {
	pool := []string{"a", "a.conf", "b", "b/c", "b/d", "c", "d.json", "e", "..x", ".hidden", "x y", "zz", "a/b/c", "ü", "b.d", "conf-01", "conf-02", "conf-03", "zookeeper"}
	m := &Manifest{Format: f, Generation: r.Int64N(100) + 1, PublishID: fmt.Sprint(r.IntN(5)), PublishedAt: time.Unix(r.Int64N(1e9), 0).UTC(),
		Publisher: "p", Mode: ModeMulti, Items: map[string]Item{}}
	if r.IntN(3) == 0 {
		m.Incarnation = NewIncarnation()
	}
	if r.IntN(4) == 0 {
		m.Message, m.RollbackOf = "rollback", r.Int64N(5)
	}
	if r.IntN(4) == 0 {
		m.Mode = ModeMarker
	}
	for range r.IntN(30) {
		name := pool[r.IntN(len(pool))]
		m.Items[name] = ItemOf([]byte{byte(r.IntN(3))})
	}
	return m
}

// TestDecodeOwnedSortedEqualsDecodeOwned holds the decoder that lists the
// items instead of filling the map equal to DecodeOwned over many
// manifests of both formats and every kind of damage to their bytes (a
// byte changed, removed or doubled anywhere), so over the canonical
// form, the forms it declines and the inputs that are no manifest.
func TestDecodeOwnedSortedEqualsDecodeOwned(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	valid, damaged, listed := 0, 0, 0
	for range 3000 {
		data := randomManifest(r, 1+r.IntN(2)).Encode()
		if checkSorted(t, data) {
			valid++
		}
		if _, ok := decodeCanonicalIn(data, string(data), &entryList{}); ok {
			listed++ // the list path itself, not DecodeOwned's map turned into lists
		}
		for range 8 {
			b := slices.Clone(data)
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = "\"\\/{}:,0af.\x01\xff "[r.IntN(14)]
			case 1:
				b = slices.Delete(b, i, i+1)
			case 2:
				b = slices.Insert(b, i, b[i])
			}
			if checkSorted(t, b) {
				damaged++
			}
		}
	}
	// The counts pin that both the accepting and the declining paths ran.
	if valid < 400 || damaged < 400 || listed < 150 {
		t.Fatalf("%d valid manifests (%d through the list path) and %d damaged ones that still decode, want 400, 150, 400", valid, listed, damaged)
	}
	for _, data := range []string{"", " ", `{"format":1}`, `{"format":9,"generation":1}`, `null`} {
		checkSorted(t, []byte(data))
	}
}

// FuzzDecodeOwnedSorted: on any input, DecodeOwnedSorted is DecodeOwned.
func FuzzDecodeOwnedSorted(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		f.Add(randomManifest(r, 1+r.IntN(2)).Encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSorted(t, data)
	})
}

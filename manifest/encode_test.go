package manifest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// encodeShapes are manifests whose encodings exercise every field and
// every kind of string: plain, with escapes (HTML, control, quote,
// backslash), non-ASCII, invalid UTF-8, U+2028; empty, nil and large item
// maps; times with and without fractions and zones.
func encodeShapes() []*Manifest {
	base := func() *Manifest {
		return &Manifest{Format: 1, Generation: 7, PublishID: "0123456789abcdef0123456789abcdef",
			PublishedAt: time.Date(2026, 11, 27, 5, 4, 3, 120_000_000, time.UTC), Publisher: "ops@host-1",
			Mode: ModeMulti, Incarnation: strings.Repeat("ab", 16),
			Items: map[string]Item{"b.conf": ItemOf([]byte("b")), "a.conf": ItemOf([]byte("a"))}}
	}
	var out []*Manifest
	add := func(f func(m *Manifest)) {
		m := base()
		f(m)
		out = append(out, m)
	}
	add(func(*Manifest) {})
	add(func(m *Manifest) { m.Items = nil })
	add(func(m *Manifest) { m.Items = map[string]Item{} })
	add(func(m *Manifest) { m.Mode, m.RollbackOf, m.Incarnation = ModeMarker, 3, "" })
	add(func(m *Manifest) { m.Message = "deploy <web> & \"db\" \\ \u2028 \u2029 caf\u00e9 \x01\t\n" })
	for _, c := range []string{"<", ">", "&", "\"", "\\", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\xff", "\u00e9", "\U0001F600"} {
		add(func(m *Manifest) { m.Publisher, m.Message = "u"+c+"@h", c })
		add(func(m *Manifest) { m.Items[c+".conf"] = Item{SHA256: c, Size: 1} })
	}
	add(func(m *Manifest) { m.Publisher = "bad\xffutf8" })
	add(func(m *Manifest) { m.Message = "\xe2\x80" })
	add(func(m *Manifest) { m.PublishedAt = time.Date(1, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600+60)) })
	add(func(m *Manifest) { m.PublishedAt = time.Time{} })
	add(func(m *Manifest) { m.PublishedAt = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC) })
	add(func(m *Manifest) { m.Generation, m.RollbackOf = 1<<63-1, -1<<63 })
	add(func(m *Manifest) { m.PromoteOf, m.AbortOf = 12, 13 })
	add(func(m *Manifest) {
		m.Format = FormatTree
		m.Items = map[string]Item{"conf.d/<x>&y": ItemOf(nil), "conf.d/\u00e9": {SHA256: "not hex \"", Size: -5},
			"a\u2028b": ItemOf([]byte("z")), "Z": ItemOf([]byte("Z")), "z": {}, "a/b/c": ItemOf([]byte("c"))}
	})
	add(func(m *Manifest) {
		m.Items = map[string]Item{}
		for i := range 300 {
			m.Items[strings.Repeat("n", i%7)+string(rune('a'+i%26))+strings.Repeat("x", i)] = ItemOf([]byte{byte(i)})
		}
	})
	add(func(m *Manifest) { m.Canary = &Canary{Generation: 9, RolloutID: "r"} })
	add(func(m *Manifest) { m.Candidate = &Selection{Selector: "zone=a", Percent: 12.5} })
	return out
}

// TestEncodeCanonicalMatchesJSON: Encode writes exactly encoding/json's
// bytes, and encodeCanonical declines only the rollout fields and times
// encoding/json cannot encode.
func TestEncodeCanonicalMatchesJSON(t *testing.T) {
	for i, m := range encodeShapes() {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("shape %d: json: %v", i, err)
		}
		got, ok := encodeCanonical(m)
		if rollout := m.Canary != nil || m.Candidate != nil; ok == rollout {
			t.Errorf("shape %d: encodeCanonical ok=%v with rollout fields %v", i, ok, rollout)
		}
		if ok && !bytes.Equal(got, want) {
			t.Errorf("shape %d: encodeCanonical\n got %s\nwant %s", i, got, want)
		}
		if enc := m.Encode(); !bytes.Equal(enc, want) {
			t.Errorf("shape %d: Encode\n got %s\nwant %s", i, enc, want)
		}
	}
	m := encodeShapes()[0]
	m.PublishedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := encodeCanonical(m); ok {
		t.Error("encodeCanonical accepted a year encoding/json refuses")
	}
}

// FuzzEncodeCanonical: for any strings, sizes and numbers, encodeCanonical
// writes exactly what encoding/json writes.
func FuzzEncodeCanonical(f *testing.F) {
	f.Add("p-1", "u@h", "", "a.conf", "deadbeef", int64(3), int64(1), int64(0), int64(0))
	f.Add("<&>", "caf\u00e9", "line\nbreak \u2028", "conf.d/a\"b", "\xff", int64(-1), int64(1<<62), int64(-3), int64(5))
	f.Fuzz(func(t *testing.T, id, publisher, message, name, sha string, size, gen, rollback, nanos int64) {
		m := &Manifest{Format: 1, Generation: gen, PublishID: id, PublishedAt: time.Unix(1_800_000_000, nanos%1_000_000_000).UTC(),
			Publisher: publisher, Mode: Mode(message), RollbackOf: rollback, Incarnation: sha, Message: message,
			Items: map[string]Item{name: {SHA256: sha, Size: size}, name + "x": {SHA256: id, Size: gen}}}
		want, err := json.Marshal(m)
		if err != nil {
			t.Skip()
		}
		got, ok := encodeCanonical(m)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("encodeCanonical (ok %v)\n got %s\nwant %s", ok, got, want)
		}
	})
}

// benchManifest is a manifest of 100 items, as a publish of 100 items
// encodes.
func benchManifest() *Manifest {
	m := encodeShapes()[0]
	m.Items = map[string]Item{}
	for i := range 100 {
		m.Items["item-"+strings.Repeat("0", 3-len(strconv.Itoa(i)))+strconv.Itoa(i)+".conf"] = ItemOf([]byte(strconv.Itoa(i)))
	}
	return m
}

// BenchmarkEncode100 is Encode of a 100-item manifest;
// BenchmarkEncodeJSON100 the same with encoding/json (Encode before
// encodeCanonical).
func BenchmarkEncode100(b *testing.B) {
	m := benchManifest()
	b.ReportAllocs()
	for range b.N {
		m.Encode()
	}
}

func BenchmarkEncodeJSON100(b *testing.B) {
	m := benchManifest()
	b.ReportAllocs()
	for range b.N {
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

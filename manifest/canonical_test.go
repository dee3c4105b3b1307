package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonStruct is what encoding/json and validate make of data in
// decodeJSON's one-pass case, the result decodeCanonical must reproduce.
func jsonStruct(data []byte) (*Manifest, bool) {
	var fast struct {
		Format *int `json:"format"`
		Manifest
	}
	if json.Unmarshal(data, &fast) != nil || fast.Format == nil || (*fast.Format != FormatVersion && *fast.Format != FormatTree) {
		return nil, false
	}
	m := fast.Manifest
	m.Format = *fast.Format
	if m.validate() != nil {
		return nil, false
	}
	return &m, true
}

// checkCanonical is the differential property, for any input: the fast
// path either declines, or returns exactly what encoding/json returns; and
// Decode (fast path first) behaves exactly as decodeJSON (encoding/json
// only): the same manifest, or an error of the same classes and text.
func checkCanonical(t *testing.T, data []byte) (accepted bool) {
	t.Helper()
	fm, ok := decodeCanonical(data)
	if ok {
		jm, jok := jsonStruct(data)
		if !jok {
			t.Fatalf("fast path accepted what encoding/json or validate refuses: %q", data)
		}
		if !reflect.DeepEqual(fm, jm) {
			t.Fatalf("fast path and encoding/json differ on %q:\nfast: %#v\njson: %#v", data, fm, jm)
		}
	} else if fm != nil {
		t.Fatal("declined with a manifest")
	}
	m1, err1 := Decode(data)
	m2, err2 := decodeJSON(data)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("Decode %v, decodeJSON %v on %q", err1, err2, data)
	}
	if err1 != nil {
		for _, class := range []error{ErrEmpty, ErrForeign, ErrFutureFormat} {
			if errors.Is(err1, class) != errors.Is(err2, class) {
				t.Fatalf("error classes differ on %q: %v / %v", data, err1, err2)
			}
		}
		if err1.Error() != err2.Error() {
			t.Fatalf("errors differ on %q: %v / %v", data, err1, err2)
		}
		if m1 != nil || m2 != nil {
			t.Fatal("manifest returned with an error")
		}
		if m3, err3 := DecodeOwned(bytes.Clone(data)); m3 != nil || err3 == nil || err3.Error() != err1.Error() {
			t.Fatalf("Decode and DecodeOwned differ on %q: %v / %v", data, err1, err3)
		}
		return ok
	}
	if !reflect.DeepEqual(m1, m2) {
		t.Fatalf("Decode and decodeJSON differ on %q:\n%#v\n%#v", data, m1, m2)
	}
	// DecodeOwned is Decode without the copy: the same manifest.
	if m3, err3 := DecodeOwned(bytes.Clone(data)); err3 != nil || !reflect.DeepEqual(m1, m3) {
		t.Fatalf("Decode and DecodeOwned differ on %q:\n%#v\n%#v (%v)", data, m1, m3, err3)
	}
	// What the fast path is for: Encode's own output, when it has no
	// escapes (names with <, >, & or U+2028/9 are escaped, and declined).
	if enc := m1.Encode(); !bytes.Contains(enc, []byte{'\\'}) {
		if _, ok := decodeCanonical(enc); !ok {
			t.Fatalf("fast path declined Encode's output %q", enc)
		}
	}
	return ok
}

// FuzzDecodeCanonical is the differential fuzz test of the fast path
// against encoding/json (checkCanonical), seeded with canonical manifests
// and near misses.
func FuzzDecodeCanonical(f *testing.F) {
	for _, s := range canonicalSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCanonical(t, data)
	})
}

func canonicalSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	sha := ItemOf([]byte("x")).SHA256
	m := &Manifest{Format: 1, Generation: 42, PublishID: "p-1", PublishedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Publisher: "u@h", Mode: ModeMulti, Items: map[string]Item{"app.json": ItemOf([]byte("{}")), "empty": ItemOf(nil), "日本.txt": ItemOf([]byte("x"))}}
	enc := m.Encode()
	marker := *m
	marker.Mode, marker.RollbackOf, marker.Items = ModeMarker, 7, nil
	emptyItems := *m
	emptyItems.Items = map[string]Item{}
	zone := *m
	zone.PublishedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+30*60))
	inc := *m
	inc.RollbackOf, inc.Incarnation = 3, "0123456789abcdef0123456789abcdef"
	incEnc := inc.Encode()
	msg := inc
	msg.Message = "alice: raise the pool size (TICKET-7) – ü"
	escMsg := inc
	escMsg.Message = `say "<hi>" \ & bye`
	seeds := [][]byte{enc, marker.Encode(), emptyItems.Encode(), zone.Encode(), incEnc, msg.Encode(), escMsg.Encode(),
		bytes.Replace(msg.Encode(), []byte(`"message":"alice`), []byte(`"message":"ali\u0063e`), 1),
		bytes.Replace(msg.Encode(), []byte(`"message":"alice`), []byte("\"message\":\"al\x01ice"), 1),
		bytes.Replace(msg.Encode(), []byte(`"message":"alice`), []byte(`"message":null,"message":"alice`), 1),
		bytes.Replace(msg.Encode(), []byte(`,"message":"alice: raise the pool size (TICKET-7) – ü"`), []byte(`,"message":""`), 1)}
	for _, r := range []struct{ old, new string }{
		{`"0123456789abcdef0123456789abcdef"`, `""`},
		{`"0123456789abcdef0123456789abcdef"`, `"0123456789ABCDEF0123456789abcdef"`},
		{`"0123456789abcdef0123456789abcdef"`, `"0123456789abcdef0123456789abcde"`},
		{`"0123456789abcdef0123456789abcdef"`, `null`},
		{`"0123456789abcdef0123456789abcdef"`, `"0123456789abcdef0123456789abcdef","incarnation":"fedcba98765432100123456789abcdef"`},
		{`"rollback_of":3,`, ``},
	} {
		if !bytes.Contains(incEnc, []byte(r.old)) {
			tb.Fatalf("seed %q not in %s", r.old, incEnc)
		}
		seeds = append(seeds, bytes.Replace(incEnc, []byte(r.old), []byte(r.new), 1))
	}
	for _, r := range []struct{ old, new string }{
		{`"generation":42`, `"generation":042`},
		{`"generation":42`, `"generation":42.0`},
		{`"generation":42`, `"generation":4e1`},
		{`"generation":42`, `"generation":-9223372036854775808`},
		{`"generation":42`, `"generation":9223372036854775807`},
		{`"generation":42`, `"generation":9223372036854775808`},
		{`"generation":42`, `"generation":-0`},
		{`"generation":42`, `"generation":"42"`},
		{`"format":1`, `"format":2`},
		{`"format":1`, `"format":1.0`},
		{`"format":1`, `"Format":1`},
		{`"publish_id":"p-1"`, `"publish_id":"p\u002d1"`},
		{`"publish_id":"p-1"`, `"publish_id":null`},
		{`"publish_id":"p-1"`, "\"publish_id\":\"p\x01\""},
		{`"publish_id":"p-1"`, "\"publish_id\":\"p\xff\""},
		{`"publisher":"u@h"`, `"publisher":"u@h","publisher":"x"`},
		{`"mode":"multi"`, `"mode":"marker"`},
		{`"mode":"multi"`, `"mode":"multi","rollback_of":0`},
		{`"mode":"multi"`, `"mode":"multi","rollback_of":-3`},
		{`"published_at":"2025-01-02T03:04:05.000000006Z"`, `"published_at":"2025-01-02T03:04:05.000000006+25:00"`},
		{`"published_at":"2025-01-02T03:04:05.000000006Z"`, `"published_at":"2025-01-02 03:04:05Z"`},
		{`"published_at":"2025-01-02T03:04:05.000000006Z"`, `"published_at":null`},
		{`"size":2`, `"size":-2`},
		{`"size":2`, `"size":2,"x":1`},
		{`"app.json"`, `"zzz"`},
		{`"app.json"`, `"empty"`},
		{`{"sha256"`, `{ "sha256"`},
		{`"` + sha + `"`, `"` + strings.ToUpper(sha) + `"`},
		{`"items":{`, `"items":{"a/b":{"sha256":"` + sha + `","size":1},`},
		{`"items":{`, `"items":{"invalid":{"sha256":"` + sha + `","size":1},`},
	} {
		if !bytes.Contains(enc, []byte(r.old)) {
			tb.Fatalf("seed %q not in %s", r.old, enc)
		}
		seeds = append(seeds, bytes.Replace(enc, []byte(r.old), []byte(r.new), 1))
	}
	// Trees: format 2 with paths (the fast path's), near misses of it.
	tree := *m
	tree.Format = FormatTree
	tree.Items = map[string]Item{"app.json": ItemOf([]byte("{}")), "conf.d/a": ItemOf(nil), "conf.d/sub/b": ItemOf([]byte("x")), "conf.d.bak": ItemOf(nil)}
	tenc := tree.Encode()
	seeds = append(seeds, tenc, bytes.Replace(tenc, []byte(`"format":2`), []byte(`"format":1`), 1),
		bytes.Replace(tenc, []byte(`"format":2`), []byte(`"format":3`), 1),
		bytes.Replace(tenc, []byte(`"conf.d/a"`), []byte(`"conf.d"`), 1),
		bytes.Replace(tenc, []byte(`"conf.d/a"`), []byte(`"conf.d//a"`), 1),
		bytes.Replace(tenc, []byte(`"conf.d/a"`), []byte(`"conf.d\/a"`), 1),
		bytes.Replace(tenc, []byte(`"conf.d/a"`), []byte(`"/conf.d/a"`), 1),
		bytes.Replace(tenc, []byte(`"conf.d/a"`), []byte(`"invalid/a"`), 1),
		bytes.Replace(tenc, []byte(`"app.json"`), []byte(`"conf.d/sub"`), 1))
	seeds = append(seeds, append(bytes.Clone(enc), ' '), append([]byte(" "), enc...), append(bytes.Clone(enc), '}'),
		enc[:len(enc)-1], []byte{}, []byte("{}"), []byte("null"), []byte(`{"format":1,"generation":1}`))
	return seeds
}

// TestDecodeCanonicalSeeds runs the differential check over the seeds and
// pins which of them the fast path takes.
func TestDecodeCanonicalSeeds(t *testing.T) {
	accepted := 0
	for _, s := range canonicalSeeds(t) {
		if checkCanonical(t, s) {
			accepted++
		}
	}
	// The count pins that the fast path is really used.
	if accepted < 8 {
		t.Fatalf("fast path accepted %d seeds, want at least the 8 canonical ones", accepted)
	}
}

func TestDecodeCanonicalAcceptsEncode(t *testing.T) {
	for _, m := range []*Manifest{
		{Format: 1, Generation: 1, PublishID: "a", PublishedAt: time.Now(), Publisher: "", Mode: ModeMulti, Items: map[string]Item{}},
		{Format: 1, Generation: 1<<62 + 5, PublishID: "x y", PublishedAt: time.Unix(0, 0), Publisher: "ü@h", Mode: ModeMarker, RollbackOf: 3},
		{Format: 1, Generation: 7, PublishID: "i", Publisher: "p", Mode: ModeMulti, Incarnation: NewIncarnation()},
		{Format: 1, Generation: 9, PublishID: "id", Publisher: "p", Mode: ModeMulti, Items: map[string]Item{
			"b": ItemOf([]byte("b")), "a": ItemOf([]byte("a")), "a.b": ItemOf(nil), "Z": {SHA256: strings.Repeat("0", 64), Size: 1 << 40}}},
	} {
		enc := m.Encode()
		fm, ok := decodeCanonical(enc)
		if !ok {
			t.Fatalf("declined %s", enc)
		}
		jm, _ := jsonStruct(enc)
		if !reflect.DeepEqual(fm, jm) {
			t.Fatalf("differs on %s:\n%#v\n%#v", enc, fm, jm)
		}
		if d, err := Decode(enc); err != nil || !reflect.DeepEqual(d, mustDecodeJSON(t, enc)) {
			t.Fatalf("Decode %v", err)
		}
	}
	// Declined, and still decoded (by encoding/json): whitespace, another
	// field order, escapes.
	for _, s := range []string{
		`{"format": 1, "generation": 2, "publish_id": "p", "mode": "multi", "items": {}}`,
		`{"generation":2,"format":1,"publish_id":"p","published_at":"2025-01-02T03:04:05Z","publisher":"","mode":"multi","items":{}}`,
		`{"format":1,"generation":2,"publish_id":"p\u0041","published_at":"2025-01-02T03:04:05Z","publisher":"","mode":"multi","items":{}}`,
	} {
		if _, ok := decodeCanonical([]byte(s)); ok {
			t.Fatalf("accepted %s", s)
		}
		if _, err := Decode([]byte(s)); err != nil {
			t.Fatalf("Decode(%s): %v", s, err)
		}
		checkCanonical(t, []byte(s))
	}
}

func mustDecodeJSON(t *testing.T, b []byte) *Manifest {
	t.Helper()
	m, err := decodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkDecode measures the decoding of a 20-item manifest (a cache
// decodes one on every notification).
func BenchmarkDecode(b *testing.B) {
	m := &Manifest{Format: 1, Generation: 1234, PublishID: "0123456789abcdef0123456789abcdef", PublishedAt: time.Now(),
		Publisher: "deploy@build-host-01", Mode: ModeMulti, Items: map[string]Item{}}
	for i := range 20 {
		m.Items["item"+string(rune('a'+i))+".conf"] = ItemOf([]byte{byte(i)})
	}
	enc := m.Encode()
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLowerHex64 holds lowerHex64 equal to isSHA256Hex, the check per
// byte: every byte value at every position of a valid hash, pairs of
// bytes at random positions, and random words.
func TestLowerHex64(t *testing.T) {
	valid := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if !lowerHex64(valid) {
		t.Fatal("a valid hash refused")
	}
	check := func(h []byte) {
		t.Helper()
		if got, want := lowerHex64(h), isSHA256Hex(string(h)); got != want {
			t.Fatalf("lowerHex64(%q) = %v, isSHA256Hex %v", h, got, want)
		}
	}
	h := make([]byte, 64)
	refused := 0
	for pos := range 64 {
		for v := range 256 {
			copy(h, valid)
			h[pos] = byte(v)
			check(h)
			if !lowerHex64(h) {
				refused++
			}
		}
	}
	if refused != 64*(256-16) {
		t.Fatalf("%d single-byte changes refused, want %d", refused, 64*(256-16))
	}
	r := rand.New(rand.NewPCG(27, 28))
	for range 200000 {
		copy(h, valid)
		for range 1 + r.IntN(3) {
			h[r.IntN(64)] = byte(r.IntN(256))
		}
		check(h)
		const alphabet = "0123456789abcdef\x7f\x80\xff/:`g@AF "
		for i := range h {
			h[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(h)
	}
}

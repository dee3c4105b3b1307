package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// This file keeps a copy of the decoding rules of the release before
// config trees (manifest.Decode as of commit 77366cb): its canonical fast
// path, which takes only `{"format":1,"generation":`, and its
// encoding/json path, which reads format 1 only and flat names only. The
// tests below run today's encoder against it: what an agent or a cache
// of that release does with what this release publishes.

// prevFormatVersion is the one format the previous release reads.
const prevFormatVersion = 1

// prevDecode is the previous release's Decode.
func prevDecode(data []byte) (*Manifest, error) {
	if m, ok := prevDecodeCanonical(data); ok {
		return m, nil
	}
	return prevDecodeJSON(data)
}

func prevDecodeJSON(data []byte) (*Manifest, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmpty
	}
	var fast struct {
		Format *int `json:"format"`
		Manifest
	}
	if json.Unmarshal(data, &fast) == nil && fast.Format != nil && *fast.Format == prevFormatVersion {
		m := fast.Manifest
		m.Format = prevFormatVersion
		if err := prevValidate(&m); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrForeign, err)
		}
		return &m, nil
	}
	var probe struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &probe); err != nil || probe.Format == nil {
		return nil, ErrForeign
	}
	if *probe.Format > prevFormatVersion {
		return nil, fmt.Errorf("%w (format %d, this zkconf reads %d): upgrade zkconf", ErrFutureFormat, *probe.Format, prevFormatVersion)
	}
	if *probe.Format < 1 {
		return nil, fmt.Errorf("%w: format %d", ErrForeign, *probe.Format)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForeign, err)
	}
	if err := prevValidate(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForeign, err)
	}
	return &m, nil
}

func prevValidate(m *Manifest) error {
	if m.Generation < 1 {
		return fmt.Errorf("generation %d is not positive", m.Generation)
	}
	if m.PublishID == "" {
		return errors.New("no publish_id")
	}
	if m.Mode != ModeMulti && m.Mode != ModeMarker {
		return fmt.Errorf("unknown mode %q", m.Mode)
	}
	if m.Incarnation != "" && !ValidIncarnation(m.Incarnation) {
		return errors.New("bad incarnation (not 32 lower-case hex digits)")
	}
	if m.Canary != nil {
		if err := m.Canary.validate(m); err != nil {
			return err
		}
	}
	if m.Items == nil {
		m.Items = map[string]Item{}
	}
	for _, n := range m.Names() {
		if err := prevValidateItem(n, m.Items[n]); err != nil {
			return err
		}
	}
	return nil
}

// prevValidateItem: the previous release's item rule, ValidateName (which
// refuses "/"; unchanged in this release) and the hash and size.
func prevValidateItem(name string, it Item) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !isSHA256Hex(it.SHA256) {
		return fmt.Errorf("item %q: bad sha256", name)
	}
	if it.Size < 0 {
		return fmt.Errorf("item %q: negative size", name)
	}
	return nil
}

func prevDecodeCanonical(data []byte) (*Manifest, bool) {
	if !bytes.HasPrefix(data, []byte(`{"format":1,"generation":`)) {
		return nil, false
	}
	all := string(data)
	p := canon{b: data, i: len(`{"format":1,"generation":`)}
	m := &Manifest{Format: prevFormatVersion}
	var ok bool
	if m.Generation, ok = p.int(); !ok || !p.lit(`,"publish_id":`) {
		return nil, false
	}
	if m.PublishID, ok = p.str(all); !ok || !p.lit(`,"published_at":`) {
		return nil, false
	}
	ts, te, ok := p.span()
	if !ok || m.PublishedAt.UnmarshalJSON(data[ts-1:te+1]) != nil || !p.lit(`,"publisher":`) {
		return nil, false
	}
	if m.Publisher, ok = p.str(all); !ok || !p.lit(`,"mode":`) {
		return nil, false
	}
	mode, ok := p.str(all)
	if !ok {
		return nil, false
	}
	m.Mode = Mode(mode)
	if p.lit(`,"rollback_of":`) {
		if m.RollbackOf, ok = p.int(); !ok {
			return nil, false
		}
	}
	if p.lit(`,"incarnation":`) {
		if m.Incarnation, ok = p.str(all); !ok || !ValidIncarnation(m.Incarnation) {
			return nil, false
		}
	}
	if p.lit(`,"message":`) {
		if m.Message, ok = p.str(all); !ok {
			return nil, false
		}
	}
	if !p.lit(`,"items":`) {
		return nil, false
	}
	if !p.lit(`null`) {
		if !p.lit(`{`) {
			return nil, false
		}
		m.Items = map[string]Item{}
		if !p.lit(`}`) {
			prev := ""
			for {
				name, ok := p.str(all)
				if !ok || (len(m.Items) > 0 && prev >= name) || !p.lit(`:{"sha256":`) {
					return nil, false
				}
				prev = name
				var it Item
				if it.SHA256, ok = p.str(all); !ok || !p.lit(`,"size":`) {
					return nil, false
				}
				if it.Size, ok = p.int(); !ok || !p.lit(`}`) {
					return nil, false
				}
				if prevValidateItem(name, it) != nil {
					return nil, false
				}
				m.Items[name] = it
				if p.lit(`}`) {
					break
				}
				if !p.lit(`,`) {
					return nil, false
				}
			}
		}
	}
	if !p.lit(`}`) || p.i != len(data) {
		return nil, false
	}
	switch m.Mode {
	case ModeMulti, ModeMarker:
	default:
		return nil, false
	}
	if m.Generation < 1 || m.PublishID == "" {
		return nil, false
	}
	if m.Items == nil {
		m.Items = map[string]Item{}
	}
	return m, true
}

// treeManifest is what this release publishes for a set with paths.
func treeManifest(items map[string][]byte) *Manifest {
	m := &Manifest{Generation: 5, PublishID: "0123456789abcdef0123456789abcdef", PublishedAt: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC),
		Publisher: "u@h", Mode: ModeMulti, Incarnation: "0123456789abcdef0123456789abcdef", Items: map[string]Item{}}
	for n, d := range items {
		m.Items[n] = ItemOf(d)
	}
	m.Format = FormatFor(m.Items)
	return m
}

// TestPreviousReleaseRefusesFormat2: a manifest with item paths is format
// 2, and the previous release's decoding rules refuse it with
// ErrFutureFormat (not as foreign, not in part): an older agent or cache
// keeps the snapshot it holds and says to upgrade. A flat set is still
// format 1, which the previous release decodes into exactly what this
// release decodes. And the reason format 2 exists: had paths been
// published as format 1, the previous release would have called the root
// foreign instead of saying that it is too old.
func TestPreviousReleaseRefusesFormat2(t *testing.T) {
	tree := treeManifest(map[string][]byte{"app.json": []byte("{}"), "conf.d/site.conf": []byte("server {}"), "conf.d/sub/x": nil})
	if tree.Format != FormatTree {
		t.Fatalf("a set with paths got format %d", tree.Format)
	}
	enc := tree.Encode()
	if !bytes.HasPrefix(enc, []byte(`{"format":2,`)) {
		t.Fatalf("encoded as %.20s", enc)
	}
	_, err := prevDecode(enc)
	if !errors.Is(err, ErrFutureFormat) || errors.Is(err, ErrForeign) {
		t.Fatalf("previous release on format 2: %v, want ErrFutureFormat", err)
	}
	if got, err := Decode(enc); err != nil || !got.SameContent(tree) || got.Format != FormatTree {
		t.Fatalf("this release on format 2: %+v, %v", got, err)
	}

	flat := treeManifest(map[string][]byte{"app.json": []byte("{}"), "site.conf": []byte("server {}")})
	if flat.Format != FormatVersion {
		t.Fatalf("a flat set got format %d", flat.Format)
	}
	fenc := flat.Encode()
	old, err := prevDecode(fenc)
	if err != nil {
		t.Fatalf("previous release on a flat set: %v", err)
	}
	cur, err := Decode(fenc)
	if err != nil || !reflect.DeepEqual(old, cur) {
		t.Fatalf("the releases differ on a flat set:\n%#v\n%#v (%v)", old, cur, err)
	}
	if _, ok := prevDecodeCanonical(fenc); !ok {
		t.Fatal("the previous release's fast path declines a flat set this release publishes")
	}

	mislabelled := *tree
	mislabelled.Format = FormatVersion
	if _, err := prevDecode(mislabelled.Encode()); !errors.Is(err, ErrForeign) {
		t.Fatalf("previous release on paths as format 1: %v, want ErrForeign", err)
	}
	if _, err := Decode(mislabelled.Encode()); !errors.Is(err, ErrForeign) {
		t.Fatalf("this release on paths as format 1: %v, want ErrForeign", err)
	}
}

// TestFlatEncodingUnchanged pins the bytes of a flat manifest: what
// publishers before config trees wrote for the same set.
func TestFlatEncodingUnchanged(t *testing.T) {
	m := treeManifest(map[string][]byte{"a.conf": []byte("a"), "b": nil})
	want := `{"format":1,"generation":5,"publish_id":"0123456789abcdef0123456789abcdef","published_at":"2026-03-04T05:06:07.000000008Z","publisher":"u@h","mode":"multi","incarnation":"0123456789abcdef0123456789abcdef","items":{"a.conf":{"sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb","size":1},"b":{"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":0}}}`
	if got := string(m.Encode()); got != want {
		t.Fatalf("flat manifest encodes as\n%s\nwant\n%s", got, want)
	}
}

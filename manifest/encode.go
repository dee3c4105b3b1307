package manifest

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// encodeCanonical is Encode without reflection: the bytes encoding/json
// writes for m, field by field in declaration order (decodeCanonical's
// form), with the item paths sorted as encoding/json sorts map keys. It
// declines (ok false) a manifest with a rollout field (Canary, Candidate:
// rare, left to encoding/json) or a time encoding/json cannot encode;
// strings that need an escape are encoded by encoding/json, one string at
// a time, so every escape stays its. A publisher encodes the next
// manifest between its reads and its commit, so the reflection and the
// map-key sorting of encoding/json were on the path of every publish.
// TestEncodeCanonicalMatchesJSON and FuzzEncodeCanonical hold it to
// encoding/json.
func encodeCanonical(m *Manifest) ([]byte, bool) {
	if m.Canary != nil || m.Candidate != nil {
		return nil, false
	}
	ts, err := m.PublishedAt.MarshalJSON()
	if err != nil {
		return nil, false
	}
	names := make([]string, 0, len(m.Items))
	size := 256 + len(m.PublishID) + len(m.Publisher) + len(m.Incarnation) + len(m.Message)
	for n := range m.Items {
		names = append(names, n)
		size += len(n) + 96 // the entry's keys, its hash and its size
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = append(b, `{"format":`...)
	b = strconv.AppendInt(b, int64(m.Format), 10)
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, m.Generation, 10)
	b = append(b, `,"publish_id":`...)
	b = appendJSONString(b, m.PublishID)
	b = append(b, `,"published_at":`...)
	b = append(b, ts...)
	b = append(b, `,"publisher":`...)
	b = appendJSONString(b, m.Publisher)
	b = append(b, `,"mode":`...)
	b = appendJSONString(b, string(m.Mode))
	if m.RollbackOf != 0 {
		b = append(b, `,"rollback_of":`...)
		b = strconv.AppendInt(b, m.RollbackOf, 10)
	}
	if m.Incarnation != "" {
		b = append(b, `,"incarnation":`...)
		b = appendJSONString(b, m.Incarnation)
	}
	if m.Message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, m.Message)
	}
	b = append(b, `,"items":`...)
	if m.Items == nil {
		b = append(b, `null`...)
	} else {
		b = append(b, '{')
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			it := m.Items[n]
			b = appendJSONString(b, n)
			b = append(b, `:{"sha256":`...)
			b = appendJSONString(b, it.SHA256)
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, it.Size, 10)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if m.PromoteOf != 0 {
		b = append(b, `,"promote_of":`...)
		b = strconv.AppendInt(b, m.PromoteOf, 10)
	}
	if m.AbortOf != 0 {
		b = append(b, `,"abort_of":`...)
		b = strconv.AppendInt(b, m.AbortOf, 10)
	}
	return append(b, '}'), true
}

// appendJSONString appends s as encoding/json writes a string (HTML
// escaping on). Bytes that need no escape (printable ASCII other than the
// quote, the backslash and <, > and &; valid UTF-8 other than U+2028 and
// U+2029) are copied; a string with any other is encoded by encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return appendMarshalled(b, s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return appendMarshalled(b, s)
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendMarshalled appends s encoded by encoding/json.
func appendMarshalled(b []byte, s string) []byte {
	e, err := json.Marshal(s)
	if err != nil {
		panic("manifest: encode string: " + err.Error()) // a string always encodes
	}
	return append(b, e...)
}

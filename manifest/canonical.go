package manifest

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// decodeCanonical parses data when it is exactly in the form Encode writes
// (format 1 or 2, fields in declaration order, no whitespace, item paths
// in increasing order, strings without escapes, valid UTF-8 and no control characters,
// integers that fit in int64) and valid, and declines (ok false) on
// anything else, including everything that is not a valid manifest (Decode
// then goes through encoding/json, which reports exactly what is wrong).
// When it accepts, the result is exactly what encoding/json and validate
// give for the same data (the differential fuzz test FuzzDecodeCanonical
// checks that). It exists because every cache decodes the root on
// every notification, and encoding/json's reflection was most of a cache's
// CPU.
//
// Why accepting only this form gives encoding/json's result: a string with
// no backslash, no byte below 0x20 and valid UTF-8 decodes to its own bytes;
// keys that appear once each, in the exact case of the tags, leave no room
// for encoding/json's case-insensitive or last-one-wins matching; an
// integer literal without fraction or exponent that fits in int64 is what
// strconv.ParseInt returns; published_at is parsed by the same
// time.Time.UnmarshalJSON, with the same bytes, that encoding/json calls.
func decodeCanonical(data []byte) (*Manifest, bool) {
	// Every accepted string's bytes are its value, so every string field
	// is a substring of one copy of data: one allocation, not one per name
	// and hash.
	return decodeCanonicalIn(data, string(data), nil)
}

// entryList is where decodeCanonicalIn puts the items when it is given
// one instead of filling the manifest's map: the names in increasing
// order and their entries, in the same order.
type entryList struct {
	names []string
	items []Item
}

// decodeCanonicalIn is decodeCanonical with all, a string holding data's
// bytes, whose substrings become the manifest's strings. With list
// non-nil the items go to list and the manifest's Items stay nil (format
// 1 only: a format-2 manifest's tree check reads the map, so list mode
// declines it).
func decodeCanonicalIn(data []byte, all string, list *entryList) (*Manifest, bool) {
	format := FormatVersion
	switch {
	case bytes.HasPrefix(data, []byte(`{"format":1,"generation":`)):
	case bytes.HasPrefix(data, []byte(`{"format":2,"generation":`)) && list == nil:
		format = FormatTree
	default:
		return nil, false
	}
	p := canon{b: data, i: len(`{"format":1,"generation":`)}
	m := &Manifest{Format: format}
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
	var mode string
	if mode, ok = p.str(all); !ok {
		return nil, false
	}
	if p.lit(`,"rollback_of":`) {
		if m.RollbackOf, ok = p.int(); !ok {
			return nil, false
		}
	}
	if p.lit(`,"incarnation":`) {
		// Encode omits an empty one; anything but a valid id declines.
		if m.Incarnation, ok = p.str(all); !ok || !ValidIncarnation(m.Incarnation) {
			return nil, false
		}
	}
	if p.lit(`,"message":`) {
		// Encode omits an empty one; a message with escapes declines.
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
		// Every item's entry opens one brace (a name may hold more: a
		// hint only); a one-byte count is a vector loop, a string's is not.
		hint := bytes.Count(data[p.i:], []byte{'{'})
		if list != nil {
			list.names, list.items = make([]string, 0, hint), make([]Item, 0, hint)
		} else {
			m.Items = make(map[string]Item, hint)
		}
		if !p.lit(`}`) {
			prev, n := "", 0
			for {
				name, ok := p.str(all)
				// Increasing names: no duplicate (encoding/json would keep
				// the last), and the order Encode writes.
				if !ok || (n > 0 && prev >= name) || !p.lit(`:{"sha256":`) {
					return nil, false
				}
				prev = name
				var it Item
				if it.SHA256, ok = p.sha(all); !ok || !p.lit(`,"size":`) {
					return nil, false
				}
				if it.Size, ok = p.int(); !ok || !p.lit(`}`) {
					return nil, false
				}
				// Validated here, while its bytes are in the CPU's cache
				// (validate would walk the map again); an invalid item
				// declines, and encoding/json's path reports it. The
				// hash is valid (sha read it): validateItem's rest.
				if validateName(format, name) != nil || it.Size < 0 {
					return nil, false
				}
				n++
				if list != nil {
					list.names = append(list.names, name)
					list.items = append(list.items, it)
				} else {
					m.Items[name] = it
				}
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
	switch Mode(mode) {
	case ModeMulti:
		m.Mode = ModeMulti // the constant: the substring need not keep all alive
	case ModeMarker:
		m.Mode = ModeMarker
	default:
		return nil, false
	}
	if m.Generation < 1 || m.PublishID == "" {
		return nil, false
	}
	if list != nil {
		return m, true // format 1: no tree check
	}
	if m.Items == nil {
		m.Items = map[string]Item{}
	}
	if treeConflict(format, m.Items) != nil {
		return nil, false
	}
	return m, true
}

// canon is decodeCanonical's cursor.
type canon struct {
	b []byte
	i int
}

// lit consumes s when the input continues with it.
func (p *canon) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str consumes a string literal whose bytes are its value and returns it,
// a substring of all (data as a string).
func (p *canon) str(all string) (string, bool) {
	s, e, ok := p.span()
	if !ok {
		return "", false
	}
	return all[s:e], true
}

// sha consumes a string literal of 64 lower-case hex digits, the only
// hash validateItem accepts (anything else declines, and encoding/json's
// path reports it), and returns it, a substring of all. Such a string's
// bytes are its value: one pass over it instead of span's and the hex
// check's, for the largest part of a manifest.
func (p *canon) sha(all string) (string, bool) {
	const n = 64
	if len(p.b)-p.i < n+2 || p.b[p.i] != '"' || p.b[p.i+1+n] != '"' {
		return "", false
	}
	if !lowerHex64(p.b[p.i+1 : p.i+1+n]) {
		return "", false
	}
	s := all[p.i+1 : p.i+1+n]
	p.i += n + 2
	return s, true
}

// lowerHex64 reports whether h (64 bytes) holds only lower-case hex
// digits, eight bytes at a time: a root holds one hash per item and every
// cache checks every hash at every notification, so a table lookup per
// byte was a third of the canonical decode's CPU in confbench's fleet of
// 1,000 caches (docs/bench/latency-cachenote-2026-11-28). Equal to
// isSHA256Hex on every input (TestLowerHex64 tries every byte value at
// every position).
//
// Adding 0x80-k to every byte of a word sets the top bit of a byte below
// 0x80 exactly when the byte is at least k, without a carry into the next
// byte (0x7f + 0x80 < 0x100); a byte is a digit when it is at least '0'
// and not at least '9'+1, a letter when at least 'a' and not at least
// 'f'+1. A byte at or above 0x80 is neither (each sum has its top bit set
// for both bounds, or wraps below 0x80 for the lower one), and only such
// a byte carries into the next, in a word it already refuses.
func lowerHex64(h []byte) bool {
	const (
		ones = 0x0101010101010101
		top  = 0x8080808080808080
	)
	_ = h[63] // one bounds check
	var bad uint64
	for i := 0; i < 64; i += 8 {
		x := binary.LittleEndian.Uint64(h[i:])
		digit := (x + (0x80-'0')*ones) &^ (x + (0x80-'9'-1)*ones)
		letter := (x + (0x80-'a')*ones) &^ (x + (0x80-'f'-1)*ones)
		bad |= (digit|letter)&top ^ top // a byte neither a digit nor a letter
	}
	return bad == 0
}

// span consumes a string literal whose bytes are its value (no escape, no
// control character, valid UTF-8) and returns where its bytes are.
func (p *canon) span() (start, end int, ok bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, 0, false
	}
	start = p.i + 1
	n := bytes.IndexByte(p.b[start:], '"')
	if n < 0 {
		return 0, 0, false
	}
	end = start + n
	v := p.b[start:end]
	var bad, hi byte // no branch per byte
	for _, c := range v {
		bad |= notPlain[c]
		hi |= c
	}
	if bad != 0 || (hi >= utf8.RuneSelf && !utf8.Valid(v)) {
		return 0, 0, false
	}
	p.i = end + 1
	return start, end, true
}

// notPlain[c] is 1 for the bytes that make a string's value differ from
// its bytes (a backslash) or that JSON refuses in a string (below 0x20).
var notPlain = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['\\'] = 1
	return t
}()

// int consumes an integer literal (no fraction, no exponent) that fits in
// int64.
func (p *canon) int() (int64, bool) {
	neg := false
	if p.i < len(p.b) && p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	start := p.i
	var u uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(p.b[p.i]-'0')
		if u > 1<<63 {
			return 0, false
		}
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if neg {
		return -int64(u), true // u == 1<<63 gives math.MinInt64
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

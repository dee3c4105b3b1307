package template

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file holds the conversions between strings and bytes that a render
// makes without copying, and the library helpers that use them. A render
// of confbench latency's template over 20 items of 64 KiB (every item
// base64-encoded and indented, the whole set as JSON, hashed) allocated
// 18 MB for a 1.3 MB set, most of it copies between strings and []byte
// that text/template and sprig make at every call: what a render
// allocates is what the agent's memory limit must make room for
// (agent/memlimit.go), so each copy left out is resident memory saved.
// The helpers here return exactly what sprig's return (tests compare them
// byte for byte).

// frozenString returns b's bytes as a string without copying them. The
// caller guarantees that b is never modified again: a fresh buffer that
// nothing else references, or a Snapshot's item (which must never be
// modified: Snapshot.Get).
func frozenString(b []byte) string {
	// #nosec G103 -- the caller's contract: b is never modified again (a fresh buffer, or a Snapshot's item, which nothing writes).
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// readOnlyBytes returns s's bytes as a slice without copying them, for
// functions that only read their argument (hashing, encoding): writing
// to the slice is forbidden (strings are immutable).
func readOnlyBytes(s string) []byte {
	// #nosec G103 -- read-only view for hashing and encoding: no callee writes to it.
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// b64enc is sprig's b64enc: the argument base64-encoded (standard
// alphabet, padded), in one allocation where sprig's made three (the
// argument as []byte, the encoding, the encoding as a string).
func b64enc(s string) string {
	buf := make([]byte, base64.StdEncoding.EncodedLen(len(s)))
	base64.StdEncoding.Encode(buf, readOnlyBytes(s))
	return frozenString(buf)
}

// sha256sum is sprig's sha256sum: the hex SHA-256 of the argument,
// hashed where it is rather than copied first.
func sha256sum(s string) string {
	sum := sha256.Sum256(readOnlyBytes(s))
	return hex.EncodeToString(sum[:])
}

// toJSONString is sprig's toJson: v encoded as JSON as json.Marshal
// encodes it, "" when it cannot be. The values templates build (sprig's
// dict and list, strings, names, booleans, integers, nil) are encoded
// here into a buffer of the template's own; anything else, and any value
// nested deeper than maxJSONDepth (a map that holds itself), goes to
// json.Marshal. json.Marshal keeps its buffer in a pool that outlives
// the render: after a render of the set as JSON (1.3 MB for 20 × 64 KiB)
// that pool held 2.3 MB, a quarter of the agent's live heap between
// publishes, which the collector's goal doubles.
func toJSONString(v any) string {
	hint := jsonSizeHint(v, 0)
	b, ok := appendJSON(make([]byte, 0, hint+hint/64+64), v, 0)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return ""
		}
	}
	return frozenString(b)
}

// maxJSONDepth is how deeply appendJSON nests before it leaves the value
// to json.Marshal (which reports cycles).
const maxJSONDepth = 100

// appendJSON appends v's JSON encoding (json.Marshal's, byte for byte) to
// dst, or returns false when v holds a value it leaves to json.Marshal
// and json.Marshal fails on.
func appendJSON(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxJSONDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendJSONString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, s)
		}
		return append(dst, ']'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendJSON(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendJSON(dst, v[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	// Floats, json.Number, TOML's dates, other maps and slices: small
	// leaves in what templates encode, json.Marshal's own.
	b, err := json.Marshal(v)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}

// jsonSizeHint is about the size of v's JSON encoding when nothing in it
// needs escaping: the output buffer starts at that size, plus room for a
// few escapes, rather than doubling up to it (twice the garbage for a
// large set).
func jsonSizeHint(v any, depth int) int {
	if depth > maxJSONDepth {
		return 0
	}
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case []string:
		n := 2
		for _, s := range v {
			n += len(s) + 3
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += jsonSizeHint(e, depth+1) + 1
		}
		return n
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + jsonSizeHint(e, depth+1)
		}
		return n
	}
	return 8
}

// appendJSONString appends s as a JSON string as json.Marshal writes it
// (encoding/json's appendString with HTML escaping): ", \\ and the
// control characters escaped (\b \f \n \r \t by name), <, > and & as
// \u003c..., invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

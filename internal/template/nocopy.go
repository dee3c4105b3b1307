package template

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// readOnlyBytes returns s's bytes as a slice without copying them, for
// functions that only read their argument (hashing, encoding): writing
// to the slice is forbidden (strings are immutable).
func readOnlyBytes(s string) []byte {
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

// toJSONString is sprig's toJson: v encoded as JSON, "" when it cannot
// be, without copying the encoding into a string.
func toJSONString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return frozenString(b)
}

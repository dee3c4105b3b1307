package publish

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// Encoded sizes of the ZooKeeper wire format (jute), as go-zookeeper writes
// a Multi: a 4-byte length, the 8-byte request header, then per op a 9-byte
// multi header (type int32, done bool, err int32) and the op's fields
// (strings and buffers are a 4-byte length plus the bytes), then a 9-byte
// done header.
const (
	frameOverhead = 4 + 8 + 9
	opHeader      = 9
	// opSlack is added per op so that the estimate stays conservative if a
	// client version encodes something slightly larger.
	opSlack = 8
)

func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n
}

// opSize is the encoded size of one Multi op, header and slack included.
func opSize(op any) int {
	n := opHeader + opSlack
	switch o := op.(type) {
	case *zk.CreateRequest:
		n += 4 + len(o.Path) + 4 + len(o.Data) + aclSize(o.Acl) + 4
	case *zk.SetDataRequest:
		n += 4 + len(o.Path) + 4 + len(o.Data) + 4
	case *zk.DeleteRequest:
		n += 4 + len(o.Path) + 4
	case *zk.CheckVersionRequest:
		n += 4 + len(o.Path) + 4
	default:
		panic(fmt.Sprintf("publish: opSize: unexpected op %T", op))
	}
	return n
}

// multiSize is the encoded size of a Multi of ops, conservatively.
func multiSize(ops []any) int {
	n := frameOverhead
	for _, op := range ops {
		n += opSize(op)
	}
	return n
}

// encodedSize is len(m.Encode()), computed without encoding: sizing the
// worst-case manifest of a set used to encode it whole (twice per
// publish: Validate and the publisher's own check). The arithmetic
// mirrors the JSON encoding of manifest.Manifest field by field;
// TestEncodedSizeMatchesEncode holds it to the real encoding over many
// shapes. The rarely set rollout fields (Canary, Candidate, PromoteOf,
// AbortOf) fall back to encoding.
func encodedSize(m *manifest.Manifest) int {
	if m.Canary != nil || m.Candidate != nil || m.PromoteOf != 0 || m.AbortOf != 0 {
		return len(m.Encode())
	}
	n := len(`{"format":`) + intSize(int64(m.Format)) +
		len(`,"generation":`) + intSize(m.Generation) +
		len(`,"publish_id":`) + jsonStringSize(m.PublishID) +
		len(`,"published_at":`) + timeSize(m.PublishedAt) +
		len(`,"publisher":`) + jsonStringSize(m.Publisher) +
		len(`,"mode":`) + jsonStringSize(string(m.Mode))
	if m.RollbackOf != 0 {
		n += len(`,"rollback_of":`) + intSize(m.RollbackOf)
	}
	if m.Incarnation != "" {
		n += len(`,"incarnation":`) + jsonStringSize(m.Incarnation)
	}
	if m.Message != "" {
		n += len(`,"message":`) + jsonStringSize(m.Message)
	}
	n += len(`,"items":`)
	if m.Items == nil {
		n += len(`null`)
	} else {
		n += len(`{}`)
		if len(m.Items) > 0 {
			n += len(m.Items) - 1 // the commas between entries
		}
		for name, it := range m.Items {
			n += jsonStringSize(name) + len(`:{"sha256":`) + jsonStringSize(it.SHA256) +
				len(`,"size":`) + intSize(it.Size) + len(`}`)
		}
	}
	return n + len(`}`)
}

// intSize is the length of v in decimal.
func intSize(v int64) int {
	var b [24]byte
	return len(strconv.AppendInt(b[:0], v, 10))
}

// timeSize is the length of t as encoding/json writes it; a time it
// cannot encode (a year outside 0–9999) makes Encode panic too.
func timeSize(t time.Time) int {
	b, err := t.MarshalJSON()
	if err != nil {
		panic(fmt.Sprintf("publish: encodedSize: %v", err))
	}
	return len(b)
}

// jsonStringSize is the length of s encoded as a JSON string by
// encoding/json. Bytes that need no escape (printable ASCII other than
// the quote, the backslash and the HTML-escaped <, > and &, and valid
// UTF-8 other than U+2028 and U+2029) count as themselves; a string with
// any other byte is measured by encoding it, so the escapes' exact forms
// stay encoding/json's.
func jsonStringSize(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return encodedStringSize(s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return encodedStringSize(s)
		}
		i += size
	}
	return len(s) + 2
}

// encodedStringSize is the length of s as encoding/json writes it.
func encodedStringSize(s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("publish: encode string: %v", err))
	}
	return len(b)
}

package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	good := []string{"app.json", "nginx.conf", "a", "x-y_z.1", "日本.txt", strings.Repeat("n", MaxNameLen)}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	bad := map[string]string{
		"":                                "empty",
		"invalid":                         "reserved",
		".":                               "not a file name",
		"..":                              "not a file name",
		"..data":                          "reserved for the atomic directory writer",
		"a/b":                             "contains '/'",
		strings.Repeat("n", MaxNameLen+1): "more than 255",
		"tab\there":                       "U+0009",
		"nul\x00":                         "U+0000",
		"del\x7f":                         "U+007F",
		"\xff\xfe":                        "not valid UTF-8",
		"zookeeper":                       "reserved by ZooKeeper",
		"priv\ue000":                      "U+E000",
		"smile\U0001F600":                 "character 6 is U+1F600",
	}
	for n, want := range bad {
		err := ValidateName(n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %v, want error containing %q", n, err, want)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	m := &Manifest{
		Format: FormatVersion, Generation: 7, PublishID: "p1",
		PublishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Publisher: "u@h", Mode: ModeMulti,
		Items: map[string]Item{"a": ItemOf([]byte("x")), "b": ItemOf(nil)},
	}
	got, err := Decode(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 7 || !got.SameContent(m) || !got.PublishedAt.Equal(m.PublishedAt) {
		t.Fatalf("round trip = %+v", got)
	}
	if !got.Matches("a", []byte("x")) || got.Matches("a", []byte("y")) || got.Matches("c", nil) {
		t.Fatal("Matches wrong")
	}
	if got.TotalSize() != 1 || strings.Join(got.Names(), ",") != "a,b" {
		t.Fatalf("TotalSize/Names = %d %v", got.TotalSize(), got.Names())
	}
}

func TestDecodeErrors(t *testing.T) {
	sha := strings.Repeat("a", 64)
	cases := []struct {
		data string
		want error
		msg  string
	}{
		{"", ErrEmpty, ""},
		{"  \n", ErrEmpty, ""},
		{"hello", ErrForeign, ""},
		{`{"some":"json"}`, ErrForeign, ""},
		{`{"format":3,"generation":1}`, ErrFutureFormat, "format 3"},
		{`{"format":2,"generation":1,"publish_id":"p","mode":"multi","items":{"a":{"sha256":"` + sha + `"},"a/b":{"sha256":"` + sha + `"}}}`, ErrForeign, "both a file and a directory"},
		{`{"format":0}`, ErrForeign, "format 0"},
		{`{"format":1,"generation":0,"publish_id":"p","mode":"multi"}`, ErrForeign, "generation 0"},
		{`{"format":1,"generation":1,"mode":"multi"}`, ErrForeign, "publish_id"},
		{`{"format":1,"generation":1,"publish_id":"p","mode":"x"}`, ErrForeign, "mode"},
		{`{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"a/b":{"sha256":"` + sha + `"}}}`, ErrForeign, "'/'"},
		{`{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"a":{"sha256":"xyz"}}}`, ErrForeign, "bad sha256"},
		{`{"format":1,"generation":1,"publish_id":"p","mode":"multi","items":{"a":{"sha256":"` + sha + `","size":-1}}}`, ErrForeign, "negative"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.data))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Decode(%q) = %v, want %v containing %q", c.data, err, c.want, c.msg)
		}
	}
}

// TestDecodeBadIncarnation: an incarnation that is not 32 lower-case hex
// digits makes the manifest foreign; a valid one and none (legacy) decode.
func TestDecodeBadIncarnation(t *testing.T) {
	base := `{"format":1,"generation":1,"publish_id":"p","published_at":"2025-01-02T03:04:05Z","publisher":"u","mode":"multi",%s"items":{}}`
	for _, bad := range []string{`"x"`, `"0123456789ABCDEF0123456789abcdef"`, `"0123456789abcdef0123456789abcde"`, `7`} {
		_, err := Decode([]byte(fmt.Sprintf(base, `"incarnation":`+bad+`,`)))
		if !errors.Is(err, ErrForeign) || (bad != `7` && err.Error() != "root data is not a zkconf manifest: bad incarnation (not 32 lower-case hex digits)") {
			t.Errorf("incarnation %s: %v", bad, err)
		}
	}
	inc := NewIncarnation()
	for data, want := range map[string]string{fmt.Sprintf(base, ""): "", fmt.Sprintf(base, `"incarnation":"`+inc+`",`): inc} {
		m, err := Decode([]byte(data))
		if err != nil || m.Incarnation != want {
			t.Errorf("Decode(%s) = %v, %v", data, m, err)
		}
	}
}

// TestMessageField: the optional message round-trips through the canonical
// fast path and encoding/json, is omitted when empty (so manifests without
// a message are byte-for-byte what older publishers wrote), and manifests
// written before it existed decode with an empty message.
func TestMessageField(t *testing.T) {
	m := &Manifest{
		Format: FormatVersion, Generation: 3, PublishID: "p3",
		PublishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Publisher: "u@h", Mode: ModeMulti,
		Incarnation: NewIncarnation(), Message: "bob: rotate keys for INC-42",
		Items: map[string]Item{"a": ItemOf([]byte("x"))},
	}
	enc := m.Encode()
	if !strings.Contains(string(enc), `,"message":"bob: rotate keys for INC-42","items":`) {
		t.Fatalf("encoding lacks the message before the items: %s", enc)
	}
	fast, ok := decodeCanonical(enc)
	if !ok || fast.Message != m.Message {
		t.Fatalf("canonical decode = %+v, %v; want message %q", fast, ok, m.Message)
	}
	slow, err := decodeJSON(enc)
	if err != nil || slow.Message != m.Message {
		t.Fatalf("encoding/json decode = %+v, %v", slow, err)
	}
	m.Message = ""
	old := m.Encode()
	if strings.Contains(string(old), "message") {
		t.Fatalf("an empty message is encoded: %s", old)
	}
	got, err := Decode(old)
	if err != nil || got.Message != "" || got.Generation != 3 {
		t.Fatalf("manifest without a message: %+v, %v", got, err)
	}
	// A reader that does not know the field (the struct before it existed)
	// still decodes a manifest carrying one: encoding/json ignores unknown
	// fields, which is what keeps the format at version 1.
	var before struct {
		Format     int             `json:"format"`
		Generation int64           `json:"generation"`
		Items      map[string]Item `json:"items"`
	}
	if err := json.Unmarshal(enc, &before); err != nil || before.Generation != 3 || len(before.Items) != 1 {
		t.Fatalf("old-style decode: %+v, %v", before, err)
	}
}

// TestPlainNameAgreesWithChecks runs ValidateName's one-pass case against
// its checks one by one over every name of up to two bytes and a few
// longer ones: the fast case accepts only what the checks accept.
func TestPlainNameAgreesWithChecks(t *testing.T) {
	names := []string{"app.json", "invalid", "zookeeper", "zookeeper2", ".x", "..x", "a..b", "x.", strings.Repeat("a", MaxNameLen),
		strings.Repeat("a", MaxNameLen+1), "ü", "a\x7f", "with space", "~"}
	for a := range 256 {
		names = append(names, string([]byte{byte(a)}))
		for b := range 256 {
			names = append(names, string([]byte{byte(a), byte(b)}))
		}
	}
	fast := 0
	for _, n := range names {
		if !plainName(n) {
			continue
		}
		fast++
		if err := checkName(n); err != nil {
			t.Fatalf("plainName accepts %q, which the checks refuse: %v", n, err)
		}
	}
	if fast < 90*90 {
		t.Fatalf("plainName accepted %d of the names, want the printable ASCII ones", fast)
	}
}

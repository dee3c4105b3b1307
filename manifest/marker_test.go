package manifest

import (
	"errors"
	"testing"
	"time"
)

func TestMarkerRoundTrip(t *testing.T) {
	in := &Marker{PublishID: "p-1", Publisher: "ops@host", StartedAt: time.Unix(1700000000, 0).UTC(), BaseGeneration: 4, Generation: 5}
	out, err := DecodeMarker(in.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if *out != *in {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
}

// TestDecodeMarkerForeign: a marker no zkconf publisher wrote has no
// publish to wait for, and one whose id cannot name a node must not be
// turned into a path.
func TestDecodeMarkerForeign(t *testing.T) {
	for _, data := range []string{``, `not json`, `{}`, `{"publish_id":""}`, `{"publish_id":"a/b"}`,
		`{"publish_id":".."}`, `{"publish_id":"."}`, "{\"publish_id\":\"a\\u0000\"}"} {
		if _, err := DecodeMarker([]byte(data)); !errors.Is(err, ErrForeign) {
			t.Errorf("DecodeMarker(%q) = %v, want ErrForeign", data, err)
		}
	}
}

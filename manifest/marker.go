package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Marker is the content of a root's marker node ("invalid") while a
// marker-mode publish is in progress, and of that publish's liveness node
// (an ephemeral node named by PublishID under the root's publishing
// parent). Readers that find a marker hold their generation; the liveness
// node tells a live publish from an abandoned marker.
type Marker struct {
	// PublishID identifies the publish; it names its liveness node.
	PublishID string `json:"publish_id"`
	// Publisher is who publishes (user@host).
	Publisher string `json:"publisher"`
	// StartedAt is when the publish set the marker.
	StartedAt time.Time `json:"started_at"`
	// BaseGeneration is the live generation the publish started from.
	BaseGeneration int64 `json:"base_generation"`
	// Generation is the generation the publish will commit.
	Generation int64 `json:"generation"`
}

// Encode returns the marker's JSON.
func (m *Marker) Encode() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("manifest: encoding a marker cannot fail: %v", err)) // only strings, ints and a time
	}
	return b
}

// DecodeMarker parses a marker. Anything that is not a marker written by
// zkconf (not JSON, no publish id, or a publish id that cannot name a
// liveness node) is an error matching ErrForeign: such a marker has no
// publish to wait for.
func DecodeMarker(data []byte) (*Marker, error) {
	var m Marker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: marker: %v", ErrForeign, err)
	}
	if m.PublishID == "" {
		return nil, fmt.Errorf("%w: marker names no publish", ErrForeign)
	}
	if m.PublishID == "." || m.PublishID == ".." || strings.ContainsAny(m.PublishID, "/\x00") {
		return nil, fmt.Errorf("%w: marker's publish id cannot name a node", ErrForeign)
	}
	return &m, nil
}

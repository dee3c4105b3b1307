package agent_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/syncbuf"
)

// TestAppliedLineCarriesPhases: at the default level the agent writes one
// line per apply, "applied", and that line says where the apply's time
// went (the cache's cycle, fetch and persist, the renderer's phases): an
// operator sees it without debug logging, and confbench latency reads it
// from an agent logging as shipped.
func TestAppliedLineCarriesPhases(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	var logBuf syncbuf.Buffer
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{dirSpec(join(t.TempDir(), "d"))}, func(o *agent.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	mustPublish(t, p, map[string]string{"a.conf": "1", "b.conf": "1"})
	r.waitGeneration(t, 1)
	mustPublish(t, p, map[string]string{"a.conf": "2", "b.conf": "1"})
	r.waitGeneration(t, 2)

	var applied map[string]any
	for line := range bytes.Lines([]byte(logBuf.String())) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "applied" && rec["generation"] == float64(2) {
			applied = rec
		}
	}
	if applied == nil {
		t.Fatalf("no applied line for generation 2:\n%s", logBuf.String())
	}
	tm, _ := applied["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, tm)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := applied["cycle_start"].(string)
	start, err := time.Parse(time.RFC3339Nano, cs)
	if err != nil || start.After(at) {
		t.Errorf("cycle_start %v (%v) is not before the line's time %v", applied["cycle_start"], err, at)
	}
	if applied["items_read"] != float64(1) {
		t.Errorf("items_read = %v, want 1 (one item changed)", applied["items_read"])
	}
	// slog's JSON writes a time.Duration as integer nanoseconds.
	for _, k := range []string{"duration", "fetch", "persist", "stage", "swap"} {
		if v, ok := applied[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive duration (the apply fetched, persisted a state file, staged and swapped)", k, applied[k])
		}
	}
	for _, k := range []string{"verify", "check", "durable_wait"} {
		if v, ok := applied[k].(float64); !ok || v < 0 {
			t.Errorf("%s = %v, want a duration", k, applied[k])
		}
	}
}

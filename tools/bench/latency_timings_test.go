package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadApplyTimings: the phases come off the agent's info-level
// "applied" lines (confagent's JSON, durations in seconds) of the measured
// generations only; the cache's debug line of the same name, an apply
// without a fetch (loaded from the state file) and unmeasured generations
// are passed by, and a measured publish without its line is an error.
func TestReadApplyTimings(t *testing.T) {
	ack := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
	lines := []string{
		`{"time":"2026-11-27T12:59:59.5Z","level":"INFO","msg":"applied","generation":1,"changed":["d","t"],"duration_seconds":0.01,"stage_seconds":0.001,"check_seconds":0,"durable_wait_seconds":0,"swap_seconds":0.001}`,
		`{"time":"2026-11-27T12:59:59.9Z","level":"INFO","msg":"applied","generation":6,"changed":["d"],"duration_seconds":0.004,"cycle_start":"2026-11-27T12:59:59.8Z","items_read":1,"fetch_seconds":0.002,"verify_seconds":0.00001,"persist_seconds":0.001,"stage_seconds":0.002,"check_seconds":0,"durable_wait_seconds":0,"swap_seconds":0.001}`,
		`{"time":"2026-11-27T13:00:00.002Z","level":"DEBUG","msg":"applied","generation":7,"zxid":99,"items":20}`,
		`{"time":"2026-11-27T13:00:00.006Z","level":"INFO","msg":"applied","generation":7,"changed":["d","t"],"duration_seconds":0.004,"cycle_start":"2026-11-27T13:00:00.0005Z","items_read":1,"fetch_seconds":0.0015,"verify_seconds":0.00002,"persist_seconds":0.0012,"stage_seconds":0.0025,"check_seconds":0,"durable_wait_seconds":0.0001,"swap_seconds":0.0008}`,
		`{"time":"2026-11-27T13:00:00.007Z","level":"INFO","msg":"status node conflict resolved: own node created","path":"/x"}`,
	}
	path := filepath.Join(t.TempDir(), "confagent.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readApplyTimings(path, map[int64]int64{7: ack.UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"notification": {500_000}, "reads": {1_500_000}, "in hand": {2_000_000}, "verify": {20_000},
		"persist": {1_200_000}, "stage": {2_500_000}, "check": {0}, "swap": {800_000},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("phases %v, want only %v", got, want)
	}
	if _, err := readApplyTimings(path, map[int64]int64{7: ack.UnixNano(), 8: ack.UnixNano()}); err == nil {
		t.Error("generation 8 measured but not in the log: no error")
	}
	if _, err := readApplyTimings(path, map[int64]int64{1: ack.UnixNano()}); err == nil {
		t.Error("generation 1's line has no fetch (loaded from the state file), yet it was taken")
	}
}

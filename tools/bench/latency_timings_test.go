package bench

import (
	"fmt"
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

// TestReadConfdTimings: the follower's reads come off its "zkraw timings"
// lines, the measured generations only, each from its first line (in
// marker mode the next publish's step 6c makes the follower render a
// generation again).
func TestReadConfdTimings(t *testing.T) {
	ack := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC).UnixNano()
	ms := int64(time.Millisecond)
	lines := []string{
		`time=2026-11-27T13:00:00Z level=INFO msg=connected`,
		fmt.Sprintf(`zkraw timings {"generation":6,"event":%d,"root":%d,"items":%d,"written":%d}`, ack-9*ms, ack-8*ms, ack-7*ms, ack-6*ms),
		fmt.Sprintf(`zkraw timings {"generation":7,"event":%d,"root":%d,"items":%d,"written":%d}`, ack+ms, ack+2*ms, ack+3*ms, ack+4*ms),
		fmt.Sprintf(`zkraw timings {"generation":7,"event":%d,"root":%d,"items":%d,"written":%d}`, ack+300*ms, ack+301*ms, ack+302*ms, ack+303*ms),
		fmt.Sprintf(`zkraw timings {"generation":8,"event":%d,"root":%d,"items":%d,"written":%d}`, ack+ms, ack+2*ms, ack+5*ms, ack+6*ms),
	}
	path := filepath.Join(t.TempDir(), "confd-style.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readConfdTimings(path, map[int64]int64{7: ack, 8: ack})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{3 * ms, 5 * ms}; !slices.Equal(got, want) {
		t.Errorf("in hand %v, want %v (generation 7's first line, then 8's)", got, want)
	}
}

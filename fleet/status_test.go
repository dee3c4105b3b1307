package fleet_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/fleet"
)

// hostStatus is a status with ok healthy targets and failing ones whose
// errors are errLen bytes long, with the fields a real agent fills.
func hostStatus(ok, failing, errLen int) fleet.Status {
	now := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	s := fleet.Status{AgentID: "web-17", Version: "v1.2.3", Root: "/config/web", Generation: 42, Zxid: 1 << 40,
		PublishID: strings.Repeat("a", 32), AppliedAt: now, CacheGeneration: 43, State: "live", Since: now,
		Attempted: 43, Labels: map[string]string{"zone": "a", "hostname": "web-17.example.com"}}
	for i := range ok + failing {
		t := fleet.TargetResult{Name: fmt.Sprintf("target-%03d", i), Kind: "template",
			Dest: fmt.Sprintf("/etc/service-%03d/conf.d/upstreams.conf", i), Generation: 42, OK: true,
			LastAttempt: 43, UpdatedAt: now, Reloads: 7}
		if i >= ok {
			t.OK, t.LastError = false, strings.Repeat("é", errLen/2)
		}
		s.Targets = append(s.Targets, t)
	}
	return s
}

// TestEncodeStatusFits: a status that fits is encoded as it is; one that
// does not (an honest host with many failing targets and long errors)
// is made to fit MaxStatusBytes, the status quota, and still reads as
// failing, with what was left out counted.
func TestEncodeStatusFits(t *testing.T) {
	small := hostStatus(20, 2, 300)
	b, err := fleet.EncodeStatus(small)
	want, _ := json.Marshal(small)
	if err != nil || string(b) != string(want) {
		t.Errorf("a status that fits was changed: %v", err)
	}
	// The design's example: 200 failing targets with 300-byte errors.
	b, _ = json.Marshal(hostStatus(0, 200, 300))
	t.Logf("200 failing targets with 300-byte errors: %d bytes (bound %d)", len(b), fleet.MaxStatusBytes)
	if len(b) > fleet.MaxStatusBytes {
		t.Errorf("the documented honest status does not fit as it is: %d bytes", len(b))
	}

	for _, tc := range []struct {
		name                 string
		ok, failing, errLen  int
		wantTargets, omitted int
	}{
		{"long errors shortened", 0, 150, 4000, 150, 0},
		{"healthy targets left out", 400, 150, 4000, 150, 400},
		{"failing targets halved", 0, 2000, 4000, 125, 1875},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fleet.EncodeStatus(hostStatus(tc.ok, tc.failing, tc.errLen))
			if err != nil {
				t.Fatal(err)
			}
			var got fleet.Status
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(b) > fleet.MaxStatusBytes || !got.Failing() || len(got.Targets) != tc.wantTargets || got.TargetsOmitted != tc.omitted {
				t.Errorf("%d bytes, failing %v, %d targets, %d omitted; want <= %d bytes, failing, %d targets, %d omitted",
					len(b), got.Failing(), len(got.Targets), got.TargetsOmitted, fleet.MaxStatusBytes, tc.wantTargets, tc.omitted)
			}
			if e := got.Targets[0].LastError; len(e) > 512 || !strings.HasSuffix(e, "…") || !strings.HasPrefix(e, "éé") {
				t.Errorf("error not shortened on a rune boundary: %d bytes, ends %q", len(e), e[max(0, len(e)-6):])
			}
		})
	}
}

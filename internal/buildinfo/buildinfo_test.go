package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name, v, c   string
		read         func() (*debug.BuildInfo, bool)
		wantV, wantC string
	}{
		{"stamped", "v1.2.3", "deadbeef", vcs, "v1.2.3", "deadbeef"},
		{"vcs fallback", "", "", vcs, "dev", "abc123-dirty"},
		{"nothing known", "", "", none, "dev", "unknown"},
	} {
		got := resolve(tc.v, tc.c, tc.read)
		if got.Version != tc.wantV || got.Commit != tc.wantC || got.GoVersion != runtime.Version() {
			t.Errorf("%s: got %+v, want version %s commit %s", tc.name, got, tc.wantV, tc.wantC)
		}
	}
	if s := resolve("v1", "c1", none).String("confpush"); !strings.HasPrefix(s, "confpush v1 (commit c1, go") {
		t.Errorf("String: %q", s)
	}
}

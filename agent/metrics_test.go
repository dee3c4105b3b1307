package agent_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/agent"
)

// metricLine returns the exposition line of the unlabelled metric name.
func metricLine(t testing.TB, url, name string) string {
	t.Helper()
	for _, l := range strings.Split(get(t, url), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	t.Fatalf("%s not exported", name)
	return ""
}

// TestApplyFailingMetric: zkconf_agent_apply_failing is 0 before any
// failure, 1 after a rejected generation for as long as nothing newer
// applies (the failure counters stop moving: a rejected generation is not
// retried), and 0 again once a good generation applies.
func TestApplyFailingMetric(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	specs := []agent.TargetSpec{{
		Name: "conf", Kind: agent.KindFile, Item: "app.conf", Dest: join(out, "app.conf"), Mode: 0o640, UID: -1, GID: -1,
		Check: `! grep -q BAD {{.src}}`,
	}}
	mustPublish(t, p, map[string]string{"app.conf": "good 1"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	r.waitGeneration(t, 1)
	if l := metricLine(t, srv.URL+"/metrics", "zkconf_agent_apply_failing"); l != "zkconf_agent_apply_failing 0" {
		t.Fatalf("after a good apply: %s", l)
	}

	mustPublish(t, p, map[string]string{"app.conf": "BAD 2"})
	r.waitFor(t, "reported the check failure", func(s agent.Status) bool { return strings.Contains(s.LastError, "check") })
	if l := metricLine(t, srv.URL+"/metrics", "zkconf_agent_apply_failing"); l != "zkconf_agent_apply_failing 1" {
		t.Fatalf("after a rejected generation: %s", l)
	}

	mustPublish(t, p, map[string]string{"app.conf": "good 3"})
	r.waitGeneration(t, 3)
	if l := metricLine(t, srv.URL+"/metrics", "zkconf_agent_apply_failing"); l != "zkconf_agent_apply_failing 0" {
		t.Fatalf("after recovery: %s", l)
	}
}

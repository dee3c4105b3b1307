package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/cache"
)

// TestExpositionMatchesClient: the agent's own families, after updates of
// each, are written byte for byte as the Prometheus client wrote them
// (testdata/metrics.golden was a scrape of client_golang v1.24.1's
// registry after the same updates, its go_* and process_* families left
// out): names, types, help, label order, series order, escaping, the
// histogram's buckets and values.
func TestExpositionMatchesClient(t *testing.T) {
	m := newMetrics(func() float64 { return 2.5 })
	m.SetBuildInfo("v1.2\"x\\", "abc\ndef")
	ts := []*target{{spec: TargetSpec{Name: "b-t"}}, {spec: TargetSpec{Name: "a\"t"}}}
	ts[0].result.Retrying = RetryReload
	m.initTargets(ts)
	m.failure("a\"t", "write")
	m.retried("b-t", RetryReload)
	m.reloaded("b-t")
	m.repaired("a\"t")
	m.setState(cache.StateLive, 7)
	m.setStatusConflict(true)
	m.setRoot("r2", 3, 4, true)
	m.setRoot("r1", 1, 2, false)
	m.applyFailing.Set(1)
	m.applies.WithLabelValues("ok").Inc()
	m.generation.Set(5)
	for _, v := range []float64{0.03, 7, 1000} {
		m.latency.Observe(v)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var got []string
	skip := false
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if strings.HasPrefix(l, "# HELP ") {
			name := strings.Fields(l)[2]
			skip = strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
		}
		if !skip {
			got = append(got, l)
		}
	}
	want, err := os.ReadFile(filepath.Join("testdata", "metrics.golden"))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.ReplaceAll(string(want), `goversion="GOVERSION"`, `goversion="`+runtime.Version()+`"`)
	if g := strings.Join(got, ""); g != w {
		t.Errorf("exposition differs from the client's:\n%s\nwant:\n%s", g, w)
	}
}

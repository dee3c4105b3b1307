package promtext

import (
	"runtime"
	"runtime/metrics"
)

// runtimeCollector is the subset of client_golang's Go collector the
// agent keeps, each read at scrape time without stopping the world
// (runtime/metrics, not runtime.ReadMemStats). Names and help strings are
// the client's, so dashboards built on them keep working.
type runtimeCollector struct{}

// NewRuntimeCollector returns go_goroutines, go_threads, go_info,
// go_memstats_heap_alloc_bytes and go_memstats_sys_bytes. The client's
// other go_* families (go_gc_duration_seconds, the other go_memstats_*,
// go_sched_*, go_gc_gogc_percent, go_gc_gomemlimit_bytes) are not
// exported.
func NewRuntimeCollector() Collector { return runtimeCollector{} }

func (runtimeCollector) names() []string {
	return []string{"go_goroutines", "go_threads", "go_info", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes"}
}

func (runtimeCollector) collect(add func(family)) {
	one := func(name, help, typ string, v float64, labels ...string) {
		add(family{name, help, typ, []sample{{labels: labels, value: v}}})
	}
	one("go_goroutines", "Number of goroutines that currently exist.", typeGauge, float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	one("go_threads", "Number of OS threads created.", typeGauge, float64(threads))
	one("go_info", "Information about the Go environment.", typeGauge, 1, "version", runtime.Version())
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() == metrics.KindUint64 {
		one("go_memstats_heap_alloc_bytes",
			"Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.",
			typeGauge, float64(ms[0].Value.Uint64()))
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		one("go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
			typeGauge, float64(ms[1].Value.Uint64()))
	}
}

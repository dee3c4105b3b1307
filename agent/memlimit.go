package agent

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// Values of Options.MemoryLimit besides a size in bytes.
const (
	// MemoryLimitOff (the zero value) leaves the Go runtime's limit alone
	// (none, unless GOMEMLIMIT says otherwise): only GOGC paces the
	// collector. The limit is process-wide, so this is what an embedder
	// gets unless it asks.
	MemoryLimitOff int64 = 0
	// MemoryLimitAuto sizes the soft memory limit from the applied
	// snapshot (autoMemoryLimit), recomputed after every apply:
	// confagent's default.
	MemoryLimitAuto int64 = -1
)

// The automatic limit is the larger of memLimitFloor and memLimitPerByte
// times the size of the snapshot plus what the template targets' last
// renders allocated (renderBytes). What counts against the limit is all of
// the runtime's memory: about 6-6.3 MiB that is not heap (stacks, GC
// metadata, runtime structures; measured on linux/amd64, most of it mapped
// but never touched) plus the heap, whose free pages not yet returned to
// the system count too.
//
// The floor is the agent's own: the non-heap memory, its live heap
// without data (0.7-0.8 MB between publishes of 20 × 1 KiB items, 2 MB
// with 20 × 64 KiB: the snapshot) and GOGC's room above it (the runtime's
// smallest goal is a heap of 4 MiB). A small set's agent totals about 10
// MB (20 × 1 KiB: heap objects 1-2.5 MB, free 1-2.4, non-heap 6.3; 11.1
// MB at most for 100 × 4 KiB, all changed), 3.5-4.5 MB below the floor,
// so the limit never binds there and GOGC alone paces the collector
// (docs/bench/latency-rssheap-2026-11-27b). A base of 12 MiB over an agent
// whose live heap was 4 MiB kept the heap at the limit: the collector ran
// at every publish, 3.5 times the CPU (docs/bench/latency.md, "Memory
// limit"); until session 41 the limit was a base of 16 MiB plus the set's
// part below, which never bound at 20 × 64 KiB.
//
// The set's part takes over once it passes the floor. A limit of 6 times
// the set is at least 1.5 times a live heap of the agent's own plus two
// snapshots (the applied one and the next, at a change of every item) above
// the non-heap memory, and tends to 3 times it for large sets, so a large
// set cannot make the collector run back to back (thrash). Between the
// floor and GOGC's own goal the limit binds in the bursts of an apply: for
// 20 × 64 KiB items and confbench latency's template (a set of 1.3 MB whose
// render allocates 7 MB) the limit is 14.0-14.7 MiB, against a runtime that
// grew to 15-16 MB under GOGC alone (a live heap of 3.5-5 MB in the middle
// of an apply: both snapshots, the render's strings, doubled by the goal,
// and free pages the background scavenger returns slowly): peak RSS 22.0-
// 22.4 MiB instead of 25.0-25.7, for 4.5-11 % more of the agent's CPU per
// publish at that set (more collections; the free pages go back to the
// system at once and the next apply faults them in again).
//
// The renders' part is there because a render's garbage is the template's,
// not the set's (a template that base64-encodes, indents and JSON-encodes
// every item of 20 × 64 KiB allocated 45 MB for a 1.3 MB set), and a limit
// below the heap a render needs makes the collector run back to back for
// the whole render and the scavenger return memory that the next render
// faults back in: with the limit at 16 MiB + 6 × the set, that set's
// publish cost the agent 289 ms of CPU against 59 ms with no limit, and its
// render 329 ms against 38 (docs/bench/latency-manyitems-2026-11-27). What
// a render allocated bounds what it holds alive at once. The term follows
// the template's own allocations, so it shrank by itself when the template
// helpers stopped copying their arguments and results (internal/template,
// nocopy.go: confbench latency's template over 20 × 64 KiB allocates 6.5
// times the set per render where it allocated 12.3, docs/bench/
// latency-tmplmem-2026-11-27). For 100 × 4 KiB items and no template: 14
// MiB; for a 50 MiB set: 300 MiB.
const (
	memLimitFloor   = 14 << 20
	memLimitPerByte = 6
)

// autoMemoryLimit is the soft memory limit (debug.SetMemoryLimit) the
// agent sets for a snapshot of dataBytes bytes of items, whose template
// targets' last renders allocated renderBytes, with MemoryLimitAuto.
func autoMemoryLimit(dataBytes, renderBytes int64) int64 {
	dataBytes, renderBytes = max(dataBytes, 0), max(renderBytes, 0)
	if dataBytes > math.MaxInt64/memLimitPerByte {
		return math.MaxInt64
	}
	limit := memLimitPerByte * dataBytes
	if renderBytes > math.MaxInt64-limit {
		return math.MaxInt64
	}
	return max(memLimitFloor, limit+renderBytes)
}

// memLimiter applies Options.MemoryLimit. GOMEMLIMIT in the environment,
// the Go runtime's own setting, always wins: the agent then never changes
// the limit.
type memLimiter struct {
	log      *slog.Logger
	env      bool  // GOMEMLIMIT is set
	setting  int64 // Options.MemoryLimit
	set      int64 // limit last set, 0 if none
	data     int64 // snapshot size the automatic limit was computed for
	render   int64 // and the renders' allocation (autoMemoryLimit)
	setLimit func(int64) int64
}

// newMemLimiter applies setting with setLimit (debug.SetMemoryLimit when
// nil).
func newMemLimiter(log *slog.Logger, setting int64, setLimit func(int64) int64) *memLimiter {
	if setLimit == nil {
		setLimit = debug.SetMemoryLimit
	}
	m := &memLimiter{log: log, env: os.Getenv("GOMEMLIMIT") != "", data: -1, setLimit: setLimit, setting: MemoryLimitOff}
	m.configure(setting)
	return m
}

// configure takes a (new) Options.MemoryLimit.
func (m *memLimiter) configure(setting int64) {
	if m.env {
		if setting > 0 && setting != m.setting {
			m.log.Warn("memory_limit ignored: GOMEMLIMIT is set in the environment and takes precedence",
				"GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		}
		m.setting = setting
		return
	}
	old := m.setting
	m.setting = setting
	switch {
	case setting > 0:
		m.apply(setting)
	case setting == MemoryLimitAuto:
		if m.data >= 0 {
			m.apply(autoMemoryLimit(m.data, m.render))
		}
	default: // off
		if old != MemoryLimitOff && m.set != 0 {
			m.apply(math.MaxInt64) // the runtime's default: no limit
		}
	}
}

// observe recomputes the automatic limit for a snapshot of dataBytes
// whose renders allocated renderBytes.
func (m *memLimiter) observe(dataBytes, renderBytes int64) {
	m.data, m.render = dataBytes, renderBytes
	if !m.env && m.setting == MemoryLimitAuto {
		m.apply(autoMemoryLimit(dataBytes, renderBytes))
	}
	if m.log.Enabled(context.Background(), slog.LevelDebug) {
		st := readMemStats()
		m.log.Debug("memory", "limit", m.set, "snapshot_bytes", m.data, "render_bytes", m.render, "heap_live", st.heapLive,
			"heap_objects", st.heapObjects, "non_heap", st.nonHeap, "heap_free", st.heapFree)
	}
}

func (m *memLimiter) apply(limit int64) {
	if limit == m.set {
		return
	}
	m.setLimit(limit)
	m.set = limit
	m.log.Debug("memory limit set", "bytes", limit)
}

type memStats struct{ heapLive, heapObjects, nonHeap, heapFree int64 }

// readMemStats reads what the memory limit is compared with: the runtime's
// total memory is the heap's objects plus its free and unused parts plus
// everything else (nonHeap: stacks, metadata, runtime structures).
func readMemStats() memStats {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(min(s[i].Value.Uint64(), math.MaxInt64)) // #nosec G115 -- clamped
	}
	return memStats{heapLive: v(0), heapObjects: v(1), heapFree: v(3),
		nonHeap: v(2) - v(1) - v(3) - v(4) - v(5)}
}

// heapAllocs is how many bytes the process has allocated on the heap
// since it started (runtime/metrics: no stop of the world, unlike
// runtime.ReadMemStats).
func heapAllocs() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64)) // #nosec G115 G602 -- clamped; s has one sample
}

// snapshotBytes is the total size of snap's items.
func snapshotBytes(snap Snapshot) int64 {
	var n int64
	for _, name := range snap.Names() {
		b, _ := snap.Get(name)
		n += int64(len(b))
	}
	return n
}

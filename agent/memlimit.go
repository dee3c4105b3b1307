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

// The automatic limit is memLimitBase plus memLimitPerByte times the size
// of the snapshot. What counts against the limit is all of the runtime's
// memory: about 5.5-6 MiB that is not heap (stacks, GC metadata, runtime
// structures; measured on linux/amd64) plus the heap, whose live part is
// about 4 MiB of the agent's own (ZooKeeper client, HTTP server, metrics)
// plus a few times the config set (the applied snapshot, the next one
// while it is fetched and verified, the state file's manifest, rendered
// templates). The base leaves a small agent's heap room for GOGC's own
// goal (twice the live heap): with a small set the collector is paced by
// GOGC in steady state and the limit caps only the bursts (a resync, a big
// change, a large template). A base of 12 MiB left 2.5 MiB of headroom:
// the heap sat at the limit, the collector ran at every publish and the
// scavenger returned memory that the next publish took back, 3.5 times
// the CPU of this base for 2-3 MiB less RSS (docs/bench/latency.md,
// "Memory limit"). The per-byte part keeps the limit about 1.2 times above
// a live heap of 5 times the set, so a large set cannot make the collector
// run back to back (thrash), and for large sets the limit is above GOGC's
// own target and changes nothing. For 100 × 4 KiB items: 18.3 MiB; for a
// 50 MiB set: 316 MiB.
//
// On top comes what the template targets' last renders allocated
// (renderBytes): a render's garbage is the template's, not the set's (a
// template that base64-encodes, indents and JSON-encodes every item of 20
// × 64 KiB allocated 45 MB for a 1.3 MB set), and a limit below the heap
// a render needs makes the collector run back to back for the whole
// render and the scavenger return memory that the next render faults
// back in: with the limit at 16 MiB + 6 × the set, that set's publish cost
// the agent 289 ms of CPU against 59 ms with no limit, and its render 329
// ms against 38 (docs/bench/latency-manyitems-2026-11-27). What a render
// allocated bounds what it holds alive at once, so the limit never binds
// during a render that allocates as much as the last one: GOGC paces the
// collector then, and the limit still caps the steady state of small
// templates (a few hundred KiB for 20 × 1 KiB items). The term follows
// the template's own allocations, so it shrank by itself when the
// template helpers stopped copying their arguments and results
// (internal/template, nocopy.go: confbench latency's template over 20 × 64
// KiB allocates 6.5 times the set per render where it allocated 12.3,
// docs/bench/latency-tmplmem-2026-11-27). A limit below GOGC's goal costs
// the CPU that branch manyitems won: with the smaller renders, GOMEMLIMIT
// at 26 MiB put the RSS of that set at 34 MiB and cost 63 ms of CPU per
// one-item publish against 35-39 ms with this formula (loads 5-16).
const (
	memLimitBase    = 16 << 20
	memLimitPerByte = 6
)

// autoMemoryLimit is the soft memory limit (debug.SetMemoryLimit) the
// agent sets for a snapshot of dataBytes bytes of items, whose template
// targets' last renders allocated renderBytes, with MemoryLimitAuto.
func autoMemoryLimit(dataBytes, renderBytes int64) int64 {
	dataBytes, renderBytes = max(dataBytes, 0), max(renderBytes, 0)
	if dataBytes > (math.MaxInt64-memLimitBase)/memLimitPerByte {
		return math.MaxInt64
	}
	limit := memLimitBase + memLimitPerByte*dataBytes
	if renderBytes > math.MaxInt64-limit {
		return math.MaxInt64
	}
	return limit + renderBytes
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

// Package promtext writes metrics in the Prometheus text exposition
// format 0.0.4: counters, gauges, functions read at scrape time, label
// vectors with a fixed label set, and histograms, each safe for
// concurrent use.
//
// It exists so that confagent need not link the Prometheus client
// (client_golang, client_model, common/expfmt, procfs and protobuf): for
// the agent's twenty-odd families that client was about 2.5 MB of the
// binary's text and 2 to 3 MiB of its peak RSS (issue 27,
// docs/bench/latency-promtext-2026-11-27/notes.md). Output is stable:
// families sorted by name, label pairs by label name, series by their
// label values, as the client writes them.
package promtext

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the Content-Type of the text format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metric types as # TYPE writes them.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
)

// Opts name and describe a metric family.
type Opts struct {
	Name string // a valid metric name, unique in its Registry
	Help string // free text: backslashes and newlines are escaped
}

// sample is one line of the exposition.
type sample struct {
	suffix string   // appended to the family name: "", "_bucket", "_sum", "_count"
	labels []string // name, value, name, value..., names sorted
	value  float64
}

// family is one family's samples at one scrape.
type family struct {
	name, help, typ string
	samples         []sample
}

// Collector is a metric family (or, for the runtime and process
// collectors, several) a Registry writes. Only this package implements it.
type Collector interface {
	collect(add func(family))
	names() []string
}

// Registry holds collectors and writes their exposition. The zero value
// is not usable: see NewRegistry.
type Registry struct {
	mu         sync.Mutex
	collectors []Collector
	names      map[string]bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{names: map[string]bool{}}
}

// MustRegister adds collectors. It panics on a family name registered
// twice, as a programming error the first scrape would otherwise hide.
func (r *Registry) MustRegister(cs ...Collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		for _, n := range c.names() {
			if r.names[n] {
				panic("promtext: metric " + n + " registered twice")
			}
			r.names[n] = true
		}
		r.collectors = append(r.collectors, c)
	}
}

// gather reads every collector, families sorted by name and series by
// label values.
func (r *Registry) gather() []family {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var fams []family
	for _, c := range cs {
		c.collect(func(f family) { fams = append(fams, f) })
	}
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return fams
}

// WriteTo writes the exposition of every registered family to w, in one
// Write: the exposition is built in memory first (a few KB).
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	for _, f := range r.gather() {
		writeFamily(&buf, f)
	}
	n, err := w.Write(buf.Bytes())
	if err != nil {
		return int64(n), fmt.Errorf("writing metrics: %w", err)
	}
	return int64(n), nil
}

// Handler serves the exposition (GET /metrics). The body is built before
// the first byte is sent, so a scrape never sees half an exposition with
// a 200 status. It does not compress: the agent's exposition is a few KB.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		_, _ = r.WriteTo(&buf) // a bytes.Buffer does not fail
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		_, _ = w.Write(buf.Bytes())
	})
}

// Value returns the value of the series name{labels} (name with its
// suffix for a histogram: x_count, x_sum, x_bucket with an le label), as
// the next scrape would show it; labels are name, value pairs in any
// order. It is for tests and diagnostics, not for a hot path.
func (r *Registry) Value(name string, labels ...string) (float64, bool) {
	want := pairs(labels)
	for _, f := range r.gather() {
		if !strings.HasPrefix(name, f.name) {
			continue
		}
		for _, s := range f.samples {
			if f.name+s.suffix == name && slices.Equal(s.labels, want) {
				return s.value, true
			}
		}
	}
	return 0, false
}

// pairs sorts name, value pairs by name.
func pairs(kv []string) []string {
	type pair struct{ k, v string }
	ps := make([]pair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, pair{kv[i], kv[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	out := make([]string, 0, len(kv))
	for _, p := range ps {
		out = append(out, p.k, p.v)
	}
	return out
}

// writeFamily appends f in the text format to w (a bytes.Buffer: its
// writes do not fail).
func writeFamily(w *bytes.Buffer, f family) {
	w.WriteString("# HELP ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(helpEscaper.Replace(f.help))
	w.WriteString("\n# TYPE ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(f.typ)
	w.WriteByte('\n')
	for _, s := range f.samples {
		w.WriteString(f.name)
		w.WriteString(s.suffix)
		if len(s.labels) > 0 {
			w.WriteByte('{')
			for i := 0; i < len(s.labels); i += 2 {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(s.labels[i])
				w.WriteString(`="`)
				w.WriteString(labelEscaper.Replace(s.labels[i+1]))
				w.WriteByte('"')
			}
			w.WriteByte('}')
		}
		w.WriteByte(' ')
		w.WriteString(formatFloat(s.value))
		w.WriteByte('\n')
	}
}

// Escaping of the text format 0.0.4: HELP escapes backslash and newline,
// a label value also the double quote.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// value is a float64 updated atomically (its bits in a uint64).
type value struct{ bits atomic.Uint64 }

func (v *value) load() float64   { return math.Float64frombits(v.bits.Load()) }
func (v *value) store(f float64) { v.bits.Store(math.Float64bits(f)) }
func (v *value) add(f float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+f)) {
			return
		}
	}
}

// Counter is a value that only goes up.
type Counter struct {
	opts Opts
	v    value
}

// NewCounter returns a counter at 0.
func NewCounter(o Opts) *Counter { return &Counter{opts: o} }

// Inc adds 1.
func (c *Counter) Inc() { c.v.add(1) }

// Add adds d; it panics if d is negative (a counter never goes down).
func (c *Counter) Add(d float64) {
	if d < 0 {
		panic("promtext: counter " + c.opts.Name + " decreased")
	}
	c.v.add(d)
}

func (c *Counter) names() []string { return []string{c.opts.Name} }
func (c *Counter) collect(add func(family)) {
	add(family{c.opts.Name, c.opts.Help, typeCounter, []sample{{value: c.v.load()}}})
}

// Gauge is a value that is set.
type Gauge struct {
	opts Opts
	v    value
}

// NewGauge returns a gauge at 0.
func NewGauge(o Opts) *Gauge { return &Gauge{opts: o} }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.v.store(v) }

func (g *Gauge) names() []string { return []string{g.opts.Name} }
func (g *Gauge) collect(add func(family)) {
	add(family{g.opts.Name, g.opts.Help, typeGauge, []sample{{value: g.v.load()}}})
}

// funcMetric is a gauge or counter whose value a function returns at
// each scrape.
type funcMetric struct {
	opts Opts
	typ  string
	f    func() float64
}

// NewGaugeFunc returns a gauge whose value f returns at each scrape (f
// must be safe for concurrent use).
func NewGaugeFunc(o Opts, f func() float64) Collector {
	return &funcMetric{o, typeGauge, f}
}

// NewCounterFunc returns a counter whose value f returns at each scrape
// (f must be safe for concurrent use and never go down).
func NewCounterFunc(o Opts, f func() float64) Collector {
	return &funcMetric{o, typeCounter, f}
}

func (m *funcMetric) names() []string { return []string{m.opts.Name} }
func (m *funcMetric) collect(add func(family)) {
	add(family{m.opts.Name, m.opts.Help, m.typ, []sample{{value: m.f()}}})
}

// vec is a family of series of one label set, created on first use.
type vec[T any] struct {
	opts   Opts
	typ    string
	labels []string // as given
	order  []int    // indexes into labels, sorted by label name
	mu     sync.Mutex
	series map[string]*vecEntry[T]
	newT   func() *T
	read   func(*T) float64
}

type vecEntry[T any] struct {
	values []string
	m      *T
}

func newVec[T any](o Opts, typ string, labels []string, newT func() *T, read func(*T) float64) *vec[T] {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return &vec[T]{opts: o, typ: typ, labels: slices.Clone(labels), order: order,
		series: map[string]*vecEntry[T]{}, newT: newT, read: read}
}

func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("promtext: %s has labels %q, got %d values", v.opts.Name, v.labels, len(values)))
	}
	// A separator no label value holds in practice keeps keys distinct.
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.series[key]
	if !ok {
		e = &vecEntry[T]{values: slices.Clone(values), m: v.newT()}
		v.series[key] = e
	}
	return e.m
}

func (v *vec[T]) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.series)
}

func (v *vec[T]) names() []string { return []string{v.opts.Name} }
func (v *vec[T]) collect(add func(family)) {
	v.mu.Lock()
	ss := make([]sample, 0, len(v.series))
	for _, e := range v.series {
		ls := make([]string, 0, 2*len(v.labels))
		for _, i := range v.order {
			ls = append(ls, v.labels[i], e.values[i])
		}
		ss = append(ss, sample{labels: ls, value: v.read(e.m)})
	}
	v.mu.Unlock()
	slices.SortFunc(ss, func(a, b sample) int {
		for i := 1; i < len(a.labels); i += 2 {
			if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	add(family{v.opts.Name, v.opts.Help, v.typ, ss})
}

// CounterVec is a counter per value of a fixed set of labels.
type CounterVec struct{ v *vec[Counter] }

// NewCounterVec returns a counter family with the given label names.
func NewCounterVec(o Opts, labels []string) *CounterVec {
	return &CounterVec{newVec(o, typeCounter, labels,
		func() *Counter { return &Counter{opts: o} }, func(c *Counter) float64 { return c.v.load() })}
}

// WithLabelValues returns the counter of these label values (in the
// order of the label names given to NewCounterVec), creating it at 0.
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.with(values) }

func (c *CounterVec) names() []string          { return c.v.names() }
func (c *CounterVec) collect(add func(family)) { c.v.collect(add) }

// GaugeVec is a gauge per value of a fixed set of labels.
type GaugeVec struct{ v *vec[Gauge] }

// NewGaugeVec returns a gauge family with the given label names.
func NewGaugeVec(o Opts, labels []string) *GaugeVec {
	return &GaugeVec{newVec(o, typeGauge, labels,
		func() *Gauge { return &Gauge{opts: o} }, func(g *Gauge) float64 { return g.v.load() })}
}

// WithLabelValues returns the gauge of these label values (in the order
// of the label names given to NewGaugeVec), creating it at 0.
func (g *GaugeVec) WithLabelValues(values ...string) *Gauge { return g.v.with(values) }

// Reset removes every series.
func (g *GaugeVec) Reset() { g.v.reset() }

func (g *GaugeVec) names() []string          { return g.v.names() }
func (g *GaugeVec) collect(add func(family)) { g.v.collect(add) }

// Histogram counts observations in cumulative buckets.
type Histogram struct {
	opts    Opts
	buckets []float64 // upper bounds, ascending, without +Inf
	// mu makes a scrape see counts, sum and count of the same
	// observations (the client's histogram guarantees as much).
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

// NewHistogram returns a histogram with these bucket upper bounds
// (ascending; +Inf is implied). It panics on bounds not ascending.
func NewHistogram(o Opts, buckets []float64) *Histogram {
	for i := 1; i < len(buckets); i++ {
		if buckets[i] <= buckets[i-1] {
			panic("promtext: histogram " + o.Name + " buckets not ascending")
		}
	}
	if n := len(buckets); n > 0 && math.IsInf(buckets[n-1], 1) {
		buckets = buckets[:n-1]
	}
	return &Histogram{opts: o, buckets: slices.Clone(buckets), counts: make([]uint64, len(buckets)+1)}
}

// Observe adds one observation.
func (h *Histogram) Observe(v float64) {
	// The first bucket whose upper bound is >= v (le: less or equal).
	i, _ := slices.BinarySearch(h.buckets, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

func (h *Histogram) names() []string {
	return []string{h.opts.Name}
}

func (h *Histogram) collect(add func(family)) {
	h.mu.Lock()
	counts := slices.Clone(h.counts)
	sum, count := h.sum, h.count
	h.mu.Unlock()
	ss := make([]sample, 0, len(counts)+2)
	var cum uint64
	for i, c := range counts {
		cum += c
		le := "+Inf"
		if i < len(h.buckets) {
			le = formatFloat(h.buckets[i])
		}
		ss = append(ss, sample{suffix: "_bucket", labels: []string{"le", le}, value: float64(cum)})
	}
	ss = append(ss, sample{suffix: "_sum", value: sum}, sample{suffix: "_count", value: float64(count)})
	add(family{h.opts.Name, h.opts.Help, typeHistogram, ss})
}

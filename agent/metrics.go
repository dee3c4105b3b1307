package agent

import (
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/internal/promtext"
)

// Metrics are the agent's Prometheus metrics, in a registry of their own
// (no global state: tests and embedders can run several agents). They are
// written by internal/promtext, not the Prometheus client, which was
// about 2.5 MB of confagent's text and 2 to 3 MiB of its peak RSS.
type Metrics struct {
	reg *promtext.Registry

	generation      *promtext.Gauge
	cacheGeneration *promtext.Gauge
	applies         *promtext.CounterVec
	applyFailing    *promtext.Gauge
	failures        *promtext.CounterVec
	reloads         *promtext.CounterVec
	repairs         *promtext.CounterVec
	latency         *promtext.Histogram
	zkState         *promtext.GaugeVec
	staleSeconds    promtext.Collector

	// Failures retried without a new generation (a failed reload, a
	// transient write error), and the status node held by another session.
	retrying       *promtext.GaugeVec
	retries        *promtext.CounterVec
	statusConflict *promtext.Gauge

	buildInfo *promtext.GaugeVec
	// Per root, for an agent following several roots (root label).
	rootGeneration, rootCacheGeneration, rootLive *promtext.GaugeVec
	// started is when the agent started: generations published before it
	// are start-up catch-up, not publish-to-apply latency.
	started time.Time
}

// failureKinds are the kind label values of zkconf_agent_failures_total.
var failureKinds = []string{"render", "check", "write", RetryReload, RetryTransient}

// newMetrics registers the agent's metrics. stale reports how long the
// agent has been without a live ZooKeeper view (0 while live).
func newMetrics(stale func() float64) *Metrics {
	reg := promtext.NewRegistry()
	m := &Metrics{
		reg:     reg,
		started: time.Now(),
		generation: promtext.NewGauge(promtext.Opts{
			Name: "zkconf_agent_generation", Help: "Generation applied to every target."}),
		cacheGeneration: promtext.NewGauge(promtext.Opts{
			Name: "zkconf_agent_cache_generation", Help: "Newest generation the agent's cache holds."}),
		applies: promtext.NewCounterVec(promtext.Opts{
			Name: "zkconf_agent_applies_total", Help: "Apply attempts by result (ok, failed)."}, []string{"result"}),
		failures: promtext.NewCounterVec(promtext.Opts{
			Name: "zkconf_agent_failures_total", Help: "Failures by target and kind (render, check, write, reload, transient)."},
			[]string{"target", "kind"}),
		reloads: promtext.NewCounterVec(promtext.Opts{
			Name: "zkconf_agent_reloads_total", Help: "Successful reload commands by target."}, []string{"target"}),
		repairs: promtext.NewCounterVec(promtext.Opts{
			Name: "zkconf_agent_drift_repairs_total", Help: "Outputs restored after being changed outside the agent."},
			[]string{"target"}),
		latency: promtext.NewHistogram(promtext.Opts{
			Name: "zkconf_agent_publish_to_apply_seconds",
			Help: "From the manifest's published_at to the end of a successful apply that changed an output, for generations " +
				"published after the agent started: catching up at start-up is not latency (clock skew between hosts adds to it)."},
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}),
		zkState: promtext.NewGaugeVec(promtext.Opts{
			Name: "zkconf_agent_zookeeper_state", Help: "1 for the cache's current state (starting, live, stale, expired)."},
			[]string{"state"}),
	}
	// Counters say that an apply failed, not that the agent is still
	// failing: a rejected generation is not retried, so its failure
	// counter stops moving while the host stays on the old generation.
	m.applyFailing = promtext.NewGauge(promtext.Opts{
		Name: "zkconf_agent_apply_failing",
		Help: "1 while the last apply attempt failed (a rejected generation, a write or reload being retried); 0 after a successful apply and before the first."})
	m.statusConflict = promtext.NewGauge(promtext.Opts{
		Name: "zkconf_agent_status_node_conflict",
		Help: "1 while a node of the agent's status node name is owned by another session, so the agent does not write it."})
	m.staleSeconds = promtext.NewGaugeFunc(promtext.Opts{
		Name: "zkconf_agent_stale_seconds", Help: "Seconds since the agent last had a live view of ZooKeeper (0 while live)."}, stale)
	m.retrying = promtext.NewGaugeVec(promtext.Opts{
		Name: "zkconf_agent_target_retrying",
		Help: "1 while a target's failure is retried with backoff, by class (reload: a reload is pending; transient: a write failed with ENOSPC, EIO, EDQUOT or the like)."},
		[]string{"target", "class"})
	m.retries = promtext.NewCounterVec(promtext.Opts{
		Name: "zkconf_agent_retries_total", Help: "Retries of a failed reload or transient write that failed again, by target and class."},
		[]string{"target", "class"})
	m.buildInfo = promtext.NewGaugeVec(promtext.Opts{
		Name: "zkconf_build_info", Help: "Always 1: the version, commit and Go version of the running confagent."},
		[]string{"version", "commit", "goversion"})
	m.rootGeneration = promtext.NewGaugeVec(promtext.Opts{
		Name: "zkconf_agent_root_generation", Help: "With several roots: the generation of each root applied to every target of that root."},
		[]string{"root"})
	m.rootCacheGeneration = promtext.NewGaugeVec(promtext.Opts{
		Name: "zkconf_agent_root_cache_generation", Help: "With several roots: the newest generation of each root the agent's cache holds."},
		[]string{"root"})
	m.rootLive = promtext.NewGaugeVec(promtext.Opts{
		Name: "zkconf_agent_root_live", Help: "With several roots: 1 while the agent's view of the root is live, 0 otherwise."},
		[]string{"root"})
	reg.MustRegister(m.retrying, m.retries, m.buildInfo, m.applyFailing, m.rootGeneration, m.rootCacheGeneration, m.rootLive)
	reg.MustRegister(m.generation, m.cacheGeneration, m.applies, m.failures, m.reloads, m.repairs, m.latency,
		m.zkState, m.staleSeconds, m.statusConflict, promtext.NewRuntimeCollector(), promtext.NewProcessCollector())
	for _, r := range []string{"ok", "failed"} {
		m.applies.WithLabelValues(r)
	}
	m.setState(cache.StateStarting, 0)
	return m
}

// WriteTo writes the exposition of every metric (what GET /metrics
// serves) in the Prometheus text format 0.0.4.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) { return m.reg.WriteTo(w) }

// Handler serves the exposition (Content-Type text/plain; version=0.0.4).
func (m *Metrics) Handler() http.Handler { return m.reg.Handler() }

// Value returns the value of the series name{labels} as the next scrape
// would show it (labels: name, value pairs; a histogram's series by their
// suffixed names), and false if there is none.
func (m *Metrics) Value(name string, labels ...string) (float64, bool) {
	return m.reg.Value(name, labels...)
}

// SetBuildInfo sets zkconf_build_info to 1 for the given build (its only
// series: a second call replaces the first).
func (m *Metrics) SetBuildInfo(version, commit string) {
	if m == nil {
		return
	}
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
}

// initTargets creates every per-target series at 0, so that they exist
// from the first scrape (rate() and alerts on them need a first sample
// before anything happened). Series of removed targets are kept: their
// counters stay as they were.
func (m *Metrics) initTargets(ts []*target) {
	if m == nil {
		return
	}
	for _, t := range ts {
		name := t.spec.Name
		for _, k := range failureKinds {
			m.failures.WithLabelValues(name, k)
		}
		m.reloads.WithLabelValues(name)
		m.repairs.WithLabelValues(name)
		for _, c := range []string{RetryReload, RetryTransient} {
			m.retries.WithLabelValues(name, c)
		}
	}
	m.observeTargets(ts)
}

func (m *Metrics) observeApply(snap Snapshot, out Outcome, _ time.Duration) {
	if m == nil || out.Skipped {
		return
	}
	if out.Err != nil {
		m.applies.WithLabelValues("failed").Inc()
		m.applyFailing.Set(1)
		return
	}
	m.applies.WithLabelValues("ok").Inc()
	m.applyFailing.Set(0)
	m.generation.Set(float64(snap.Generation()))
	if len(out.Changed) > 0 && snap.PublishedAt().After(m.started) {
		m.latency.Observe(time.Since(snap.PublishedAt()).Seconds())
	}
}

func (m *Metrics) failure(target, kind string) {
	if m != nil {
		m.failures.WithLabelValues(target, kind).Inc()
	}
}

func (m *Metrics) retried(target, class string) {
	if m != nil {
		m.retries.WithLabelValues(target, class).Inc()
	}
}

// observeTargets sets the retrying gauge of every target.
func (m *Metrics) observeTargets(ts []*target) {
	if m == nil {
		return
	}
	for _, t := range ts {
		for _, c := range []string{RetryReload, RetryTransient} {
			v := 0.0
			if t.result.Retrying == c {
				v = 1
			}
			m.retrying.WithLabelValues(t.spec.Name, c).Set(v)
		}
	}
}

func (m *Metrics) reloaded(target string) {
	if m != nil {
		m.reloads.WithLabelValues(target).Inc()
	}
}

func (m *Metrics) repaired(target string) {
	if m != nil {
		m.repairs.WithLabelValues(target).Inc()
	}
}

// setState records the cache's state (one gauge per state name, 1 for the
// current one) and generation.
func (m *Metrics) setState(state cache.State, cacheGen int64) {
	if m == nil {
		return
	}
	for s := cache.StateStarting; s <= cache.StateExpired; s++ {
		v := 0.0
		if s == state {
			v = 1
		}
		m.zkState.WithLabelValues(s.String()).Set(v)
	}
	m.cacheGeneration.Set(float64(cacheGen))
}

// setCacheGeneration records the newest generation the cache holds: a
// new generation is no state transition of the cache (setState), so the
// daemon reports each one it receives.
func (m *Metrics) setCacheGeneration(g int64) {
	if m == nil {
		return
	}
	m.cacheGeneration.Set(float64(g))
}

func (m *Metrics) setStatusConflict(on bool) {
	if m == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	m.statusConflict.Set(v)
}

// setRoot sets one root's series (an agent following several roots).
func (m *Metrics) setRoot(root string, applied, cached int64, live bool) {
	if m == nil {
		return
	}
	v := 0.0
	if live {
		v = 1
	}
	m.rootGeneration.WithLabelValues(root).Set(float64(applied))
	m.rootCacheGeneration.WithLabelValues(root).Set(float64(cached))
	m.rootLive.WithLabelValues(root).Set(v)
}

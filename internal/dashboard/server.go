// Package dashboard is confpush serve's read-only web dashboard: the HTTP
// handlers (HTML pages and the JSON API under /api/) over one watched
// in-memory view per root, shared by every browser. Requests never scan
// ZooKeeper: the views are kept current by watches (Fleet.Changes); only a
// diff reads item contents (history blobs), and those are cached.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/httpguard"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/textdiff"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

//go:embed assets
var assets embed.FS

// Options configures a Server.
type Options struct {
	// Client reaches ZooKeeper; the dashboard only reads through it.
	Client *zkclient.Client
	// Meta is the metadata path (layout.DefaultMeta when empty).
	Meta string
	// Prefix limits the roots shown to Prefix and the roots below it
	// ("" or "/": every root with metadata under Meta).
	Prefix string
	// ShowContent lets the diff show item contents; without it only
	// names, sizes, hashes and changed-line counts are served.
	ShowContent bool
	// Log receives the watchers' warnings (discarded when nil).
	Log *slog.Logger

	// Listen is the address the dashboard listens on, and AllowedHosts
	// further names it answers to (--allowed-host): requests for any
	// other Host are refused (httpguard: DNS rebinding).
	Listen       string
	AllowedHosts []string

	// Event streams (/api/root/events): at most MaxStreams at once
	// (DefaultMaxStreams when 0) and MaxStreamsPerRoot per root
	// (DefaultMaxStreamsPerRoot); a stream that sent nothing for
	// StreamIdle (DefaultStreamIdle), or that is StreamLifetime old
	// (DefaultStreamLifetime), is ended, and the browser reconnects.
	MaxStreams        int
	MaxStreamsPerRoot int
	StreamIdle        time.Duration
	StreamLifetime    time.Duration
}

// Defaults of the event stream limits (Options).
const (
	DefaultMaxStreams        = 256
	DefaultMaxStreamsPerRoot = 64
	DefaultStreamIdle        = 5 * time.Minute
	DefaultStreamLifetime    = 30 * time.Minute
)

// streamWriteTimeout bounds one write to an event stream: a client that
// stopped reading is dropped instead of holding its slot.
const streamWriteTimeout = 30 * time.Second

// streamRetryAfter is the Retry-After of a refused event stream, in seconds.
const streamRetryAfter = "10"

// Server serves the dashboard. Create it with New; it watches until the
// context given to New ends.
type Server struct {
	cl          *zkclient.Client
	meta        string
	prefix      string
	showContent bool
	log         *slog.Logger
	handler     http.Handler
	limits      streamLimits

	mu    sync.RWMutex
	views map[string]*rootView
	ctx   context.Context

	contentMu sync.Mutex
	content   map[contentKey]map[string][]byte
	order     []contentKey

	streamsMu   sync.Mutex
	streams     int
	rootStreams map[string]int

	// computed counts the root views computed (viewOf's shared work):
	// once per snapshot however many clients read it.
	computed atomic.Uint64
}

type streamLimits struct {
	total, perRoot int
	idle, lifetime time.Duration
}

type contentKey struct {
	root string
	gen  int64
}

// contentKept bounds the cache of generations' contents read for diffs.
const contentKept = 16

// New starts watching the roots under o.Meta (until ctx ends) and
// returns the server.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Client == nil {
		return nil, errors.New("dashboard: nil ZooKeeper client")
	}
	if o.Meta == "" {
		o.Meta = layout.DefaultMeta
	}
	o.Prefix = strings.TrimSuffix(o.Prefix, "/")
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	guard, err := httpguard.New(httpguard.Options{Listen: o.Listen, Allowed: o.AllowedHosts, CSP: httpguard.CSPPages,
		Server: "confpush serve", Hint: "add the name with --allowed-host", Log: log})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	s := &Server{cl: o.Client, meta: o.Meta, prefix: o.Prefix, showContent: o.ShowContent, log: log,
		views: map[string]*rootView{}, ctx: ctx, content: map[contentKey]map[string][]byte{},
		rootStreams: map[string]int{}, limits: streamLimits{
			total: orDefault(o.MaxStreams, DefaultMaxStreams), perRoot: orDefault(o.MaxStreamsPerRoot, DefaultMaxStreamsPerRoot),
			idle: orDefault(o.StreamIdle, DefaultStreamIdle), lifetime: orDefault(o.StreamLifetime, DefaultStreamLifetime)}}
	s.handler = guard.Wrap(s.routes())
	go s.discover(ctx)
	return s, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Handler returns the dashboard's HTTP handler: the pages and the API
// behind the Host check, every response with the security headers.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) wanted(root string) bool {
	return s.prefix == "" || root == s.prefix || strings.HasPrefix(root, s.prefix+"/")
}

func (s *Server) addRoot(ctx context.Context, root string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.views[root]; ok {
		return
	}
	v, err := newRootView(s.cl, root, s.meta, s.log)
	if err != nil {
		s.log.Warn("dashboard: cannot follow root", "root", root, "err", err)
		return
	}
	s.views[root] = v
	go v.run(ctx)
	go v.watchRollout(ctx, s.meta)
}

func (s *Server) view(root string) *rootView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.views[root]
}

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", s.page("roots.html", nil))
	m.HandleFunc("GET /root", s.page("root.html", func(r *http.Request) error { _, err := s.lookup(r); return err }))
	m.HandleFunc("GET /generation", s.page("generation.html", func(r *http.Request) error {
		_, _, _, err := s.lookupGeneration(r, "g")
		return err
	}))
	m.HandleFunc("GET /agent", s.page("agent.html", func(r *http.Request) error {
		_, _, _, err := s.lookupAgent(r)
		return err
	}))
	m.HandleFunc("GET /api/roots", s.apiRoots)
	m.HandleFunc("GET /api/root", s.apiRoot)
	m.HandleFunc("GET /api/root/agents", s.apiAgents)
	m.HandleFunc("GET /api/root/history", s.apiHistory)
	m.HandleFunc("GET /api/root/events", s.apiEvents)
	m.HandleFunc("GET /api/root/rollout", s.apiRollout)
	m.HandleFunc("GET /api/generation", s.apiGeneration)
	m.HandleFunc("GET /api/diff", s.apiDiff)
	m.HandleFunc("GET /api/agent", s.apiAgent)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		notFoundPage(w, "no such page: "+r.URL.Path)
	})
	return m
}

// notFound is a lookup failure: a 404 with this message.
type notFound struct{ msg string }

func (e notFound) Error() string { return e.msg }

// badRequest is a malformed parameter: a 400 with this message.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

func (s *Server) lookup(r *http.Request) (*rootView, error) {
	root := r.URL.Query().Get("root")
	if root == "" {
		return nil, badRequest{"the root parameter is required"}
	}
	v := s.view(root)
	if v == nil {
		return nil, notFound{fmt.Sprintf("no root %q under %s", root, s.meta)}
	}
	if snap := v.current(); snap.RootMissing {
		return nil, missingRoot(root, snap)
	}
	return v, nil
}

func (s *Server) lookupGeneration(r *http.Request, param string) (*rootView, *snapshot, *manifest.Manifest, error) {
	v, err := s.lookup(r)
	if err != nil {
		return nil, nil, nil, err
	}
	g, err := strconv.ParseInt(r.URL.Query().Get(param), 10, 64)
	if err != nil || g <= 0 {
		return nil, nil, nil, badRequest{fmt.Sprintf("%s must be a positive generation number", param)}
	}
	snap := v.current()
	m := snap.generation(g)
	if m == nil {
		return nil, nil, nil, notFound{fmt.Sprintf("root %s has no retained generation %d", v.root, g)}
	}
	return v, snap, m, nil
}

func (s *Server) lookupAgent(r *http.Request) (*rootView, *snapshot, fleet.Agent, error) {
	v, err := s.lookup(r)
	if err != nil {
		return nil, nil, fleet.Agent{}, err
	}
	id := r.URL.Query().Get("id")
	snap := v.current()
	a, ok := snap.agent(id)
	if !ok {
		return nil, nil, fleet.Agent{}, notFound{fmt.Sprintf("root %s has no agent %q", v.root, id)}
	}
	return v, snap, a, nil
}

// page serves an HTML page after check (nil: always) found what it shows.
func (s *Server) page(name string, check func(*http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			if err := check(r); err != nil {
				var nf notFound
				if errors.As(err, &nf) {
					notFoundPage(w, err.Error())
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprintf(w, errorHTML, "400 bad request", htmlEscape(err.Error()))
				return
			}
		}
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	}
}

const errorHTML = `<!doctype html><html><head><meta charset="utf-8"><title>%[1]s</title>
<link rel="stylesheet" href="/static/style.css"></head><body><header><a href="/">zkconf</a></header>
<main><h1>%[1]s</h1><p class="error">%[2]s</p><p><a href="/">All roots</a></p></main></body></html>`

func notFoundPage(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = fmt.Fprintf(w, errorHTML, "404 not found", htmlEscape(msg))
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "status": code})
}

// fail answers a lookup error: 404, 400 or 500.
func fail(w http.ResponseWriter, err error) {
	var nf notFound
	var br badRequest
	switch {
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, publish.ErrGenerationNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// RootSummary is one root in /api/roots and the head of /api/root.
type RootSummary struct {
	Root        string    `json:"root"`
	Generation  int64     `json:"generation"`
	PublishedAt time.Time `json:"published_at,omitzero"`
	Publisher   string    `json:"publisher,omitempty"`
	Message     string    `json:"message,omitempty"`
	Incarnation string    `json:"incarnation,omitempty"`
	Agents      int       `json:"agents"`
	AtLatest    int       `json:"at_latest"`
	Behind      int       `json:"behind"`
	Failing     int       `json:"failing"`
	Untrusted   int       `json:"untrusted"`
	Gone        int       `json:"gone"`
	// Candidate is the candidate generation of the canary rollout in
	// progress (absent without one; /api/root/rollout has the rest).
	Candidate int64 `json:"candidate_generation,omitempty"`
	// Exists is false for a root the dashboard follows (agents or history
	// under its metadata) whose znode does not exist: its pages are 404.
	Exists bool `json:"exists"`
	// Connected is false while the watcher lost ZooKeeper: the figures
	// are the last ones read.
	Connected bool      `json:"connected"`
	Error     string    `json:"error,omitempty"`
	ReadAt    time.Time `json:"read_at,omitzero"`
	Version   uint64    `json:"version"`
}

// Spread is how many agents report one generation (the progress bar).
type Spread struct {
	Generation int64 `json:"generation"`
	Agents     int   `json:"agents"`
}

// RootView is /api/root: the summary and the generation spread. The
// rollout in progress has its own endpoint and struct (RolloutView).
type RootView struct {
	RootSummary
	Spread []Spread `json:"spread"`
}

// HistoryEntry is one retained generation in /api/root/history.
type HistoryEntry struct {
	Generation  int64     `json:"generation"`
	PublishedAt time.Time `json:"published_at,omitzero"`
	Publisher   string    `json:"publisher,omitempty"`
	Message     string    `json:"message,omitempty"`
	RollbackOf  int64     `json:"rollback_of,omitempty"`
	// Candidate is the selection a rollout's candidate generation started
	// with; PromoteOf and AbortOf the candidate a rollout's end ended.
	Candidate *manifest.Selection `json:"candidate,omitempty"`
	PromoteOf int64               `json:"promote_of,omitempty"`
	AbortOf   int64               `json:"abort_of,omitempty"`
	Items     int                 `json:"items"`
	Bytes     int64               `json:"bytes"`
	Live      bool                `json:"live"`
	Agents    int                 `json:"agents"`
}

// AgentRow is one line of the fleet table.
type AgentRow struct {
	ID         string            `json:"id"`
	Hostname   string            `json:"hostname,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Generation int64             `json:"generation"`
	State      string            `json:"state"`
	Behind     int64             `json:"behind"`
	LastError  string            `json:"last_error,omitempty"`
	AppliedAt  time.Time         `json:"applied_at,omitzero"`
	LastSeen   time.Time         `json:"last_seen,omitzero"`
	Gone       bool              `json:"gone"`
	Untrusted  string            `json:"untrusted,omitempty"`
	// RolloutState and Selected place the agent in the rollout in
	// progress (fleet.ClassifyRollout): stable, candidate, applied,
	// failing or gone, and whether the selection selects it; absent
	// without a rollout.
	RolloutState string `json:"rollout_state,omitempty"`
	Selected     bool   `json:"selected,omitempty"`
}

// summary is the head of a root's view, from the snapshot's shared view.
func (s *Server) summary(v *rootView, snap *snapshot) RootSummary {
	return s.viewOf(v, snap).RootSummary
}

// baseView computes what the view of a snapshot shows (O(agents)): once
// per snapshot, shared by every request and event stream that reads it.
func (s *Server) baseView(v *rootView, snap *snapshot) RootView {
	snap.view.once.Do(func() {
		s.computed.Add(1)
		sum := fleet.Summarize(snap.Agents, snap.latest())
		out := RootSummary{Root: v.root, Generation: snap.latest(), Agents: sum.Total, AtLatest: sum.AtLatest,
			Behind: sum.Behind, Failing: sum.Failing, Untrusted: sum.Untrusted, Gone: sum.Gone,
			Connected: snap.Connected, Error: snap.Error, ReadAt: snap.ReadAt,
			Version: snap.Version, Candidate: canaryGeneration(snap.Live), Exists: !snap.RootMissing}
		if m := snap.Live; m != nil {
			out.PublishedAt, out.Publisher, out.Message, out.Incarnation = m.PublishedAt, m.Publisher, m.Message, m.Incarnation
		}
		counts := map[int64]int{}
		for _, a := range snap.Agents {
			if a.Trusted() {
				counts[a.Status.Generation]++
			}
		}
		spread := []Spread{}
		for _, g := range slices.Backward(slices.Sorted(maps.Keys(counts))) {
			spread = append(spread, Spread{Generation: g, Agents: counts[g]})
		}
		snap.view.v = RootView{RootSummary: out, Spread: spread}
	})
	return snap.view.v
}

// viewOf is the root's view now: the snapshot's shared view, and whether
// the connection has its session now. While ZooKeeper is unreachable the
// watches stay armed (they fire after the reconnect) and the figures are
// the last ones read.
func (s *Server) viewOf(v *rootView, snap *snapshot) RootView {
	out := s.baseView(v, snap)
	if snap.Connected && s.cl.Conn().State() != zk.StateHasSession {
		out.Connected = false
		out.Error = "ZooKeeper connection: " + s.cl.Conn().State().String()
	}
	return out
}

func row(a fleet.Agent, latest int64) AgentRow {
	r := AgentRow{ID: a.ID, Generation: a.Status.Generation, State: agentState(a, latest), Labels: a.Status.Labels,
		LastError: a.Status.LastError, AppliedAt: a.Status.AppliedAt, Gone: a.Gone(), Untrusted: a.Untrusted}
	if a.Err != nil {
		r.Untrusted = a.Err.Error()
	}
	if r.LastError == "" {
		for _, t := range a.Status.Targets {
			if t.Failing() {
				r.LastError = t.Name + ": " + t.LastError
				break
			}
		}
	}
	if a.Trusted() && latest > a.Status.Generation {
		r.Behind = latest - a.Status.Generation
	}
	if reg := a.Registration; reg != nil {
		r.Hostname, r.LastSeen = reg.Hostname, reg.LastSeen
		if r.Labels == nil {
			r.Labels = reg.Labels
		}
	}
	return r
}

func (s *Server) roots() []*rootView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := slices.Collect(maps.Values(s.views))
	slices.SortFunc(out, func(a, b *rootView) int { return strings.Compare(a.root, b.root) })
	return out
}

func (s *Server) apiRoots(w http.ResponseWriter, _ *http.Request) {
	out := []RootSummary{}
	for _, v := range s.roots() {
		out = append(out, s.summary(v, v.current()))
	}
	writeJSON(w, map[string]any{"roots": out, "meta": s.meta, "show_content": s.showContent})
}

func (s *Server) apiRoot(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookup(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, s.viewOf(v, v.current()))
}

// maxLimit bounds one page of the fleet table.
const maxLimit = 1000

func intParam(r *http.Request, name string, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, badRequest{fmt.Sprintf("%s must be a number ≥ 0", name)}
	}
	return n, nil
}

func (s *Server) apiAgents(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookup(r)
	if err != nil {
		fail(w, err)
		return
	}
	offset, err := intParam(r, "offset", 0)
	if err != nil {
		fail(w, err)
		return
	}
	limit, err := intParam(r, "limit", 100)
	if err != nil {
		fail(w, err)
		return
	}
	limit = min(max(limit, 1), maxLimit)
	state, q, ro := r.URL.Query().Get("state"), r.URL.Query().Get("q"), r.URL.Query().Get("rollout")
	switch state {
	case "", "ok", "behind", "failing", "gone", "untrusted":
	default:
		fail(w, badRequest{"state must be ok, behind, failing, gone or untrusted"})
		return
	}
	if !validRolloutState(ro) {
		fail(w, badRequest{"rollout must be stable, candidate, applied, failing or gone"})
		return
	}
	snap := v.current()
	latest := snap.latest()
	rows, total := []AgentRow{}, 0
	for _, a := range snap.Agents {
		if !matches(a, state, q, latest) || ro != "" && snap.Rollout[a.ID].State != ro {
			continue
		}
		if total >= offset && len(rows) < limit {
			rw := row(a, latest)
			rolloutRow(&rw, snap)
			s.seen(&rw, a, snap)
			rows = append(rows, rw)
		}
		total++
	}
	writeJSON(w, map[string]any{"root": v.root, "generation": latest, "total": total, "offset": offset,
		"limit": limit, "agents": rows, "version": snap.Version, "connected": snap.Connected})
}

func (s *Server) apiHistory(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookup(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"root": v.root, "history": history(v.current())})
}

func history(snap *snapshot) []HistoryEntry {
	counts := map[int64]int{}
	for _, a := range snap.Agents {
		if a.Trusted() {
			counts[a.Status.Generation]++
		}
	}
	out := []HistoryEntry{}
	for _, m := range snap.History {
		e := HistoryEntry{Generation: m.Generation, PublishedAt: m.PublishedAt, Publisher: m.Publisher,
			Message: m.Message, RollbackOf: m.RollbackOf, Candidate: m.Candidate, PromoteOf: m.PromoteOf, AbortOf: m.AbortOf,
			Items: len(m.Items), Live: m.Generation == snap.latest(),
			Agents: counts[m.Generation]}
		for _, it := range m.Items {
			e.Bytes += it.Size
		}
		out = append(out, e)
	}
	return out
}

// apiEvents streams server-sent events: one "root" event (the RootView)
// at the start and after every change the watches saw. Pages re-fetch
// the table page they show when it arrives. Streams are capped (503 with
// Retry-After beyond the caps) and end after an idle time and a lifetime
// (the browser's EventSource reconnects); the view they send is computed
// once per change, however many streams follow the root.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookup(r)
	if err != nil {
		fail(w, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	release, err := s.acquireStream(v.root)
	if err != nil {
		w.Header().Set("Retry-After", streamRetryAfter)
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer release()
	tick, stop := v.subscribe()
	defer stop()
	rc := http.NewResponseController(w)
	// The deadline set per write would outlive the stream on the
	// connection, which the browser may reuse for its next request.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// The ticker also notices the connection's state changing, which no
	// watch reports while ZooKeeper is unreachable.
	keepalive := time.NewTicker(time.Second)
	defer keepalive.Stop()
	idle := time.NewTimer(s.limits.idle)
	defer idle.Stop()
	lifetime := time.NewTimer(s.limits.lifetime)
	defer lifetime.Stop()
	var sent RootView
	for first := true; ; first = false {
		view := s.viewOf(v, v.current())
		if first || view.Version != sent.Version || view.Connected != sent.Connected {
			b, _ := json.Marshal(view)
			// A client that stopped reading is dropped, not waited for.
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := fmt.Fprintf(w, "event: root\ndata: %s\n\n", b); err != nil {
				return
			}
			flusher.Flush()
			sent = view
			idle.Reset(s.limits.idle)
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-idle.C:
			return
		case <-lifetime.C:
			return
		case <-tick:
		case <-keepalive.C:
		}
	}
}

// acquireStream takes an event stream slot of root, or says which cap is
// reached; release gives the slot back.
func (s *Server) acquireStream(root string) (release func(), err error) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	switch {
	case s.streams >= s.limits.total:
		return nil, fmt.Errorf("too many event streams (%d, the dashboard's limit): retry later", s.limits.total)
	case s.rootStreams[root] >= s.limits.perRoot:
		return nil, fmt.Errorf("too many event streams on root %s (%d, the limit per root): retry later", root, s.limits.perRoot)
	}
	s.streams++
	s.rootStreams[root]++
	return func() {
		s.streamsMu.Lock()
		defer s.streamsMu.Unlock()
		s.streams--
		if s.rootStreams[root]--; s.rootStreams[root] == 0 {
			delete(s.rootStreams, root)
		}
	}, nil
}

// ItemView is one item of a generation.
type ItemView struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// maxAppliedList bounds the agent ids listed as having applied a generation.
const maxAppliedList = 1000

func (s *Server) apiGeneration(w http.ResponseWriter, r *http.Request) {
	v, snap, m, err := s.lookupGeneration(r, "g")
	if err != nil {
		fail(w, err)
		return
	}
	items := []ItemView{}
	for _, n := range m.Names() {
		items = append(items, ItemView{Name: n, Size: m.Items[n].Size, SHA256: m.Items[n].SHA256})
	}
	applied, total := []string{}, 0
	for _, a := range snap.Agents {
		if a.Trusted() && a.Status.Generation == m.Generation {
			if len(applied) < maxAppliedList {
				applied = append(applied, a.ID)
			}
			total++
		}
	}
	gens := []int64{}
	for _, h := range snap.History {
		gens = append(gens, h.Generation)
	}
	writeJSON(w, map[string]any{"root": v.root, "generation": m.Generation, "live": m.Generation == snap.latest(),
		"manifest": m, "items": items, "applied_by": applied, "applied_count": total, "generations": gens,
		"show_content": s.showContent})
}

// DiffItem is one item of /api/diff.
type DiffItem struct {
	Name    string `json:"name"`
	Change  string `json:"change"` // added, removed, changed, same
	OldSize int64  `json:"old_size"`
	NewSize int64  `json:"new_size"`
	OldSHA  string `json:"old_sha256,omitempty"`
	NewSHA  string `json:"new_sha256,omitempty"`
	Added   int    `json:"lines_added"`
	Removed int    `json:"lines_removed"`
	Binary  bool   `json:"binary,omitempty"`
	// Hunks are the changed lines with context, only with --show-content.
	Hunks [][]DiffLine `json:"hunks,omitempty"`
}

// DiffLine is one line of a hunk: op " ", "-" or "+", its line numbers in
// the old and new content (0 when absent), its text.
type DiffLine struct {
	Op   string `json:"op"`
	Old  int    `json:"old,omitempty"`
	New  int    `json:"new,omitempty"`
	Text string `json:"text"`
}

func (s *Server) contents(ctx context.Context, v *rootView, g int64) (map[string][]byte, error) {
	key := contentKey{v.root, g}
	s.contentMu.Lock()
	c, ok := s.content[key]
	s.contentMu.Unlock()
	if ok {
		return c, nil
	}
	_, items, err := v.pub.Read(ctx, g)
	if err != nil {
		return nil, err
	}
	s.contentMu.Lock()
	defer s.contentMu.Unlock()
	if _, ok := s.content[key]; !ok {
		s.content[key] = items
		s.order = append(s.order, key)
		if len(s.order) > contentKept {
			delete(s.content, s.order[0])
			s.order = s.order[1:]
		}
	}
	return items, nil
}

func (s *Server) apiDiff(w http.ResponseWriter, r *http.Request) {
	v, _, from, err := s.lookupGeneration(r, "from")
	if err != nil {
		fail(w, err)
		return
	}
	_, _, to, err := s.lookupGeneration(r, "to")
	if err != nil {
		fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var oldC, newC map[string][]byte
	names := map[string]bool{}
	for n := range from.Items {
		names[n] = true
	}
	for n := range to.Items {
		names[n] = true
	}
	out := []DiffItem{}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		o, oOK := from.Items[n]
		nw, nOK := to.Items[n]
		d := DiffItem{Name: n, OldSize: o.Size, NewSize: nw.Size, OldSHA: o.SHA256, NewSHA: nw.SHA256}
		switch {
		case !oOK:
			d.Change = "added"
		case !nOK:
			d.Change = "removed"
		case o.SHA256 != nw.SHA256:
			d.Change = "changed"
		default:
			d.Change = "same"
			out = append(out, d)
			continue
		}
		if oldC == nil {
			if oldC, err = s.contents(ctx, v, from.Generation); err != nil {
				fail(w, err)
				return
			}
			if newC, err = s.contents(ctx, v, to.Generation); err != nil {
				fail(w, err)
				return
			}
		}
		hunks, added, removed, ok := textdiff.Hunks(oldC[n], newC[n])
		d.Added, d.Removed, d.Binary = added, removed, !ok
		if s.showContent {
			for _, h := range hunks {
				lines := make([]DiffLine, len(h))
				for i, l := range h {
					lines[i] = DiffLine{Op: string(l.Kind), Old: l.A, New: l.B, Text: l.Text}
				}
				d.Hunks = append(d.Hunks, lines)
			}
		}
		out = append(out, d)
	}
	writeJSON(w, map[string]any{"root": v.root, "from": from.Generation, "to": to.Generation,
		"show_content": s.showContent, "items": out})
}

func (s *Server) apiAgent(w http.ResponseWriter, r *http.Request) {
	v, snap, a, err := s.lookupAgent(r)
	if err != nil {
		fail(w, err)
		return
	}
	rw := row(a, snap.latest())
	rolloutRow(&rw, snap)
	s.seen(&rw, a, snap)
	out := map[string]any{"root": v.root, "row": rw, "has_status": a.HasNode,
		"registration": a.Registration, "applied": v.appliedBy(a.ID)}
	if a.Trusted() {
		out["status"] = a.Status
		out["targets"] = a.Status.Targets
	} else {
		out["targets"] = []fleet.TargetResult{}
	}
	writeJSON(w, out)
}

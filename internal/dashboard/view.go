package dashboard

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// retry paces the watchers' reconnection attempts after ZooKeeper failed
// them (a restart, a lost session).
var retry = backoff.Policy{Base: 250 * time.Millisecond, Max: 5 * time.Second}

// settle coalesces a burst of status changes (a rollout over thousands of
// agents) into one re-read of the fleet.
const settle = 200 * time.Millisecond

// appliedKept is how many generations per agent the view remembers having
// seen it apply.
const appliedKept = 20

// rootView is the watched in-memory view of one root, shared by every
// browser: the watcher goroutine replaces its snapshot; handlers read it.
type rootView struct {
	root  string
	cl    *zkclient.Client
	pub   *publish.Publisher
	fleet *fleet.Fleet
	log   *slog.Logger

	mu      sync.RWMutex
	snap    *snapshot
	applied map[string][]AppliedGeneration // agent id -> newest first
	subs    map[chan struct{}]struct{}
	// record and driverAlive are what watchRollout last read: the rollout
	// record and whether its driver's liveness node exists.
	record      *publish.RolloutRecord
	driverAlive bool
}

// snapshot is one consistent reading of a root.
type snapshot struct {
	Version   uint64
	ReadAt    time.Time
	Live      *manifest.Manifest // nil: never published (or unreadable)
	History   []*manifest.Manifest
	Agents    []fleet.Agent
	byID      map[string]int
	Connected bool
	Error     string
	// Rollout is each agent's place in the rollout the live manifest
	// announces (by agent id; nil without a rollout), computed once per
	// re-read. Record and DriverAlive are watchRollout's latest reading.
	Rollout     map[string]fleet.RolloutAgent
	Record      *publish.RolloutRecord
	DriverAlive bool
	// progress is the rollout's per-step progress, computed on first use;
	// view is the root's view (Server.baseView), likewise.
	progress *lazyProgress
	view     *lazyView

	// RootMissing: the root's znode does not exist (lookup answers 404).
	RootMissing bool
}

// lazyView is a snapshot's RootView, computed once on first use.
type lazyView struct {
	once sync.Once
	v    RootView
}

// AppliedGeneration is a generation the dashboard saw an agent apply.
type AppliedGeneration struct {
	Generation int64     `json:"generation"`
	AppliedAt  time.Time `json:"applied_at,omitzero"`
}

func newRootView(cl *zkclient.Client, root, meta string, log *slog.Logger) (*rootView, error) {
	pub, err := publish.New(cl, root, publish.WithMeta(meta), publish.WithLogger(log))
	if err != nil {
		return nil, err
	}
	fl, err := fleet.New(cl, root, fleet.WithMeta(meta))
	if err != nil {
		return nil, err
	}
	return &rootView{root: root, cl: cl, pub: pub, fleet: fl, log: log.With("root", root), snap: &snapshot{byID: map[string]int{}, view: &lazyView{}, progress: &lazyProgress{}},
		applied: map[string][]AppliedGeneration{}, subs: map[chan struct{}]struct{}{}}, nil
}

// current returns the latest snapshot (never nil; never modified).
func (v *rootView) current() *snapshot {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.snap
}

// subscribe returns a channel that receives a tick after every change,
// and a function ending the subscription.
func (v *rootView) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	v.mu.Lock()
	v.subs[ch] = struct{}{}
	v.mu.Unlock()
	return ch, func() {
		v.mu.Lock()
		delete(v.subs, ch)
		v.mu.Unlock()
	}
}

// publishSnap installs s and wakes every subscriber.
func (v *rootView) publishSnap(s *snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.installLocked(s)
}

// installLocked installs s, with the rollout record last read, and wakes
// every subscriber; v.mu is held.
func (v *rootView) installLocked(s *snapshot) {
	s.Version = v.snap.Version + 1
	s.Record, s.DriverAlive, s.progress, s.view = v.record, v.driverAlive, &lazyProgress{}, &lazyView{}
	v.snap = s
	for _, a := range s.Agents {
		if !a.Trusted() || a.Status.Generation == 0 {
			continue
		}
		seen := v.applied[a.ID]
		if len(seen) > 0 && seen[0].Generation == a.Status.Generation {
			continue
		}
		seen = slices.Insert(seen, 0, AppliedGeneration{Generation: a.Status.Generation, AppliedAt: a.Status.AppliedAt})
		v.applied[a.ID] = seen[:min(len(seen), appliedKept)]
	}
	for ch := range v.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// appliedBy returns the generations the view saw agent id apply (empty,
// not nil: the agent page lists them).
func (v *rootView) appliedBy(id string) []AppliedGeneration {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return append([]AppliedGeneration{}, v.applied[id]...)
}

// disconnected marks the view as not live (the last snapshot stays).
func (v *rootView) disconnected(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := *v.snap
	old.Connected, old.Error = false, err.Error()
	v.installLocked(&old)
}

// run follows the root until ctx ends: Fleet.Changes drives a re-read on
// every watch that fires; a failure (ZooKeeper restarted, session lost)
// marks the view disconnected and starts again after a backoff.
func (v *rootView) run(ctx context.Context) {
	for attempt := 1; ; attempt++ {
		err := v.fleet.Changes(ctx, func() error {
			if err := v.refresh(ctx); err != nil {
				return err
			}
			attempt = 1
			// A burst of changes lands as one re-read.
			return work.Sleep(ctx, settle)
		})
		if ctx.Err() != nil {
			return
		}
		v.log.Warn("dashboard: lost the live view; reconnecting", "err", err)
		v.disconnected(err)
		if retry.Sleep(ctx, attempt) != nil {
			return
		}
	}
}

// refresh reads the fleet, the live manifest and the history.
func (v *rootView) refresh(ctx context.Context) error {
	agents, err := v.fleet.List(ctx)
	if err != nil {
		return err
	}
	conn := v.cl.Conn()
	s := &snapshot{ReadAt: time.Now(), Agents: agents, byID: make(map[string]int, len(agents)), Connected: true}
	for i, a := range agents {
		s.byID[a.ID] = i
	}
	b, _, err := conn.Get(v.root)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		s.RootMissing = true
	case err != nil:
		return err
	default:
		if m, derr := manifest.Decode(b); derr == nil {
			s.Live = m
		} else if !errors.Is(derr, manifest.ErrEmpty) {
			s.Error = "live manifest: " + derr.Error()
		}
	}
	old := v.current()
	// A rollout's start adds its candidate to the history without a new
	// live manifest: the canary's generation is part of the key.
	if s.Live != nil && old.Live != nil && old.Live.PublishID == s.Live.PublishID &&
		canaryGeneration(old.Live) == canaryGeneration(s.Live) && len(old.History) > 0 {
		s.History = old.History
	} else if s.History, err = v.pub.History(ctx); err != nil {
		return err
	}
	if s.Live != nil && s.Live.Canary != nil {
		s.Rollout = make(map[string]fleet.RolloutAgent, len(agents))
		for _, ra := range fleet.ClassifyRollout(agents, s.Live.Generation, s.Live.Incarnation, s.Live.Canary) {
			s.Rollout[ra.ID] = ra
		}
	}
	v.publishSnap(s)
	return nil
}

// agent returns agent id of the snapshot.
func (s *snapshot) agent(id string) (fleet.Agent, bool) {
	i, ok := s.byID[id]
	if !ok {
		return fleet.Agent{}, false
	}
	return s.Agents[i], true
}

// generation returns the retained manifest of generation g.
func (s *snapshot) generation(g int64) *manifest.Manifest {
	if s.Live != nil && s.Live.Generation == g {
		return s.Live
	}
	for _, m := range s.History {
		if m.Generation == g {
			return m
		}
	}
	return nil
}

// latest is the live generation (0 when never published).
func (s *snapshot) latest() int64 {
	if s.Live == nil {
		return 0
	}
	return s.Live.Generation
}

// agentState names an agent's state as confpush status does.
func agentState(a fleet.Agent, latest int64) string {
	switch {
	case a.HasNode && !a.Trusted():
		return "untrusted"
	case a.Gone():
		return "gone"
	case a.Status.Failing():
		return "failing"
	case a.Status.Generation < latest:
		return "behind"
	}
	return "ok"
}

// matches reports whether a passes the table's filters: state ("" for
// any) and q, a substring of the id, hostname or a label.
func matches(a fleet.Agent, state, q string, latest int64) bool {
	if state != "" && agentState(a, latest) != state {
		return false
	}
	if q == "" {
		return true
	}
	if strings.Contains(a.ID, q) {
		return true
	}
	labels := a.Status.Labels
	if a.Registration != nil {
		if strings.Contains(a.Registration.Hostname, q) {
			return true
		}
		if labels == nil {
			labels = a.Registration.Labels
		}
	}
	for k, val := range labels {
		if strings.Contains(k+"="+val, q) {
			return true
		}
	}
	return false
}

// discover keeps the set of roots under meta watched: it lists
// <meta>/roots with a watch and starts a view for every root key found.
func (s *Server) discover(ctx context.Context) {
	parent := s.meta + "/roots"
	for attempt := 1; ; attempt++ {
		keys, _, ev, err := s.cl.Conn().ChildrenW(parent)
		if errors.Is(err, zk.ErrNoNode) {
			var exists bool
			if exists, _, ev, err = s.cl.Conn().ExistsW(parent); err == nil && exists {
				continue // created in between: list it
			}
		}
		if err == nil {
			attempt = 0
			for _, k := range keys {
				if root, ok := layout.RootOfKey(k); ok && s.wanted(root) {
					s.addRoot(ctx, root)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ev:
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("dashboard: cannot list the roots; retrying", "parent", parent, "err", err)
		if retry.Sleep(ctx, attempt) != nil {
			return
		}
	}
}

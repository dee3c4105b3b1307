package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/targets"
	"github.com/zkconf/zkconf/internal/template"
)

// RootSpec is one root of a daemon that follows several (Options.Roots).
type RootSpec struct {
	// Name is how targets (TargetSpec.Root, Roots), templates (item
	// "common" "db.json"), logs and metrics name the root; it also names
	// the root's state directory (StateDir/Name).
	Name string
	// Path is the ZooKeeper path the root is published under.
	Path string
	// Auth is the root's own digest identity ("user:password"), if any:
	// the caller adds it to the session (zkclient.Config.ExtraAuth); the
	// root's status node is created with its user's ACL.
	Auth string
}

// follower is what the daemon follows: one root's cache.Cache, or the
// roots of a cache.Group (multiRoots). Snapshots are read apart (current,
// and the loop's update channels), since their types differ.
type follower interface {
	State() cache.StateInfo
	StateChanges() <-chan cache.StateInfo
	Done() <-chan struct{}
	Adopt(inc string) error
	Stats() cache.Stats
	Close() error
}

// multiRoots follows several roots through one cache.Group and turns what
// it delivers into rootsSnapshot values: each root's newest snapshot (for
// the targets of one root, which never wait for a cut) and the newest cut
// (for the templates that read several).
type multiRoots struct {
	g     *cache.Group
	names []string // sorted
	paths map[string]string

	updates chan Snapshot // one slot, latest value
	states  chan cache.StateInfo
	done    chan struct{} // closed when run returns

	mu     sync.Mutex
	latest map[string]*cache.Snapshot
	cut    cache.Cut
	cur    *rootsSnapshot
}

func newMultiRoots(g *cache.Group) *multiRoots {
	m := &multiRoots{g: g, paths: g.Roots(), updates: make(chan Snapshot, 1), states: make(chan cache.StateInfo, 1),
		done: make(chan struct{}), latest: map[string]*cache.Snapshot{}}
	for name := range m.paths {
		m.names = append(m.names, name)
	}
	slices.Sort(m.names)
	// The snapshots loaded from state files serve the targets of one
	// root at once; cuts come only from the group.
	m.take(g.Snapshots(), nil)
	m.states <- m.State()
	return m
}

// run forwards the group's deliveries until the group is closed.
func (m *multiRoots) run() {
	defer close(m.done)
	for {
		select {
		case <-m.g.Done():
			return
		case snaps := <-m.g.RootUpdates():
			m.take(snaps, nil)
		case c := <-m.g.Updates():
			m.take(nil, c)
		case <-m.g.StateChanges():
			offerLatest(m.states, m.State())
		}
	}
}

// take records new root snapshots or a new cut and offers the combination
// when it changed.
func (m *multiRoots) take(snaps map[string]*cache.Snapshot, cut cache.Cut) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for name, s := range snaps {
		if s != nil && s != m.latest[name] {
			m.latest[name], changed = s, true
		}
	}
	if cut != nil {
		m.cut, changed = cut, true
	}
	if !changed || len(m.latest) == 0 {
		return
	}
	m.cur = newRootsSnapshot(m.names, m.latest, m.cut)
	offerLatest(m.updates, Snapshot(m.cur))
}

// current returns the newest combination, nil before any root has a
// snapshot.
func (m *multiRoots) current() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return nil
	}
	return m.cur
}

// State combines the roots' states: Live when every root is, otherwise
// the state of the first root (by name) that is not, its error naming the
// root (what /readyz and the status say). Generation is the combination's
// (rootsSnapshot.Generation).
func (m *multiRoots) State() cache.StateInfo {
	states := m.g.States()
	out := cache.StateInfo{State: cache.StateLive}
	for _, name := range m.names {
		st := states[name]
		out.Generation += st.Generation
		out.Expiries = max(out.Expiries, st.Expiries)
		out.IncarnationSwitches += st.IncarnationSwitches
		if st.Since.After(out.Since) && out.State == cache.StateLive {
			out.Since = st.Since
		}
		if out.State == cache.StateLive && st.State != cache.StateLive {
			gen := out.Generation
			out = st
			out.Generation = gen
			err := st.Err
			if err == nil {
				err = fmt.Errorf("%v", st.State)
			}
			out.Err = &RootError{Root: name, Path: m.paths[name], Err: err}
		}
	}
	return out
}

// stateKey is what of every root's state its status node must show
// when it changes: state, reason and incarnation, root by root.
func (m *multiRoots) stateKey() string {
	states := m.g.States()
	var b strings.Builder
	for _, name := range m.names {
		st := states[name]
		fmt.Fprintf(&b, ";%s=%s%s", name, st.State, incarnationKey(st))
		if st.State != cache.StateLive && st.Err != nil {
			b.WriteString("|" + st.Err.Error())
		}
	}
	return b.String()
}

// RootError is why one root of several is not live: its error, naming the
// root.
type RootError struct {
	Root, Path string
	Err        error
}

func (e *RootError) Error() string { return fmt.Sprintf("root %s (%s): %v", e.Root, e.Path, e.Err) }

// Unwrap returns the root's error.
func (e *RootError) Unwrap() error { return e.Err }

func (m *multiRoots) StateChanges() <-chan cache.StateInfo { return m.states }
func (m *multiRoots) Done() <-chan struct{}                { return m.g.Done() }
func (m *multiRoots) Adopt(inc string) error               { return m.g.Adopt(inc) }

// Stats sums the roots' cache counters that the daemon reports.
func (m *multiRoots) Stats() cache.Stats {
	var s cache.Stats
	for _, rs := range m.g.Stats().Roots {
		s.IncarnationSwitches += rs.IncarnationSwitches
	}
	return s
}

func (m *multiRoots) Close() error {
	err := m.g.Close()
	<-m.done
	return err
}

// offerLatest replaces what ch holds with v (one slot, latest value).
func offerLatest[T any](ch chan T, v T) {
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- v:
	default:
	}
}

// rootsSnapshot is what a daemon following several roots applies: every
// root's newest snapshot, and the newest cut. Each target renders from its
// view of it (viewFor): a target of one root its root's newest snapshot, a
// template that reads several the cut (rootsView). It is immutable.
type rootsSnapshot struct {
	names  []string
	latest map[string]*cache.Snapshot
	cut    cache.Cut
	id     string
	gen    int64
}

func newRootsSnapshot(names []string, latest map[string]*cache.Snapshot, cut cache.Cut) *rootsSnapshot {
	s := &rootsSnapshot{names: names, latest: make(map[string]*cache.Snapshot, len(latest)), cut: cut}
	var id strings.Builder
	for _, name := range names {
		if l := latest[name]; l != nil {
			s.latest[name] = l
			s.gen += l.Generation()
			fmt.Fprintf(&id, "%s=%s;", name, l.PublishID())
		}
	}
	id.WriteString("cut:")
	for _, name := range names {
		if c := cut[name]; c != nil {
			fmt.Fprintf(&id, "%s=%s;", name, c.PublishID())
		}
	}
	s.id = id.String()
	return s
}

// Generation is the sum of the roots' newest generations: it grows with
// every new generation of any root (none goes back), which is what the
// renderer's bookkeeping needs; each root's own is in its status.
func (s *rootsSnapshot) Generation() int64 { return s.gen }

// Names and Get read no root: every target reads its view (viewFor).
func (s *rootsSnapshot) Names() []string           { return nil }
func (s *rootsSnapshot) Get(string) ([]byte, bool) { return nil, false }

// Zxid is the newest of the roots' zxids.
func (s *rootsSnapshot) Zxid() int64 {
	var z int64
	for _, l := range s.latest {
		z = max(z, l.Zxid())
	}
	return z
}

// PublishID names every root's newest publish and the cut's: a new
// generation of any root, or a new cut, is a new combination to apply.
func (s *rootsSnapshot) PublishID() string { return s.id }

// PublishedAt is the newest of the roots' publish times.
func (s *rootsSnapshot) PublishedAt() time.Time {
	var t time.Time
	for _, l := range s.latest {
		if p := l.PublishedAt(); p.After(t) {
			t = p
		}
	}
	return t
}

// bytes is the size of every root's newest items (the memory limit).
func (s *rootsSnapshot) bytes() int64 {
	var n int64
	for _, l := range s.latest {
		n += snapshotBytes(l)
	}
	for name, c := range s.cut {
		if c != s.latest[name] {
			n += snapshotBytes(c)
		}
	}
	return n
}

// rootsView is the snapshot a template that reads several roots renders:
// its own root's snapshot of a cut, and the other roots it lists
// (template.RootSnapshot).
type rootsView struct {
	*cache.Snapshot
	others map[string]*cache.Snapshot
}

// Root returns the cut's snapshot of a root the target lists.
func (v rootsView) Root(name string) (template.Snapshot, bool) {
	s, ok := v.others[name]
	if !ok {
		return nil, false
	}
	return s, true
}

// errNoView: a target's root has no snapshot yet, or a template that
// reads several roots has no cut yet.
var errNoView = errors.New("no snapshot of its roots yet")

// viewFor returns what target spec renders of snap: snap itself unless
// it is a rootsSnapshot; errNoView when that has nothing for it yet (the
// target keeps its output).
func viewFor(snap Snapshot, spec TargetSpec) (Snapshot, error) {
	rs, ok := snap.(*rootsSnapshot)
	if !ok {
		// NewRootsSnapshot's sets, or one snapshot.
		return targets.View(snap, spec.Name, spec.Root, spec.Roots)
	}
	if len(spec.Roots) == 0 {
		if l := rs.latest[spec.Root]; l != nil {
			return l, nil
		}
		return nil, errNoView
	}
	own := rs.cut[spec.Root]
	if own == nil {
		return nil, errNoView
	}
	v := rootsView{Snapshot: own, others: make(map[string]*cache.Snapshot, len(spec.Roots))}
	for _, r := range spec.Roots {
		c := rs.cut[r]
		if c == nil {
			return nil, errNoView
		}
		v.others[r] = c
	}
	return v, nil
}

// rootOptions are root name's own cache options: its state file
// (StateDir/NAME/snapshot.state).
func rootOptions(opts Options, name string) []cache.Option {
	var o []cache.Option
	if !opts.NoPersist {
		o = append(o, cache.WithStateFile(rootStateFile(opts.StateDir, name)))
	}
	return o
}

// rootStateDir is a root's state directory when the daemon follows
// several.
func rootStateDir(stateDir, name string) string { return stateDir + "/" + name }

func rootStateFile(stateDir, name string) string {
	return rootStateDir(stateDir, name) + "/" + StateFileName
}

// startGroup starts the cache.Group of opts.Roots with copts (the options
// every root's cache takes) and wraps it.
func startGroup(ctx context.Context, opts Options, copts []cache.Option) (*multiRoots, error) {
	roots := make(map[string]string, len(opts.Roots))
	for _, r := range opts.Roots {
		roots[r.Name] = r.Path
		copts = append(copts, cache.WithRootOptions(r.Name, rootOptions(opts, r.Name)...))
	}
	g, err := cache.NewGroup(ctx, roots, copts...)
	if err != nil {
		return nil, err
	}
	m := newMultiRoots(g)
	go m.run()
	return m, nil
}

// rootStatusNode is the status node of one root (root.Name "" when the
// daemon follows one root: the status is the daemon's as it is).
type rootStatusNode struct {
	root RootSpec
	node *statusNode
}

// RootStatus is one root's part of the /status of a daemon that follows
// several roots (Status.Roots).
type RootStatus = fleet.RootStatus

// rootStatuses returns each root's status, by name: its path, its cache's
// state and newest generation, and the generation applied to every
// target of that root.
func (d *Daemon) rootStatuses() []RootStatus {
	states := d.multi.g.States()
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]RootStatus, 0, len(d.multi.names))
	for _, name := range d.multi.names {
		st := states[name]
		rs := RootStatus{Name: name, Root: d.multi.paths[name], CacheGeneration: st.Generation, Attempted: d.rootAttempted[name],
			State: st.State.String(), Since: st.Since, Incarnation: st.Incarnation, IncarnationSwitches: st.IncarnationSwitches}
		if st.State != cache.StateLive && st.Err != nil {
			rs.Error = st.Err.Error()
		}
		var ierr *cache.IncarnationError
		if errors.As(st.Err, &ierr) {
			rs.IncarnationRefused = ierr.SeenIncarnation
		}
		if l := d.rootApplied[name]; l != nil {
			rs.Generation, rs.Zxid, rs.PublishID, rs.Candidate = l.Generation(), l.Zxid(), l.PublishID(), l.Candidate()
		}
		out = append(out, rs)
	}
	return out
}

// hostStatus clears, on the status of a daemon that follows several
// roots, the fields that describe one root: each root's are in s.Roots.
func hostStatus(s *Status) {
	s.Root, s.Generation, s.Zxid, s.PublishID, s.Candidate = "", 0, 0, "", false
	s.CacheGeneration, s.Attempted, s.Incarnation, s.IncarnationRefused = 0, 0, "", ""
}

// rootStatus is the host's status s as root r's status node reports it:
// r's own part of s.Roots, and the targets that read r.
func (d *Daemon) rootStatus(s Status, r RootSpec) Status {
	d.mu.Lock()
	specs := d.opts.Targets
	d.mu.Unlock()
	if i := slices.IndexFunc(s.Roots, func(rs RootStatus) bool { return rs.Name == r.Name }); i >= 0 {
		rs := s.Roots[i]
		s.Root, s.Generation, s.Zxid, s.PublishID, s.Candidate = rs.Root, rs.Generation, rs.Zxid, rs.PublishID, rs.Candidate
		s.CacheGeneration, s.Attempted, s.State, s.Since = rs.CacheGeneration, rs.Attempted, rs.State, rs.Since
		s.Incarnation, s.IncarnationRefused, s.IncarnationSwitches = rs.Incarnation, rs.IncarnationRefused, rs.IncarnationSwitches
	}
	s.Roots = nil
	var ts []TargetResult
	for _, t := range s.Targets {
		i := slices.IndexFunc(specs, func(sp TargetSpec) bool { return sp.Name == t.Name })
		if i < 0 || (specs[i].Root != r.Name && !slices.Contains(specs[i].Roots, r.Name)) {
			continue
		}
		ts = append(ts, t)
	}
	s.Targets = ts
	return s
}

// applyUnits splits ts into what ApplyAll applies all or nothing: every
// target, or with several roots the targets of each root (a template
// that reads several goes with its own root), so that a publish to one
// root is applied whatever another root's targets do.
func applyUnits(snap Snapshot, ts []*target) [][]*target {
	if _, ok := snap.(*rootsSnapshot); !ok {
		return [][]*target{ts}
	}
	var units [][]*target
	index := map[string]int{}
	for _, t := range ts {
		i, ok := index[t.spec.Root]
		if !ok {
			i = len(units)
			index[t.spec.Root] = i
			units = append(units, nil)
		}
		units[i] = append(units[i], t)
	}
	return units
}

// noteRootsApplied records, after an apply of snap, each root whose
// targets all hold it now: a root's status reports its own generation
// applied whatever the other roots' targets did.
func (d *Daemon) noteRootsApplied(snap Snapshot) {
	rs, ok := snap.(*rootsSnapshot)
	if !ok {
		return
	}
	results := d.r.Results()
	d.mu.Lock()
	defer d.mu.Unlock()
	specs := d.opts.Targets
	if d.rootApplied == nil {
		d.rootApplied = map[string]*cache.Snapshot{}
	}
	if d.rootAttempted == nil {
		d.rootAttempted = map[string]int64{}
	}
	for name, l := range rs.latest {
		d.rootAttempted[name] = l.Generation()
		all := true
		for _, res := range results {
			i := slices.IndexFunc(specs, func(sp TargetSpec) bool { return sp.Name == res.Name })
			if i >= 0 && specs[i].Root == name && len(specs[i].Roots) == 0 && (!res.OK || res.Generation != l.Generation()) {
				all = false
			}
		}
		if all {
			d.rootApplied[name] = l
		}
	}
}

// rootMetrics sets the per-root series from each root's state and what
// its targets applied.
func (d *Daemon) rootMetrics() {
	states := d.multi.g.States()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range d.multi.names {
		var applied int64
		if l := d.rootApplied[name]; l != nil {
			applied = l.Generation()
		}
		st := states[name]
		d.metrics.setRoot(name, applied, st.Generation, st.State == cache.StateLive)
	}
}

// targetGeneration is the generation a target's check and reload commands
// are told (ZKCONF_GENERATION): with several roots, the target's own
// root's, not the combined sequence the renderer counts in.
func targetGeneration(snap Snapshot, spec TargetSpec, combined int64) int64 {
	if _, ok := snap.(*rootsSnapshot); !ok {
		return combined
	}
	if v, err := viewFor(snap, spec); err == nil {
		return v.Generation()
	}
	return combined
}

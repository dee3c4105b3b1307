package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
)

// This file is following a rollout (Wait): the agents' nodes watched
// until enough of them applied a generation, or one rejected it.

// WaitOptions says how many agents a rollout needs.
type WaitOptions struct {
	// All waits for every expected agent: registered (the agent
	// registry), named by the access policy, or seen with a trusted status
	// node during the wait (agents joining later are followed too). An
	// expected agent without a trusted status node is gone and blocks the
	// rollout until it is back or forgotten (confpush forget).
	All bool
	// Min waits until at least Min agents applied the generation. With
	// neither All nor Min set, All is assumed.
	Min int
	// Progress, when set, is called after every change seen.
	Progress func(Progress)
	// Incarnation is the root incarnation generation g belongs to. Empty:
	// Wait reads it from the root's manifest when it starts.
	Incarnation string
}

// Progress is a rollout's state while it is followed.
type Progress struct {
	Generation int64
	Applied    []string
	Rejected   []string
	Pending    []string
	// Gone are expected agents without a trusted status node.
	Gone []string
	// NotStarted are the agents of Gone that never reported: named by
	// the access policy, never registered by their agent (or registered
	// without data, as confpush init may create the node) and not seen
	// during the wait. A host being set up, or one starting right now,
	// rather than one that left.
	NotStarted []string
	// Untrusted are status nodes not provably their agent's, of agents
	// not expected: shown, never needed nor counted.
	Untrusted []string
	// Foreign are the status and registry nodes, on a tree with an
	// access policy, whose name is no agent identity of the policy:
	// never read, never expected (Skipped, SkipForeign).
	Foreign []string
	Needed  int // agents that must apply for success
}

// ErrNoExpectedAgents is a --all wait with nobody to wait for: no agent is
// registered, the policy names none, and no trusted status node exists.
var ErrNoExpectedAgents = errors.New("no agent is expected to apply it: none registered, none in the access policy, " +
	"none with a trusted status node")

// RolloutError is a rollout that did not complete: the agents that
// rejected the generation (with their errors), are gone, or did not apply
// it in time.
type RolloutError struct {
	Progress Progress
	Errors   map[string]string
	Cause    error
}

func (e *RolloutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rollout of generation %d incomplete: %d of %d needed agents applied it",
		e.Progress.Generation, len(e.Progress.Applied), e.Progress.Needed)
	for _, id := range e.Progress.Rejected {
		fmt.Fprintf(&b, "; %s failed: %s", id, e.Errors[id])
	}
	for _, id := range e.Progress.Gone {
		if why := e.Errors[id]; why != "" {
			fmt.Fprintf(&b, "; %s gone (its status node is untrusted: %s)", id, why)
		} else if slices.Contains(e.Progress.NotStarted, id) {
			fmt.Fprintf(&b, "; %s not started (named by the access policy, never reported)", id)
		} else {
			fmt.Fprintf(&b, "; %s gone (no status node; 'confpush forget %s' if it was removed)", id, id)
		}
	}
	if len(e.Progress.Pending) > 0 {
		fmt.Fprintf(&b, "; not yet applied: %s", strings.Join(e.Progress.Pending, ", "))
	}
	if len(e.Progress.Untrusted) > 0 {
		fmt.Fprintf(&b, "; untrusted status nodes not counted: %s", strings.Join(e.Progress.Untrusted, ", "))
	}
	if n := len(e.Progress.Foreign); n > 0 {
		fmt.Fprintf(&b, "; %d foreign node(s) ignored (no agent identity of that name; 'confpush acl --repair' deletes them): %s",
			n, sample(e.Progress.Foreign, 5))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

func (e *RolloutError) Unwrap() error { return e.Cause }

// sample joins the first n names, and says how many more there are.
func sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// Wait follows the agents' status nodes of the root and the agent registry with watches (no polling) until enough
// agents report generation g on trusted
// status nodes, and returns the final progress. It fails early, with a
// *RolloutError, when success has become impossible (rejections), when an
// All wait has no expected agent (ErrNoExpectedAgents), when the reader
// cannot verify status nodes (without the publisher's ADMIN on the root of
// a tree `confpush init` set up; the error matches zkclient.ErrPermission),
// and when ctx ends.
func (f *Fleet) Wait(ctx context.Context, g int64, opts WaitOptions) (Progress, error) {
	conn, p := f.cl.Conn(), f.paths
	if !opts.All && opts.Min <= 0 {
		opts.All = true
	}
	trust, err := readTrust(ctx, conn, p)
	if err != nil {
		pr := Progress{Generation: g, Needed: opts.Min}
		return pr, &RolloutError{Progress: pr, Cause: fmt.Errorf("cannot verify the agents' status nodes: %w", err)}
	}
	if opts.Incarnation == "" {
		opts.Incarnation = rootIncarnation(conn, p.Root)
	}
	w := newWaiter(conn, p, trust)
	w.g, w.opts = g, opts
	return w.run(ctx)
}

// newWaiter follows the fleet of p, judging nodes with trust.
func newWaiter(conn *zk.Conn, p layout.Paths, trust aclmodel.Trust) *waiter {
	policy := map[string]bool{}
	for _, id := range trust.Agents() {
		policy[id] = true
	}
	return &waiter{conn: conn, p: p, trust: trust, policy: policy, agents: map[string]Agent{}, seen: map[string]bool{},
		registered: map[string]bool{}, reported: map[string]bool{}, regDirty: true, acls: map[string]aclSeen{}, watched: map[string]bool{},
		foreign: map[string]bool{}, foreignRegs: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// rootIncarnation is the incarnation of the root's live manifest, or ""
// when it cannot be read (then generations are compared alone).
func rootIncarnation(conn *zk.Conn, root string) string {
	b, _, err := conn.Get(root)
	if err != nil {
		return ""
	}
	m, err := manifest.Decode(b)
	if err != nil {
		return ""
	}
	return m.Incarnation
}

// aclSeen is a status node's ACL as read for one creation and ACL version.
type aclSeen struct {
	czxid    int64
	aversion int32
	acl      []zk.ACL
	err      error
}

type waiter struct {
	conn       *zk.Conn
	p          layout.Paths
	g          int64
	opts       WaitOptions
	trust      aclmodel.Trust
	mu         sync.Mutex
	agents     map[string]Agent
	seen       map[string]bool // agents seen with a trusted node: expected from then on
	registered map[string]bool
	reported   map[string]bool // registered by their agent (a registry node with data); nil: not tracked (Changes)
	policy     map[string]bool // the policy's agent identities (users)
	regDirty   bool            // list the registry again (see takeRegistryDirty)
	acls       map[string]aclSeen
	watched    map[string]bool
	// foreign and foreignRegs are the status and registry nodes named
	// after no agent identity of the policy: never read nor expected.
	foreign, foreignRegs map[string]bool
	// statOnly follows status nodes with exists watches and reads no
	// data (Changes: it only needs to know that something changed).
	statOnly bool
	wake     chan struct{}
	// between (nil but in tests) runs between a listing of the registry
	// and that of the status nodes (see observe).
	between func()
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *waiter) run(ctx context.Context) (Progress, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		if err := w.observe(ctx); err != nil {
			return w.progress(), &RolloutError{Progress: w.progress(), Errors: w.errors(), Cause: err}
		}
		pr := w.progress()
		if w.opts.Progress != nil {
			w.opts.Progress(pr)
		}
		if w.opts.All && pr.Needed == 0 {
			return pr, &RolloutError{Progress: pr, Errors: w.errors(), Cause: ErrNoExpectedAgents}
		}
		done, failed := w.verdict(pr)
		if done {
			return pr, nil
		}
		if failed {
			return pr, &RolloutError{Progress: pr, Errors: w.errors(), Cause: errors.New("too many agents failed")}
		}
		select {
		case <-ctx.Done():
			return pr, &RolloutError{Progress: pr, Errors: w.errors(), Cause: ctx.Err()}
		case <-w.wake:
		}
	}
}

// observe brings the waiter up to date: the registry when its watch
// fired, then the status nodes. In that order, as List reads them: an
// agent creates its status node before its registry node, so an agent
// starting meanwhile is never registered without its status node (which
// showed it gone: "1 gone (web-2)" for an agent that was starting).
func (w *waiter) observe(ctx context.Context) error {
	if w.takeRegistryDirty() {
		if err := w.refreshRegistry(ctx); err != nil {
			return err
		}
	}
	if w.between != nil {
		w.between()
	}
	return w.refreshChildren(ctx)
}

// refreshChildren lists the status nodes with a child watch, reads every
// node not yet followed (before the verdict, so that a node present now
// counts now) and follows it through data watches.
func (w *waiter) refreshChildren(ctx context.Context) error {
	ids, ev, err := w.childrenW(w.p.Status())
	if err != nil {
		return fmt.Errorf("follow agents: %w", err)
	}
	go w.await(ctx, ev)
	w.mu.Lock()
	present := map[string]bool{}
	var fresh []string
	clear(w.foreign)
	for _, id := range ids {
		if w.isForeign(id) {
			w.foreign[id] = true
			continue
		}
		present[id] = true
		if !w.watched[id] {
			w.watched[id] = true
			fresh = append(fresh, id)
		}
	}
	for id := range w.agents {
		if !present[id] {
			delete(w.agents, id)
		}
	}
	w.mu.Unlock()
	forEach(ctx, fresh, func(_ int, id string) {
		a, ev, err := w.readNode(id)
		w.store(id, a, err)
		if err != nil {
			w.unwatch(id)
			return
		}
		go w.follow(ctx, id, ev)
	})
	return nil
}

// isForeign reports whether a node named id is foreign to the policy
// (never in open mode).
func (w *waiter) isForeign(id string) bool { return foreign(w.trust, nil, id) }

// store records a status node as read.
func (w *waiter) store(id string, a Agent, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, zk.ErrNoNode) {
		delete(w.agents, id)
		return
	}
	w.agents[id] = a
	if a.Trusted() {
		w.seen[id] = true
	}
}

func (w *waiter) unwatch(id string) {
	w.mu.Lock()
	w.watched[id] = false
	w.mu.Unlock()
}

// refreshRegistry lists the registered agents with a child watch: an agent
// forgotten (its registry node deleted) stops being expected at once.
func (w *waiter) refreshRegistry(ctx context.Context) error {
	ids, ev, err := w.childrenW(w.p.Agents())
	if err != nil {
		return fmt.Errorf("follow the agent registry: %w", err)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-ev:
			w.mu.Lock()
			w.regDirty = true
			w.mu.Unlock()
			w.signal()
		}
	}()
	w.mu.Lock()
	clear(w.registered)
	clear(w.foreignRegs)
	var unknown []string
	for _, id := range ids {
		if w.isForeign(id) {
			w.foreignRegs[id] = true
			continue
		}
		w.registered[id] = true
		if w.reported != nil && !w.reported[id] && !w.seen[id] {
			unknown = append(unknown, id)
		}
	}
	w.mu.Unlock()
	// Whether an agent ever reported is read once per agent, pipelined: a
	// registry node with data was written by its agent (init creates them
	// empty).
	errs := make([]error, len(unknown))
	forEach(ctx, unknown, func(i int, id string) {
		ok, st, err := w.conn.Exists(w.p.AgentNode(id))
		if err != nil {
			errs[i] = fmt.Errorf("follow the agent registry: %w", err)
			return
		}
		if ok && st.DataLength > 0 {
			w.mu.Lock()
			w.reported[id] = true
			w.mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// takeRegistryDirty reports (and clears) whether the registry must be
// listed again: at the start and after its child watch fired, not on every
// status change.
func (w *waiter) takeRegistryDirty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.regDirty
	w.regDirty = false
	return d
}

// childrenW lists parent with a child watch, or watches for it to appear.
func (w *waiter) childrenW(parent string) ([]string, <-chan zk.Event, error) {
	ids, _, ev, err := w.conn.ChildrenW(parent)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, _, ev, err = w.conn.ExistsW(parent)
		if err == nil && ok {
			// Created meanwhile: list it at once.
			fired := make(chan zk.Event, 1)
			fired <- zk.Event{Type: zk.EventNodeCreated, Path: parent}
			ev = fired
		}
		ids = nil
	}
	return ids, ev, err
}

// readNode reads and judges status node id, with a data watch. A node
// above MaxStatusBytes is not decoded (oversized, untrusted). With
// statOnly it only sets an exists watch.
func (w *waiter) readNode(id string) (Agent, <-chan zk.Event, error) {
	if w.statOnly {
		ok, _, ev, err := w.conn.ExistsW(w.p.StatusNode(id))
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return Agent{ID: id, HasNode: ok}, ev, err
	}
	b, st, ev, err := w.conn.GetW(w.p.StatusNode(id))
	if err == nil && len(b) > MaxStatusBytes {
		return oversizedStatus(id, len(b)), ev, nil
	}
	a := decode(id, b, err)
	if errors.Is(err, zk.ErrNoNode) {
		return a, ev, err
	}
	a.HasNode = true // unreadable is still a node
	var acl []zk.ACL
	readErr := err
	if err == nil && !w.trust.Open() {
		// The ACL is read again only when the node or its ACL version
		// changed: one read per node, not one per publish.
		w.mu.Lock()
		seen, ok := w.acls[id]
		w.mu.Unlock()
		if !ok || seen.czxid != st.Czxid || seen.aversion != st.Aversion {
			var ast *zk.Stat
			seen.acl, ast, seen.err = w.conn.GetACL(w.p.StatusNode(id))
			seen.czxid, seen.aversion = st.Czxid, st.Aversion
			if ast != nil && (ast.Czxid != st.Czxid || ast.Aversion != st.Aversion) {
				seen.aversion = -1 // changed between the reads: read again next time
			}
			w.mu.Lock()
			w.acls[id] = seen
			w.mu.Unlock()
		}
		acl, readErr = seen.acl, seen.err
	}
	a.Untrusted = judge(w.trust, nil, a, acl, st, readErr)
	return a, ev, err
}

// follow keeps agent id's status up to date through data watches, from
// the watch ev of its first read.
func (w *waiter) follow(ctx context.Context, id string, ev <-chan zk.Event) {
	defer w.unwatch(id)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ev:
		}
		var (
			a   Agent
			err error
		)
		a, ev, err = w.readNode(id)
		w.store(id, a, err)
		w.signal()
		if err != nil {
			return
		}
	}
}

func (w *waiter) await(ctx context.Context, ev <-chan zk.Event) {
	select {
	case <-ctx.Done():
	case <-ev:
		w.signal()
	}
}

// expected reports whether the rollout waits for id. Called with mu held.
func (w *waiter) expected(id string) bool {
	return w.seen[id] || w.registered[id] || w.policy[id]
}

func (w *waiter) progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	pr := Progress{Generation: w.g}
	var ids []string
	for id := range w.agents {
		ids = append(ids, id)
	}
	for id := range w.seen {
		ids = append(ids, id)
	}
	for id := range w.registered {
		ids = append(ids, id)
	}
	for id := range w.policy {
		ids = append(ids, id)
	}
	for id := range w.foreign {
		pr.Foreign = append(pr.Foreign, id)
	}
	for id := range w.foreignRegs {
		if !w.foreign[id] {
			pr.Foreign = append(pr.Foreign, id)
		}
	}
	slices.Sort(pr.Foreign)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	needed := 0
	for _, id := range ids {
		a := w.agents[id]
		exp := w.expected(id)
		if exp {
			needed++
		}
		switch {
		case a.AppliedIn(w.g, w.opts.Incarnation):
			pr.Applied = append(pr.Applied, id)
		case a.Rejected(w.g) || a.refuses(w.opts.Incarnation):
			pr.Rejected = append(pr.Rejected, id)
		case exp && !a.Trusted():
			pr.Gone = append(pr.Gone, id)
			if !a.HasNode && !w.seen[id] && !w.reported[id] {
				pr.NotStarted = append(pr.NotStarted, id)
			}
		case !exp:
			pr.Untrusted = append(pr.Untrusted, id)
		default:
			pr.Pending = append(pr.Pending, id)
		}
	}
	if w.opts.All {
		pr.Needed = needed
	} else {
		pr.Needed = w.opts.Min
	}
	return pr
}

func (w *waiter) errors() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for id, a := range w.agents {
		switch {
		case a.Untrusted != "":
			out[id] = a.Untrusted
		case a.Err != nil:
			out[id] = a.Err.Error()
		case a.refuses(w.opts.Incarnation):
			out[id] = fmt.Sprintf("refuses the root's new incarnation %s (incarnation: refuse): run confagent adopt on it", a.Status.IncarnationRefused)
		case a.Status.LastError != "":
			out[id] = a.Status.LastError
		}
	}
	return out
}

// verdict decides whether the rollout succeeded or cannot succeed any more.
// A gone agent never ends the wait: it may come back, or be forgotten.
func (w *waiter) verdict(pr Progress) (done, failed bool) {
	if w.opts.All {
		if len(pr.Rejected) > 0 && len(pr.Pending) == 0 {
			return false, true
		}
		return len(pr.Applied) == pr.Needed && pr.Needed > 0 && len(pr.Gone) == 0, false
	}
	if len(pr.Applied) >= w.opts.Min {
		return true, false
	}
	// Agents may still join: with Min, only the deadline ends the wait.
	return false, false
}

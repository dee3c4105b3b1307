package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
)

// Agent is one status node as read.
type Agent struct {
	ID     string
	Status Status
	// Err is set when the node could not be read or decoded.
	Err error
}

// Applied reports whether the agent runs generation g or newer.
func (a Agent) Applied(g int64) bool { return a.Err == nil && a.Status.Generation >= g }

// Rejected reports whether the agent tried generation g (or newer) and
// failed, without having applied it.
func (a Agent) Rejected(g int64) bool {
	return a.Err == nil && !a.Applied(g) && a.Status.Attempted >= g && a.Status.LastError != ""
}

// List reads every agent's status node, sorted by id. A root without any
// agent gives an empty list.
func List(ctx context.Context, conn *zk.Conn, p layout.Paths) ([]Agent, error) {
	ids, _, err := conn.Children(p.Status())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list agents under %s: %w", p.Status(), err)
	}
	slices.Sort(ids)
	out := make([]Agent, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = read(conn, p, id)
		}()
	}
	wg.Wait()
	// Agents that left between the listing and the read are not agents.
	out = slices.DeleteFunc(out, func(a Agent) bool { return errors.Is(a.Err, zk.ErrNoNode) })
	return out, ctx.Err()
}

func read(conn *zk.Conn, p layout.Paths, id string) Agent {
	b, _, err := conn.Get(p.StatusNode(id))
	return decode(id, b, err)
}

func decode(id string, b []byte, err error) Agent {
	a := Agent{ID: id}
	if err != nil {
		a.Err = err
		return a
	}
	if err := json.Unmarshal(b, &a.Status); err != nil {
		a.Err = fmt.Errorf("status of %s is not valid JSON: %w", id, err)
	}
	return a
}

// Summary counts agents against the latest generation. AtLatest + Behind
// = Total; Failing counts agents whose last attempt failed, wherever they
// are.
type Summary struct {
	Latest   int64
	Total    int
	AtLatest int
	Behind   int
	Failing  int
}

// Summarize counts agents at, behind and failing generation latest.
func Summarize(agents []Agent, latest int64) Summary {
	s := Summary{Latest: latest, Total: len(agents)}
	for _, a := range agents {
		if a.Applied(latest) {
			s.AtLatest++
		} else {
			s.Behind++
		}
		if a.Err != nil || a.Status.LastError != "" {
			s.Failing++
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d agent(s): %d at generation %d, %d behind, %d failing", s.Total, s.AtLatest, s.Latest, s.Behind, s.Failing)
}

// WaitOptions says how many agents a rollout needs.
type WaitOptions struct {
	// All waits for every agent registered when the wait starts (agents
	// joining later are followed too). An agent that leaves counts as
	// failed.
	All bool
	// Min waits until at least Min agents applied the generation. With
	// neither All nor Min set, All is assumed.
	Min int
	// Progress, when set, is called after every change seen.
	Progress func(Progress)
}

// Progress is a rollout's state while it is followed.
type Progress struct {
	Generation int64
	Applied    []string
	Rejected   []string
	Pending    []string
	Gone       []string
	Needed     int // agents that must apply for success
}

// RolloutError is a rollout that did not complete: the agents that
// rejected the generation (with their errors), left, or did not apply it
// in time.
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
		fmt.Fprintf(&b, "; %s left (status node gone)", id)
	}
	if len(e.Progress.Pending) > 0 {
		fmt.Fprintf(&b, "; not yet applied: %s", strings.Join(e.Progress.Pending, ", "))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

func (e *RolloutError) Unwrap() error { return e.Cause }

// Wait follows the agents' status nodes with watches (no polling) until
// enough of them report generation g, and returns the final progress. It
// fails early, with a *RolloutError, when success has become impossible
// (too many rejections), and when ctx ends.
func Wait(ctx context.Context, conn *zk.Conn, p layout.Paths, g int64, opts WaitOptions) (Progress, error) {
	if !opts.All && opts.Min <= 0 {
		opts.All = true
	}
	w := &waiter{conn: conn, p: p, g: g, opts: opts, agents: map[string]Agent{}, initial: map[string]bool{},
		wake: make(chan struct{}, 1)}
	return w.run(ctx)
}

type waiter struct {
	conn    *zk.Conn
	p       layout.Paths
	g       int64
	opts    WaitOptions
	mu      sync.Mutex
	agents  map[string]Agent
	initial map[string]bool // agents registered at the start, for All
	gone    map[string]bool
	watched map[string]bool
	wake    chan struct{}
	started bool
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *waiter) run(ctx context.Context) (Progress, error) {
	w.gone, w.watched = map[string]bool{}, map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		if err := w.refreshChildren(ctx); err != nil {
			return w.progress(), &RolloutError{Progress: w.progress(), Errors: w.errors(), Cause: err}
		}
		pr := w.progress()
		if w.opts.Progress != nil {
			w.opts.Progress(pr)
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

// refreshChildren lists the status nodes with a child watch and starts a
// data watch on every agent not yet followed.
func (w *waiter) refreshChildren(ctx context.Context) error {
	ids, _, ev, err := w.conn.ChildrenW(w.p.Status())
	if errors.Is(err, zk.ErrNoNode) {
		// No agent ever registered: wait for the parent to appear.
		var ok bool
		ok, _, ev, err = w.conn.ExistsW(w.p.Status())
		if err == nil && ok {
			w.signal()
		}
		ids = nil
	}
	if err != nil {
		return fmt.Errorf("follow agents: %w", err)
	}
	go w.await(ctx, ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	present := map[string]bool{}
	for _, id := range ids {
		present[id] = true
		if !w.started {
			w.initial[id] = true
		}
		delete(w.gone, id)
		if !w.watched[id] {
			w.watched[id] = true
			go w.follow(ctx, id)
		}
	}
	w.started = true
	for id := range w.agents {
		if !present[id] {
			w.gone[id] = true
		}
	}
	return nil
}

// follow keeps agent id's status up to date through data watches.
func (w *waiter) follow(ctx context.Context, id string) {
	defer func() {
		w.mu.Lock()
		w.watched[id] = false
		w.mu.Unlock()
	}()
	for {
		b, _, ev, err := w.conn.GetW(w.p.StatusNode(id))
		a := decode(id, b, err)
		w.mu.Lock()
		if errors.Is(err, zk.ErrNoNode) {
			w.gone[id] = true
		} else {
			w.agents[id] = a
		}
		w.mu.Unlock()
		w.signal()
		if err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ev:
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

func (w *waiter) progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	pr := Progress{Generation: w.g}
	ids := make([]string, 0, len(w.agents))
	for id := range w.agents {
		ids = append(ids, id)
	}
	for id := range w.initial {
		if _, ok := w.agents[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		a, seen := w.agents[id]
		switch {
		case seen && a.Applied(w.g):
			pr.Applied = append(pr.Applied, id)
		case w.gone[id]:
			pr.Gone = append(pr.Gone, id)
		case seen && a.Rejected(w.g):
			pr.Rejected = append(pr.Rejected, id)
		default:
			pr.Pending = append(pr.Pending, id)
		}
	}
	if w.opts.All {
		pr.Needed = len(ids)
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
		case a.Err != nil:
			out[id] = a.Err.Error()
		case a.Status.LastError != "":
			out[id] = a.Status.LastError
		}
	}
	return out
}

// verdict decides whether the rollout succeeded or cannot succeed any more.
func (w *waiter) verdict(pr Progress) (done, failed bool) {
	if w.opts.All {
		if len(pr.Rejected)+len(pr.Gone) > 0 && len(pr.Pending) == 0 {
			return false, true
		}
		return len(pr.Applied) == pr.Needed && pr.Needed > 0, false
	}
	if len(pr.Applied) >= w.opts.Min {
		return true, false
	}
	// Agents may still join: with Min, only the deadline ends the wait.
	return false, false
}

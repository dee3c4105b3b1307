package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Agent is one agent as a reader sees it: its status node (when it has
// one) and its registration (when it registered).
type Agent struct {
	ID     string
	Status Status
	// Err is set when the status node could not be read or decoded; an
	// unreadable or undecodable node is also Untrusted.
	Err error
	// Untrusted says why the status node is not provably the agent's (on
	// a tree `confpush init` set up, its ACL must be the one the agent's
	// identity gives it): such a node is shown, never counted as applied. ""
	// for a trusted node and for an agent without a status node.
	Untrusted string
	// HasNode reports whether a status node exists under the agent's name.
	HasNode bool
	// Expected reports whether rollouts wait for this agent: it is
	// registered, the access policy names its identity (Named), or its
	// status node is trusted.
	Expected bool
	// Named reports whether the root's access policy names an agent
	// identity of this id: the agent stays expected until the policy no
	// longer names it (confpush init without it), whatever its registry
	// node.
	Named bool
	// Registration is the agent's registry node (nil when none);
	// RegistryUntrusted says why it is not provably the agent's (on an
	// open tree it still makes the agent expected: forging one can only
	// block; on a tree with a policy only the policy's names are read).
	Registration      *Registration
	RegistryUntrusted string
}

// Trusted reports whether the agent has a status node that is provably its
// own.
func (a Agent) Trusted() bool { return a.HasNode && a.Err == nil && a.Untrusted == "" }

// Reads reports the agent's release and the highest manifest format it
// reads, from its trusted status node or else its registration (an agent
// that is away); reported is false when it has neither (an identity that
// never ran). maxFormat 0 is an agent older than config trees: it reads
// format 1 only.
func (a Agent) Reads() (version string, maxFormat int, reported bool) {
	switch {
	case a.Trusted():
		return a.Status.Version, a.Status.MaxFormat, true
	case a.Registration != nil:
		return a.Registration.Version, a.Registration.MaxFormat, true
	}
	return "", 0, false
}

// Gone reports whether the agent is expected but has no trusted status
// node: stopped, partitioned, or its name squatted.
func (a Agent) Gone() bool { return a.Expected && !a.Trusted() }

// Applied reports whether the agent runs generation g or newer, on a
// trusted status node.
func (a Agent) Applied(g int64) bool { return a.Trusted() && a.Status.Generation >= g }

// Rejected reports whether the agent tried generation g (or newer) and
// failed, without having applied it.
func (a Agent) Rejected(g int64) bool {
	return a.Trusted() && !a.Applied(g) && a.Status.Attempted >= g && a.Status.LastError != ""
}

// AppliedIn is Applied for generation g of root incarnation inc: after a
// ZooKeeper wipe generation numbers start again, so an agent still on the
// old incarnation's generation 7 has not applied the new one's generation
// 4. An empty inc, or an agent that reports none (a root or agent from
// before incarnations), compares generations alone.
func (a Agent) AppliedIn(g int64, inc string) bool {
	return a.Applied(g) && (inc == "" || a.Status.Incarnation == "" || a.Status.Incarnation == inc)
}

// Refuses reports whether the agent refuses root incarnation inc
// (incarnation: refuse) and so cannot apply any generation of it until an
// operator runs confagent adopt on it.
func (a Agent) Refuses(inc string) bool {
	return a.Trusted() && inc != "" && a.Status.IncarnationRefused == inc
}

// Skipped is a node of a fleet that a reader did not load: named after no
// agent identity of the access policy (foreign), or larger than its bound
// (oversized). Foreign nodes are never expected agents; an oversized node
// of an agent is also shown on that agent (Agent.Untrusted or
// Agent.RegistryUntrusted). confpush acl reports both and acl --repair
// removes them.
type Skipped struct {
	// ID is the node's name.
	ID string
	// Node is NodeStatus or NodeRegistration.
	Node string
	// Reason is SkipForeign or SkipOversized.
	Reason string
	// Bytes is the node's data length, when known (oversized nodes).
	Bytes int
}

// Kinds of node (Skipped.Node).
const (
	NodeStatus       = "status"
	NodeRegistration = "registration"
)

// Reasons a node is skipped (Skipped.Reason).
const (
	// SkipForeign: on a tree with an access policy, a node whose name is
	// no agent identity of the policy (the status quota refuses new ones
	// and agents may not create registrations: left from before, or
	// created by the publisher's identity).
	SkipForeign = "foreign"
	// SkipOversized: a node above MaxStatusBytes or MaxRegistrationBytes
	// (only a client pipelining its writes gets past the quota).
	SkipOversized = "oversized"
)

// String is one line for people.
func (s Skipped) String() string {
	if s.Reason == SkipOversized {
		return fmt.Sprintf("%s node %s: oversized (%d bytes)", s.Node, s.ID, s.Bytes)
	}
	return fmt.Sprintf("%s node %s: foreign (no agent identity of that name)", s.Node, s.ID)
}

// View is a root's fleet as Read finds it.
type View struct {
	// Agents are the agents sorted by id, as List returns them.
	Agents []Agent
	// Skipped are the nodes not loaded, sorted by node kind and name.
	Skipped []Skipped
}

// Fleet reads and follows the agents of one config root: their status
// nodes and their registrations, each judged against the root's access
// policy. It holds no state of its own between calls and is safe for
// concurrent use.
type Fleet struct {
	cl    *zkclient.Client
	paths layout.Paths
}

// Option configures New.
type Option func(*options)

type options struct{ meta string }

// WithMeta sets the metadata path of the zkconf layout, under which the
// status nodes and the agent registry live: the publishers' (default
// "/zkconf").
func WithMeta(meta string) Option { return func(o *options) { o.meta = meta } }

// New returns the Fleet of root on cl: a Client from zkclient.Dial, or an
// application's own connection and session tracker wrapped by
// zkclient.Fixed. It takes the connection from cl for every read and never
// closes it.
func New(cl *zkclient.Client, root string, opts ...Option) (*Fleet, error) {
	if cl == nil || cl.Conn() == nil {
		return nil, errors.New("fleet: nil ZooKeeper client")
	}
	o := options{meta: layout.DefaultMeta}
	for _, opt := range opts {
		opt(&o)
	}
	if err := layout.ValidateRoot(root); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if err := layout.ValidateRoot(o.meta); err != nil {
		return nil, fmt.Errorf("fleet: meta path: %w", err)
	}
	return &Fleet{cl: cl, paths: layout.New(root, o.meta)}, nil
}

// List reads every agent's status node of the root and the agent
// registry, and judges each status node (Agent.Untrusted): the agents
// sorted by id, expected ones without a trusted status node included
// (Gone). A root without any agent gives an empty list. A reader that
// cannot verify (without the publisher's ADMIN on an ACL'd tree) sees
// every node untrusted. It is Read without the skipped nodes: foreign ones
// are left out, oversized ones shown untrusted.
func (f *Fleet) List(ctx context.Context) ([]Agent, error) {
	v, err := f.Read(ctx)
	return v.Agents, err
}

// Read is List with the nodes it skipped: on a tree with an access policy
// the status and registry nodes whose name is not an agent identity of the
// policy are neither read nor expected; a node whose data is above
// MaxStatusBytes or MaxRegistrationBytes is not decoded (under a policy
// not even fetched). Its requests are sent at once on one connection
// (go-zookeeper pipelines concurrent requests): a listing costs a few
// round trips whatever the number of agents.
func (f *Fleet) Read(ctx context.Context) (View, error) {
	return read(ctx, f.cl.Conn(), f.paths, nil)
}

// maxInFlight bounds the requests a listing has in flight on the one
// connection: enough to keep it busy, few enough to bound the memory of
// the responses being decoded.
const maxInFlight = 1024

// forEach runs fn for every element of items, at most maxInFlight at a
// time: their ZooKeeper requests share the connection, pipelined.
func forEach[T any](ctx context.Context, items []T, fn func(int, T)) {
	_ = work.Parallel(ctx, len(items), maxInFlight, func(_ context.Context, i int) error {
		fn(i, items[i])
		return nil
	})
}

// listing is the first round of a read: the trust rules and both child
// lists.
type listing struct {
	trust    aclmodel.Trust
	trustErr error
	status   []string
	regs     []string
}

// readListing reads the trust rules beside the registry listing, then
// the status listing; between (nil but in tests) runs between the two
// listings. The registry comes first: an agent creates its status node
// before its registry node, so an agent registered by the first listing
// whose status node still exists is in the second. The other order showed
// an agent starting between the two as gone.
func readListing(ctx context.Context, conn *zk.Conn, p layout.Paths, between func()) (listing, error) {
	var (
		l         listing
		statusErr error
		wg        sync.WaitGroup
	)
	wg.Go(func() { l.trust, l.trustErr = readTrust(ctx, conn, p) })
	regs, regsErr := listRegistry(conn, p)
	l.regs = regs
	if regsErr == nil {
		if between != nil {
			between()
		}
		l.status, _, statusErr = conn.Children(p.Status())
		if errors.Is(statusErr, zk.ErrNoNode) {
			statusErr = nil
		}
	}
	wg.Wait()
	if statusErr != nil {
		return l, fmt.Errorf("list agents under %s: %w", p.Status(), statusErr)
	}
	return l, regsErr
}

// foreign reports whether a node named id is foreign to the trust's
// policy: never in open mode, nor for a reader that cannot verify (it
// sees every node untrusted).
func foreign(t aclmodel.Trust, trustErr error, id string) bool {
	return trustErr == nil && !t.Open() && !t.Names(id)
}

func read(ctx context.Context, conn *zk.Conn, p layout.Paths, between func()) (View, error) {
	l, err := readListing(ctx, conn, p, between)
	if err != nil {
		return View{}, err
	}
	var f View
	var ids, regs []string
	for _, id := range l.status {
		if foreign(l.trust, l.trustErr, id) {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeStatus, Reason: SkipForeign})
		} else {
			ids = append(ids, id)
		}
	}
	for _, id := range l.regs {
		if foreign(l.trust, l.trustErr, id) {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeRegistration, Reason: SkipForeign})
		} else {
			regs = append(regs, id)
		}
	}
	out := make([]Agent, len(ids))
	oversized := make([]int, len(ids))
	regOut := make([]registration, len(regs))
	var wg sync.WaitGroup
	wg.Go(func() {
		forEach(ctx, ids, func(i int, id string) { out[i], oversized[i] = readStatus(conn, p, l.trust, l.trustErr, id) })
	})
	wg.Go(func() {
		forEach(ctx, regs, func(i int, id string) { regOut[i] = readRegistration(conn, p, l.trust, l.trustErr, id) })
	})
	wg.Wait()
	for i, n := range oversized {
		if n > 0 {
			f.Skipped = append(f.Skipped, Skipped{ID: out[i].ID, Node: NodeStatus, Reason: SkipOversized, Bytes: n})
		}
	}
	// Agents that left between the listing and the read are not agents.
	out = slices.DeleteFunc(out, func(a Agent) bool { return errors.Is(a.Err, zk.ErrNoNode) })
	byID := map[string]int{}
	for i, a := range out {
		byID[a.ID] = i
	}
	expect := func(id string) *Agent {
		i, ok := byID[id]
		if !ok {
			out = append(out, Agent{ID: id})
			i = len(out) - 1
			byID[id] = i
		}
		out[i].Expected = true
		return &out[i]
	}
	for _, id := range l.trust.Agents() {
		expect(id).Named = true
	}
	for i, id := range regs {
		r := regOut[i]
		if r.gone {
			continue
		}
		a := expect(id)
		a.Registration, a.RegistryUntrusted = r.reg, r.untrusted
		if r.oversized > 0 {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeRegistration, Reason: SkipOversized, Bytes: r.oversized})
		}
	}
	for i := range out {
		if out[i].Trusted() {
			out[i].Expected = true
		}
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(f.Skipped, func(a, b Skipped) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.ID, b.ID))
	})
	f.Agents = out
	return f, ctx.Err()
}

// listRegistry lists the registered agents (none when the registry does
// not exist).
func listRegistry(conn *zk.Conn, p layout.Paths) ([]string, error) {
	ids, _, err := conn.Children(p.Agents())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the agent registry %s: %w", p.Agents(), err)
	}
	return ids, nil
}

// oversizedReason is the Untrusted reason of a node above its bound.
func oversizedReason(n, bound int) string {
	return fmt.Sprintf("oversized: %d bytes, above the %d-byte bound: not read", n, bound)
}

// readStatus reads and judges one status node; oversized is its data
// length when it is above MaxStatusBytes (then not decoded). Under a
// policy its ACL is read first: the Stat that comes with it tells an
// oversized node, whose data is then never fetched. A node re-created (or
// re-ACL'd) between the two reads is read again, once: an ACL and data of
// two different nodes are never judged together.
func readStatus(conn *zk.Conn, p layout.Paths, trust aclmodel.Trust, trustErr error, id string) (a Agent, oversized int) {
	node := p.StatusNode(id)
	if trustErr != nil || trust.Open() {
		b, st, err := conn.Get(node)
		if err == nil && len(b) > MaxStatusBytes {
			return oversizedStatus(id, len(b)), len(b)
		}
		a := decode(id, b, err)
		if errors.Is(err, zk.ErrNoNode) {
			return a, 0
		}
		a.HasNode = true // unreadable is still a node
		a.Untrusted = judge(trust, trustErr, a, nil, st, err)
		return a, 0
	}
	for range 2 {
		acl, ast, err := conn.GetACL(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return Agent{ID: id, Err: err}, 0
		case err != nil:
			a = Agent{ID: id, HasNode: true, Err: err}
			a.Untrusted = judge(trust, nil, a, nil, nil, err)
			return a, 0
		case int(ast.DataLength) > MaxStatusBytes:
			return oversizedStatus(id, int(ast.DataLength)), int(ast.DataLength)
		}
		b, st, err := conn.Get(node)
		a = decode(id, b, err)
		if errors.Is(err, zk.ErrNoNode) {
			return a, 0
		}
		a.HasNode = true // unreadable is still a node
		if err == nil && (st.Czxid != ast.Czxid || st.Aversion != ast.Aversion) {
			a.Untrusted = "changed while it was read"
			continue
		}
		if err == nil && len(b) > MaxStatusBytes {
			return oversizedStatus(id, len(b)), len(b)
		}
		a.Untrusted = judge(trust, nil, a, acl, st, err)
		return a, 0
	}
	return a, 0
}

// oversizedStatus is the agent of a status node above MaxStatusBytes: a
// node, untrusted, not decoded.
func oversizedStatus(id string, n int) Agent {
	return Agent{ID: id, HasNode: true, Untrusted: oversizedReason(n, MaxStatusBytes)}
}

// judge returns why status node a (its ACL and Stat as read, readErr the
// first read error) is not provably its agent's, or "".
func judge(trust aclmodel.Trust, trustErr error, a Agent, acl []zk.ACL, st *zk.Stat, readErr error) string {
	switch {
	case trustErr != nil:
		return "cannot be verified: " + trustErr.Error()
	case errors.Is(readErr, zk.ErrNoAuth):
		return aclmodel.Unreadable(readErr)
	case readErr != nil:
		return "cannot be read: " + readErr.Error()
	case a.Err != nil:
		return a.Err.Error()
	}
	if r := trust.JudgeStatus(a.ID, acl, st); r != "" {
		return r
	}
	if a.Status.AgentID != a.ID {
		return fmt.Sprintf("its agent_id %q is not its name", a.Status.AgentID)
	}
	return ""
}

func decode(id string, b []byte, err error) Agent {
	a := Agent{ID: id}
	if err != nil {
		a.Err = err
		return a
	}
	a.HasNode = true
	if err := json.Unmarshal(b, &a.Status); err != nil {
		a.Err = fmt.Errorf("status of %s is not valid JSON: %w", id, err)
	}
	return a
}

// registration is one registry node as read.
type registration struct {
	reg       *Registration
	untrusted string
	oversized int
	gone      bool // deleted between the listing and the read
}

// readRegistration reads and judges one registry node. An unreadable,
// oversized or undecodable one has no Registration, only the reason.
// Under a policy its ACL is read first, as for status nodes.
func readRegistration(conn *zk.Conn, p layout.Paths, trust aclmodel.Trust, trustErr error, id string) registration {
	node := p.AgentNode(id)
	var acl []zk.ACL
	if trustErr == nil && !trust.Open() {
		var ast *zk.Stat
		var err error
		acl, ast, err = conn.GetACL(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return registration{gone: true}
		case err != nil:
			return registration{untrusted: "cannot read its ACL: " + err.Error()}
		case int(ast.DataLength) > MaxRegistrationBytes:
			n := int(ast.DataLength)
			return registration{untrusted: oversizedReason(n, MaxRegistrationBytes), oversized: n}
		}
	}
	b, _, err := conn.Get(node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return registration{gone: true}
	case errors.Is(err, zk.ErrNoAuth):
		return registration{untrusted: aclmodel.Unreadable(err)}
	case err != nil:
		return registration{untrusted: "cannot be read: " + err.Error()}
	case len(b) > MaxRegistrationBytes:
		return registration{untrusted: oversizedReason(len(b), MaxRegistrationBytes), oversized: len(b)}
	}
	if len(b) == 0 {
		// Created by confpush init, not yet written by its agent.
		return registration{}
	}
	var r Registration
	if err := json.Unmarshal(b, &r); err != nil {
		return registration{untrusted: "not a registration: " + err.Error()}
	}
	var why string
	switch {
	case trustErr != nil:
		why = "cannot be verified: " + trustErr.Error()
	case !trust.Open():
		why = trust.JudgeRegistration(id, acl)
	}
	return registration{reg: &r, untrusted: why}
}

// Summary counts agents against the latest generation. AtLatest + Behind
// = Total; Behind includes Untrusted and Gone agents (never counted as
// applied); Failing counts agents reporting an error or a failing target
// (Status.Failing), wherever they are.
type Summary struct {
	Latest    int64
	Total     int
	AtLatest  int
	Behind    int
	Failing   int
	Untrusted int
	Gone      int
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
		if a.Trusted() && a.Status.Failing() {
			s.Failing++
		}
		if a.HasNode && !a.Trusted() {
			s.Untrusted++
		}
		if a.Gone() {
			s.Gone++
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d agent(s): %d at generation %d, %d behind, %d failing, %d untrusted, %d gone",
		s.Total, s.AtLatest, s.Latest, s.Behind, s.Failing, s.Untrusted, s.Gone)
}

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
		case a.Rejected(w.g) || a.Refuses(w.opts.Incarnation):
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
		case a.Refuses(w.opts.Incarnation):
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

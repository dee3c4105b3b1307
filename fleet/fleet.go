package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkconf/zkconf/internal/layout"
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

// ReadersBelow lists the agents the root expects (registered, named by
// the access policy, or with a trusted status node: whom --wait --all
// waits for) that report reading only manifest formats below format,
// from their status node or, when they are away, their registration. An
// identity that never reported (neither) is not listed: nothing says what
// it runs.
func (f *Fleet) ReadersBelow(ctx context.Context, format int) ([]Agent, error) {
	agents, err := f.List(ctx)
	if err != nil {
		return nil, err
	}
	var old []Agent
	for _, a := range agents {
		if _, maxFormat, reported := a.Reads(); a.Expected && reported && maxFormat < format {
			old = append(old, a)
		}
	}
	return old, nil
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

// refuses reports whether the agent refuses root incarnation inc
// (incarnation: refuse) and so cannot apply any generation of it until an
// operator runs confagent adopt on it.
func (a Agent) refuses(inc string) bool {
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

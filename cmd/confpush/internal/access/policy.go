package access

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/layout"
)

// Policy is who may do what on one config root and its metadata. See the
// package documentation for the model and docs/security.md for its use.
type Policy struct {
	// Publisher may do everything on the root, its items and the root's
	// metadata tree.
	Publisher aclmodel.Identity
	// Agents may read the root and its items, create and write their
	// own status node, and write their registry node.
	Agents []aclmodel.Identity
	// WorldReadable grants READ on the root and its items to everyone,
	// authenticated or not. Nothing else is ever granted to the world.
	WorldReadable bool
}

// ErrInvalidPolicy marks a Policy that cannot be applied.
var ErrInvalidPolicy = errors.New("invalid access policy")

// Validate checks every identity and that the publisher and agents are
// distinct users (the same user with two passwords is two ZooKeeper ids,
// which would only confuse).
func (p Policy) Validate() error {
	var errs []error
	if p.Publisher == (aclmodel.Identity{}) {
		errs = append(errs, errors.New("no publisher identity"))
	} else if err := p.Publisher.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("publisher: %w", err))
	}
	seen := map[string]string{}
	for _, a := range p.Agents {
		if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("agent: %w", err))
			continue
		}
		if a.User == p.Publisher.User {
			errs = append(errs, fmt.Errorf("agent identity %q is the publisher's user: give agents their own identities", a.User))
			continue
		}
		if d, ok := seen[a.User]; ok && d != a.Digest {
			errs = append(errs, fmt.Errorf("agent identity %q is given twice with different passwords", a.User))
		}
		seen[a.User] = a.Digest
	}
	if err := errlist.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	return nil
}

// Trust is the Trust of the policy: Check and Repair judge status and
// registry nodes with it, as fleet's readers do with the one they read
// from the tree.
func (p Policy) Trust() aclmodel.Trust { return aclmodel.NewTrust(p.Publisher, p.agents()) }

// Describe renders an ACL naming each digest entry by its user and its
// role in the policy, never its digest (aclmodel.Roles.Describe).
func (p Policy) Describe(acl []zk.ACL) string {
	return aclmodel.Roles{Publisher: p.Publisher, Agents: p.Agents}.Describe(acl)
}

// agents returns the agent identities without duplicates, in order.
func (p Policy) agents() []aclmodel.Identity {
	out := make([]aclmodel.Identity, 0, len(p.Agents))
	for _, a := range p.Agents {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// worldID is ZooKeeper's id for everyone.
const (
	worldScheme = "world"
	worldID     = "anyone"
)

// RootACL is the ACL of the root: publisher ALL, agents READ, and world
// READ when WorldReadable.
func (p Policy) RootACL() []zk.ACL {
	acl := []zk.ACL{p.Publisher.ACL(zk.PermAll)}
	for _, a := range p.agents() {
		acl = append(acl, a.ACL(zk.PermRead))
	}
	if p.WorldReadable {
		acl = append(acl, zk.ACL{Perms: zk.PermRead, Scheme: worldScheme, ID: worldID})
	}
	return acl
}

// ItemACL is the ACL of every item and of the marker-mode marker: the
// root's. The publisher copies it from the root when it creates them (it
// reads the root's ACL once per publish).
func (p Policy) ItemACL() []zk.ACL { return p.RootACL() }

// BaseACL is the ACL of the root's metadata base (<meta>/roots/<key>):
// publisher ALL, agents READ, so that agents can read the status-ACL
// document it holds. Its children are fixed names; nothing below it is
// readable by agents except through their own status nodes.
func (p Policy) BaseACL() []zk.ACL {
	acl := []zk.ACL{p.Publisher.ACL(zk.PermAll)}
	for _, a := range p.agents() {
		acl = append(acl, a.ACL(zk.PermRead))
	}
	return acl
}

// MetaACL is the ACL of history, blobs, publishing and election and of
// every node below them: the publisher's alone. Blobs hold the contents of
// old generations (rotated secrets among them), so agents may not read
// them.
func (p Policy) MetaACL() []zk.ACL { return []zk.ACL{p.Publisher.ACL(zk.PermAll)} }

// StatusACL is the ACL of the status parent: publisher ALL, agents CREATE
// only. Not READ (agents do not list the fleet), not DELETE (DELETE of a
// child is a permission on the parent: it would let any agent delete any
// other's node; ephemeral nodes vanish with their session anyway).
func (p Policy) StatusACL() []zk.ACL {
	acl := []zk.ACL{p.Publisher.ACL(zk.PermAll)}
	for _, a := range p.agents() {
		acl = append(acl, a.ACL(zk.PermCreate))
	}
	return acl
}

// RegistryACL is the ACL of the agent registry (<base>/agents): the
// publisher's alone. Init creates each agent identity's registry node
// (RegistryNodeACL), so agents need no CREATE: with it, an agent identity
// could register any number of names, squat another agent's registration
// or give its node any ACL. No DELETE either (an agent could delete
// another's registration), nor READ (agents do not list each other).
func (p Policy) RegistryACL() []zk.ACL { return p.MetaACL() }

// RegistryNodeACL is the ACL Init gives agent's registry node: publisher
// ALL, that agent READ and WRITE (it keeps first_seen across writes).
// Without ADMIN it cannot change the node's ACL.
func (p Policy) RegistryNodeACL(agent aclmodel.Identity) []zk.ACL {
	return []zk.ACL{p.Publisher.ACL(zk.PermAll), agent.ACL(zk.PermRead | zk.PermWrite)}
}

// StatusNodeACL is the ACL an agent gives its status node when it creates
// it: publisher ALL and ALL for the creating session's own ids (the "auth"
// scheme, which the server replaces by the session's digest ids), so that
// no other agent identity can read, write or re-ACL it. An agent learns the
// publisher's entry from the status-ACL document (fleet.Fleet.StatusNodeACL).
func (p Policy) StatusNodeACL() []zk.ACL {
	return append([]zk.ACL{p.Publisher.ACL(zk.PermAll)}, zk.AuthACL(zk.PermAll)...)
}

// AncestorACL is the ACL Init gives the ancestors it creates (the root's
// missing parents, <meta>, <meta>/roots): publisher ALL. ZooKeeper checks
// no permission on ancestors to reach a node, so nobody else needs any.
// Existing ancestors are never changed; they may be shared.
func (p Policy) AncestorACL() []zk.ACL { return []zk.ACL{p.Publisher.ACL(zk.PermAll)} }

// ACLs returns the intended ACL of every fixed node of the layout: the
// root, the metadata base, history, blobs, publishing, status, election
// and the agent registry. Nodes below them follow ItemACL, MetaACL and
// StatusNodeACL (status and registry nodes).
func (p Policy) ACLs(paths layout.Paths) map[string][]zk.ACL {
	return map[string][]zk.ACL{
		paths.Root:         p.RootACL(),
		paths.Base():       p.BaseACL(),
		paths.History():    p.MetaACL(),
		paths.Blobs():      p.MetaACL(),
		paths.Publishing(): p.MetaACL(),
		paths.Status():     p.StatusACL(),
		paths.Election():   p.MetaACL(),
		paths.Agents():     p.RegistryACL(),
	}
}

// Kind names the role of a node in the layout.
type Kind string

// The kinds of nodes Check inspects.
const (
	KindAncestor Kind = "ancestor"
	KindRoot     Kind = "root"
	KindItem     Kind = "item"
	// KindDirectory is a node below the root with children: a directory
	// of a config tree (item "conf.d/site.conf" is below the directory
	// <root>/conf.d), with the items' ACL. Check walks every one.
	KindDirectory      Kind = "directory"
	KindMarker         Kind = "marker"
	KindBase           Kind = "metadata base"
	KindHistory        Kind = "history"
	KindHistoryEntry   Kind = "history entry"
	KindBlobs          Kind = "blobs"
	KindBlob           Kind = "blob"
	KindPublishing     Kind = "publishing"
	KindPublishingNode Kind = "publishing node"
	KindStatus         Kind = "status"
	KindStatusNode     Kind = "status node"
	KindElection       Kind = "election"
	KindElectionNode   Kind = "election node"
	KindRegistry       Kind = "agent registry"
	KindRegistryNode   Kind = "registry node"
	// A canary rollout's nodes, which exist only during (or, left
	// behind, shortly after) a rollout: the candidate manifest and its
	// contents carry the root's ACL (agents read them); the rollout
	// record and the driver's liveness nodes the publisher's alone.
	KindCandidate         Kind = "candidate"
	KindCandidateContent  Kind = "candidate content"
	KindRollout           Kind = "rollout record"
	KindRolloutDriver     Kind = "rollout driver"
	KindRolloutDriverNode Kind = "rollout driver node"
	// ZooKeeper's quota nodes (quota.go): /zookeeper/quota itself, and
	// one quota of the policy (its directory, zookeeper_limits and
	// zookeeper_stats).
	KindQuotaRoot Kind = "quota root"
	KindQuota     Kind = "quota"
)

// fixedNode is one node of the layout whose ACL the policy fixes.
type fixedNode struct {
	path string
	kind Kind
	acl  []zk.ACL
	// child is the kind of its children and childACL their ACL (nil for
	// status and registry nodes, judged by Trust).
	child    Kind
	childACL []zk.ACL
}

// fixedNodes lists the layout's fixed nodes, parents first.
func (p Policy) fixedNodes(paths layout.Paths) []fixedNode {
	meta := p.MetaACL()
	return []fixedNode{
		{paths.Root, KindRoot, p.RootACL(), KindItem, p.ItemACL()},
		{paths.Base(), KindBase, p.BaseACL(), "", nil},
		{paths.History(), KindHistory, meta, KindHistoryEntry, meta},
		{paths.Blobs(), KindBlobs, meta, KindBlob, meta},
		{paths.Publishing(), KindPublishing, meta, KindPublishingNode, meta},
		{paths.Status(), KindStatus, p.StatusACL(), KindStatusNode, nil},
		{paths.Election(), KindElection, meta, KindElectionNode, meta},
		{paths.Agents(), KindRegistry, p.RegistryACL(), KindRegistryNode, nil},
	}
}

// optionalNodes lists the layout's nodes whose ACL the policy fixes when
// they exist, and which are not missing when they do not (a canary
// rollout's).
func (p Policy) optionalNodes(paths layout.Paths) []fixedNode {
	meta := p.MetaACL()
	return []fixedNode{
		{paths.Candidate(), KindCandidate, p.RootACL(), KindCandidateContent, p.ItemACL()},
		{paths.Rollout(), KindRollout, meta, "", nil},
		{paths.RolloutDriver(), KindRolloutDriver, meta, KindRolloutDriverNode, meta},
	}
}

// statusDocument is the document Init writes on the metadata base.
func (p Policy) statusDocument() []byte { return aclmodel.StatusDocument(p.Publisher) }

package aclmodel

import (
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Trust judges whether a status or registry node is provably the agent's
// it is named after: the one rule fleet's readers and confpush acl judge
// by. Under an access policy a node is the agent's when its
// ACL is exactly the one that agent's identity gives it (the status-ACL
// document's entries plus ALL for the digest identity whose user is the
// node's name): any other identity holding only CREATE on the parent can
// create the name, but only with an ACL naming itself or, without knowing
// the agent's digest, not the agent. On a tree without a policy (open
// mode) no ACL proves anything: only the ephemeral owner and the content
// can be checked (see Open). Readers build it with TrustFromTree, confpush
// acl from the policy it is given (NewTrust).
//
// The zero value is open mode.
type Trust struct {
	// doc is the status-ACL document's entries (nil: open mode).
	doc []zk.ACL
	// agents are the policy's agent identities by user.
	agents map[string]Identity
	// roles names entries for people.
	roles Roles
}

// Open reports whether the tree has no access policy: node ACLs then prove
// nothing and only "ephemeral and parses" is checked.
func (t Trust) Open() bool { return t.doc == nil }

// Agents returns the users of the policy's agent identities, sorted: the
// agents a rollout expects even before they ever started. Nil in open
// mode.
func (t Trust) Agents() []string {
	out := make([]string, 0, len(t.agents))
	for u := range t.agents {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// NewTrust is the Trust of a policy of publisher and agents, judged before
// it is in the tree (confpush acl checks a tree against the policy it is
// given).
func NewTrust(publisher Identity, agents []Identity) Trust {
	t := Trust{doc: []zk.ACL{publisher.ACL(zk.PermAll)}, agents: map[string]Identity{},
		roles: Roles{Publisher: publisher, Agents: agents}}
	for _, a := range agents {
		t.agents[a.User] = a
	}
	return t
}

// TrustFromTree is the Trust a reader finds in the tree: doc, the entries
// of the status-ACL document on the metadata base (nil: the tree has no
// access policy, open mode), and the agent identities of the root's ACL
// (its digest entries granting exactly READ, as confpush init sets them),
// rootACL as read with its digests.
func TrustFromTree(doc, rootACL []zk.ACL) Trust {
	if doc == nil {
		return Trust{}
	}
	t := Trust{doc: doc, agents: map[string]Identity{}}
	docIDs := Effective(doc)
	for k, perms := range Effective(rootACL) {
		if k.Scheme != "digest" || perms != zk.PermRead {
			continue
		}
		if _, ok := docIDs[k]; ok {
			continue
		}
		id, err := ParseDigestIdentity(k.ID)
		if err != nil {
			continue
		}
		t.agents[id.User] = id
	}
	if pub, err := ParseDigestIdentity(doc[0].ID); err == nil {
		t.roles.Publisher = pub
	}
	for _, a := range t.agents {
		t.roles.Agents = append(t.roles.Agents, a)
	}
	return t
}

// Names reports whether the policy has an agent identity whose user is
// agent (always false in open mode).
func (t Trust) Names(agent string) bool {
	_, ok := t.agents[agent]
	return ok && !t.Open()
}

// Identity returns the policy's agent identity whose user is agent.
func (t Trust) Identity(agent string) (Identity, bool) {
	id, ok := t.agents[agent]
	return id, ok
}

// Want is the ACL agent's status node must have; false when the policy names no
// agent identity with that user (or in open mode).
func (t Trust) Want(agent string) ([]zk.ACL, bool) {
	id, ok := t.agents[agent]
	if t.Open() || !ok {
		return nil, false
	}
	return append(append([]zk.ACL{}, t.doc...), id.ACL(zk.PermAll)), true
}

// JudgeACL returns why a node named agent with this ACL is not provably
// that agent's, or "" when it is (always "" in open mode).
func (t Trust) JudgeACL(agent string, acl []zk.ACL) string {
	if t.Open() {
		return ""
	}
	want, ok := t.Want(agent)
	switch {
	case !ok:
		return fmt.Sprintf("the policy has no agent identity %q", agent)
	case Redacted(acl):
		return "its ACL cannot be verified (digests hidden: the reader lacks ADMIN on it)"
	case !SameACL(acl, want):
		return fmt.Sprintf("its ACL is %s, not what agent %s's identity gives it (%s)",
			t.roles.Describe(acl), agent, t.roles.Describe(want))
	}
	return ""
}

// JudgeRegistration returns why a registry node named agent with this
// ACL is not provably that agent's, or "" when it is (always "" in open
// mode): the ACL Init gives it (the status-ACL document's entries and
// READ and WRITE for the agent), or the one an agent gave the node it
// created itself before Init made them (the status node's ACL: ALL for
// the agent).
func (t Trust) JudgeRegistration(agent string, acl []zk.ACL) string {
	want, ok := t.WantRegistry(agent)
	if ok && SameACL(acl, want) {
		return ""
	}
	why := t.JudgeACL(agent, acl)
	if why == "" || !ok || Redacted(acl) {
		return why
	}
	return fmt.Sprintf("its ACL is %s, not what agent %s's registry node has (%s)",
		t.roles.Describe(acl), agent, t.roles.Describe(want))
}

// WantRegistry is the ACL confpush init gives agent's registry node.
func (t Trust) WantRegistry(agent string) ([]zk.ACL, bool) {
	id, ok := t.agents[agent]
	if t.Open() || !ok {
		return nil, false
	}
	return append(append([]zk.ACL{}, t.doc...), id.ACL(zk.PermRead|zk.PermWrite)), true
}

// JudgeStatus returns why a status node named agent (ACL and Stat as read)
// is not provably that agent's live node, or "" when it is: under a policy
// its ACL must be exactly the agent's (JudgeACL), and in every mode it
// must be ephemeral.
func (t Trust) JudgeStatus(agent string, acl []zk.ACL, st *zk.Stat) string {
	if st != nil && st.EphemeralOwner == 0 {
		return "not ephemeral: no agent session owns it"
	}
	return t.JudgeACL(agent, acl)
}

// Unreadable is the reason given for a node the reader may not read.
func Unreadable(err error) string {
	return "unreadable by this reader (" + err.Error() + "): it cannot be verified"
}

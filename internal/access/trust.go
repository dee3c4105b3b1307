package access

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// Trust judges whether a status or registry node is provably the agent's
// it is named after. Under an access policy a node is the agent's when its
// ACL is exactly the one that agent's identity gives it (the status-ACL
// document's entries plus ALL for the digest identity whose user is the
// node's name): any other identity holding only CREATE on the parent can
// create the name, but only with an ACL naming itself or, without knowing
// the agent's digest, not the agent. On a tree without a policy (open
// mode) no ACL proves anything: only the ephemeral owner and the content
// can be checked (see Open).
//
// The zero value is open mode.
type Trust struct {
	// doc is the status-ACL document's entries (nil: open mode).
	doc []zk.ACL
	// agents are the policy's agent identities by user.
	agents map[string]Identity
	// describe names entries for people.
	describe Policy
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

// Trust is the Trust of the policy (Check and Repair judge with it).
func (p Policy) Trust() Trust {
	t := Trust{doc: []zk.ACL{p.Publisher.ACL(zk.PermAll)}, agents: map[string]Identity{}, describe: p}
	for _, a := range p.agents() {
		t.agents[a.User] = a
	}
	return t
}

// ReadTrust reads what a reader needs to judge status and registry nodes:
// the status-ACL document on the metadata base (missing or empty: open
// mode, the zero Trust) and the agent identities from the root's ACL
// (digest entries granting exactly READ, as Init sets them). The session
// needs ADMIN on the root to see the digests (the publisher has it);
// otherwise the error is a *zkclient.PermissionError: a reader that cannot verify
// must not count anything.
func ReadTrust(ctx context.Context, conn *zk.Conn, paths layout.Paths) (Trust, error) {
	doc, err := readStatusDoc(ctx, conn, paths)
	if errors.Is(err, ErrNotInitialized) {
		return Trust{}, nil
	}
	if err != nil {
		return Trust{}, err
	}
	acl, _, err := zkclient.ReadACL(ctx, conn, paths.Root)
	if err != nil {
		return Trust{}, fmt.Errorf("read the agent identities: %w", err)
	}
	t := Trust{doc: doc, agents: map[string]Identity{}}
	docIDs := effective(doc)
	eff := effective(acl)
	for k, perms := range eff {
		if k.scheme != "digest" || perms != zk.PermRead {
			continue
		}
		if _, ok := docIDs[k]; ok {
			continue
		}
		id, err := ParseDigestIdentity(k.id)
		if err != nil {
			continue
		}
		t.agents[id.User] = id
	}
	if pub, err := ParseDigestIdentity(doc[0].ID); err == nil {
		t.describe.Publisher = pub
	}
	for _, a := range t.agents {
		t.describe.Agents = append(t.describe.Agents, a)
	}
	return t, nil
}

// Names reports whether the policy has an agent identity whose user is
// agent (always false in open mode).
func (t Trust) Names(agent string) bool {
	_, ok := t.agents[agent]
	return ok && !t.Open()
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
	case redacted(acl):
		return "its ACL cannot be verified (digests hidden: the reader lacks ADMIN on it)"
	case !SameACL(acl, want):
		return fmt.Sprintf("its ACL is %s, not what agent %s's identity gives it (%s)",
			t.describe.Describe(acl), agent, t.describe.Describe(want))
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
	want, ok := t.wantRegistry(agent)
	if ok && SameACL(acl, want) {
		return ""
	}
	why := t.JudgeACL(agent, acl)
	if why == "" || !ok || redacted(acl) {
		return why
	}
	return fmt.Sprintf("its ACL is %s, not what agent %s's registry node has (%s)",
		t.describe.Describe(acl), agent, t.describe.Describe(want))
}

// wantRegistry is the ACL Init gives agent's registry node.
func (t Trust) wantRegistry(agent string) ([]zk.ACL, bool) {
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

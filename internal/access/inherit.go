package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/zkclient"
)

// Inherited are the ACLs a publisher gives the nodes it creates, copied
// from the live tree so that publishing needs no knowledge of the policy
// and keeps working, unchanged, after Init or a repair.
type Inherited struct {
	// Item is the root's ACL: for items, the marker, and the root itself
	// when the publisher has to create it.
	Item []zk.ACL
	// Meta is the history parent's ACL: for history entries, blobs and
	// publishing (liveness) nodes, and metadata parents the publisher has
	// to create.
	Meta []zk.ACL
	// ItemFrom and MetaFrom identify the ACLs copied: the root's and the
	// history parent's node and ACL version as read (zero where the node
	// did not exist and the fallback was used). A caller holding an
	// Inherited may reuse it as long as both nodes still show the same.
	ItemFrom, MetaFrom ACLVersion
}

// ACLVersion identifies one version of a node's ACL: the node (its
// creation zxid, so a node deleted and created again differs) and the
// ACL's version. The zero value is "no such node".
type ACLVersion struct {
	Czxid    int64
	Aversion int32
}

// ACLVersionOf returns the ACLVersion a stat shows; nil is the zero value.
func ACLVersionOf(st *zk.Stat) ACLVersion {
	if st == nil {
		return ACLVersion{}
	}
	return ACLVersion{Czxid: st.Czxid, Aversion: st.Aversion}
}

// InheritedACLs reads the ACLs of the root and of the history parent,
// once per publish. A node that does not exist (a tree never initialized)
// yields fallback, the publisher's configured ACL. The session must have
// ADMIN on both: without it ZooKeeper hides the digests ("user:x") and the
// ACL cannot be copied, which is a *zkclient.PermissionError.
func InheritedACLs(ctx context.Context, conn *zk.Conn, paths layout.Paths, fallback []zk.ACL) (Inherited, error) {
	// Both reads are sent at once: go-zookeeper pipelines concurrent
	// requests on one connection, so this costs one round trip on the
	// publish path instead of two.
	paths2 := [2]string{paths.Root, paths.History()}
	var acls [2][]zk.ACL
	var from [2]ACLVersion
	var errs [2]error
	var wg sync.WaitGroup
	for i := range paths2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acl, st, err := zkclient.ReadACL(ctx, conn, paths2[i])
			if errors.Is(err, zk.ErrNoNode) {
				acl, st, err = fallback, nil, nil
			}
			acls[i], from[i], errs[i] = acl, ACLVersionOf(st), err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Inherited{}, err
		}
	}
	return Inherited{Item: acls[0], Meta: acls[1], ItemFrom: from[0], MetaFrom: from[1]}, nil
}

// ReadStatusNodeACL returns the ACL an agent gives its status node: the
// entries of the status-ACL document that Init writes on the metadata base
// (the publisher's ALL), plus ALL for the agent session's own ids
// (zk.AuthACL). The session must be authenticated: the server refuses the
// "auth" scheme otherwise (InvalidACL).
//
// A metadata base that is missing or holds no document is
// ErrNotInitialized: the tree has no access control, and the agent keeps
// its configured ACL. A *zkclient.PermissionError means the agent identity may not
// read the base: a wrong password or an identity the policy does not name.
func ReadStatusNodeACL(ctx context.Context, conn *zk.Conn, paths layout.Paths) ([]zk.ACL, error) {
	acl, err := readStatusDoc(ctx, conn, paths)
	if err != nil {
		return nil, err
	}
	return append(acl, zk.AuthACL(zk.PermAll)...), nil
}

// readStatusDoc reads the status-ACL document's entries (see
// ReadStatusNodeACL for the errors).
func readStatusDoc(ctx context.Context, conn *zk.Conn, paths layout.Paths) ([]zk.ACL, error) {
	base := paths.Base()
	data, err := zkclient.Call(ctx, func() ([]byte, error) {
		b, _, err := conn.Get(base)
		return b, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, fmt.Errorf("%s does not exist: %w", base, ErrNotInitialized)
	case err != nil:
		return nil, wrap(zkclient.Explain(err, base, zkclient.OpRead), base, zkclient.OpRead)
	case len(data) == 0:
		return nil, fmt.Errorf("%s holds no status-ACL document: %w", base, ErrNotInitialized)
	}
	acl, err := parseStatusDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	return acl, nil
}

// Role is what a session is meant to do, for Probe.
type Role int

// The roles.
const (
	RolePublisher Role = iota + 1
	RoleAgent
)

// Probe checks at start-up, with one or two reads, that the session's
// credentials work for role, so that a wrong password or a missing grant
// is a clear fatal error before any real work (digest credentials are
// never refused at login: only requests fail). A publisher must have ADMIN
// on the root and the history parent (InheritedACLs needs it); an agent
// must be able to read the root (an agent that keeps a status node finds
// out about the metadata base from ReadStatusNodeACL; an anonymous reader
// of a world-readable root has no business there). Nodes that do not exist
// are skipped: an uninitialized tree is not a credentials problem. The
// error is a *zkclient.PermissionError.
func Probe(ctx context.Context, conn *zk.Conn, paths layout.Paths, role Role) error {
	switch role {
	case RolePublisher:
		// Both reads in flight at once (one round trip, not two: this
		// runs before every confpush command); the first path's error wins.
		nodes := []string{paths.Root, paths.History()}
		errs := make([]error, len(nodes))
		_ = work.Parallel(ctx, len(nodes), len(nodes), func(ctx context.Context, i int) error {
			_, _, errs[i] = zkclient.ReadACL(ctx, conn, nodes[i])
			return nil
		})
		for _, err := range errs {
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
		return ctx.Err()
	case RoleAgent:
		_, err := zkclient.Call(ctx, func() (struct{}, error) {
			_, _, err := conn.Get(paths.Root)
			return struct{}{}, err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return wrap(zkclient.Explain(err, paths.Root, zkclient.OpRead), paths.Root, zkclient.OpRead)
		}
		return nil
	}
	return fmt.Errorf("probe: unknown role %d", role)
}

// ErrForeignACL means the root's ACL is not one Init makes, so no policy
// can be read from it.
var ErrForeignACL = errors.New("the root's ACL is not one confpush init makes")

// ErrOpenTree means the root was never set up by Init: its ACL grants
// everyone everything and it has no status-ACL document. Nothing then
// bounds what any client writes (no policy, no quota).
var ErrOpenTree = errors.New("open tree: confpush init never ran")

// PolicyFromRoot reads the policy in force from the root's ACL, for
// `confpush acl ROOT` without agent flags: publisher is the identity of
// the session (its ALL entry must be there), every other digest entry
// granting exactly READ is an agent, and world READ means WorldReadable.
// The root's ACL can only be changed by an identity with ADMIN on it,
// which the policy gives the publisher alone. Any other entry is
// ErrForeignACL: the policy must then be given explicitly.
func PolicyFromRoot(ctx context.Context, conn *zk.Conn, paths layout.Paths, publisher Identity) (Policy, error) {
	acl, _, err := zkclient.ReadACL(ctx, conn, paths.Root)
	if errors.Is(err, zk.ErrNoNode) {
		return Policy{}, fmt.Errorf("root %s does not exist: %w", paths.Root, ErrNotInitialized)
	}
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Publisher: publisher}
	eff := effective(acl)
	if eff[aclKey{worldScheme, worldID}] == zk.PermAll {
		if _, derr := readStatusDoc(ctx, conn, paths); errors.Is(derr, ErrNotInitialized) {
			return Policy{}, fmt.Errorf("%w (%w): root %s grants world:anyone:cdrwa and has no status-ACL document: "+
				"anyone who can reach ZooKeeper may write it and its metadata tree, no quota bounds what agents write "+
				"(readers only skip status nodes above %d bytes and registrations above %d), and every registered name "+
				"is an expected agent; run 'confpush init' (docs/security.md)",
				ErrOpenTree, ErrForeignACL, paths.Root, MaxStatusBytes, MaxRegistrationBytes)
		}
	}
	if eff[aclKey{"digest", publisher.ID()}] != zk.PermAll {
		return Policy{}, fmt.Errorf("%w: it does not grant %s cdrwa (%s)", ErrForeignACL, publisher, p.Describe(acl))
	}
	for _, a := range acl {
		switch k := (aclKey{a.Scheme, a.ID}); {
		case k.scheme == "digest" && k.id == publisher.ID():
		case k.scheme == "digest" && eff[k] == zk.PermRead:
			user, digest, _ := strings.Cut(k.id, ":")
			id, err := IdentityFromDigest(user, digest)
			if err != nil {
				return Policy{}, fmt.Errorf("%w: %w", ErrForeignACL, err)
			}
			if !slices.Contains(p.Agents, id) {
				p.Agents = append(p.Agents, id)
			}
		case k == aclKey{worldScheme, worldID} && eff[k] == zk.PermRead:
			p.WorldReadable = true
		default:
			return Policy{}, fmt.Errorf("%w: entry %s (%s)", ErrForeignACL, p.Describe([]zk.ACL{a}), p.Describe(acl))
		}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrForeignACL, err)
	}
	return p, nil
}

// ErrNotInitialized means the root's access tree was never set up by
// Init: the root or its metadata base (with its status-ACL document) is
// missing.
var ErrNotInitialized = errors.New("access control not initialized (run confpush init)")

package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/zkclient"
)

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
// on the root and the history parent (publishing copies their ACLs); an
// agent must be able to read the root (an agent that keeps a status node
// finds out about the metadata base from fleet.Fleet.StatusNodeACL; an
// anonymous reader of a world-readable root has no business there). Nodes that do not exist
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
func PolicyFromRoot(ctx context.Context, conn *zk.Conn, paths layout.Paths, publisher aclmodel.Identity) (Policy, error) {
	acl, _, err := zkclient.ReadACL(ctx, conn, paths.Root)
	if errors.Is(err, zk.ErrNoNode) {
		return Policy{}, fmt.Errorf("root %s does not exist: %w", paths.Root, fleet.ErrNotInitialized)
	}
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Publisher: publisher}
	eff := aclmodel.Effective(acl)
	if eff[aclmodel.World] == zk.PermAll {
		if noStatusDoc(ctx, conn, paths) {
			return Policy{}, fmt.Errorf("%w (%w): root %s grants world:anyone:cdrwa and has no status-ACL document: "+
				"anyone who can reach ZooKeeper may write it and its metadata tree, no quota bounds what agents write "+
				"(readers only skip status nodes above %d bytes and registrations above %d), and every registered name "+
				"is an expected agent; run 'confpush init' (docs/security.md)",
				ErrOpenTree, ErrForeignACL, paths.Root, fleet.MaxStatusBytes, fleet.MaxRegistrationBytes)
		}
	}
	if eff[aclmodel.Key{Scheme: "digest", ID: publisher.ID()}] != zk.PermAll {
		return Policy{}, fmt.Errorf("%w: it does not grant %s cdrwa (%s)", ErrForeignACL, publisher, p.Describe(acl))
	}
	for _, a := range acl {
		switch k := (aclmodel.Key{Scheme: a.Scheme, ID: a.ID}); {
		case k.Scheme == "digest" && k.ID == publisher.ID():
		case k.Scheme == "digest" && eff[k] == zk.PermRead:
			user, digest, _ := strings.Cut(k.ID, ":")
			id, err := aclmodel.IdentityFromDigest(user, digest)
			if err != nil {
				return Policy{}, fmt.Errorf("%w: %w", ErrForeignACL, err)
			}
			if !slices.Contains(p.Agents, id) {
				p.Agents = append(p.Agents, id)
			}
		case k == aclmodel.World && eff[k] == zk.PermRead:
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

// noStatusDoc reports whether the metadata base is missing or holds no
// status-ACL document: a tree confpush init never set up.
func noStatusDoc(ctx context.Context, conn *zk.Conn, paths layout.Paths) bool {
	data, err := getData(ctx, conn, paths.Base())
	return errors.Is(err, zk.ErrNoNode) || err == nil && len(data) == 0
}

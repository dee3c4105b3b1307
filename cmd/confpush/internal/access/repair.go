package access

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// Bounds of Repair's loops. A pass re-checks the whole tree: a publish
// running meanwhile may have created a node with the ACL it read before
// the root's was fixed. casAttempts bounds the compare-and-swap retries on
// one node that something else keeps changing.
const (
	maxPasses   = 3
	casAttempts = 10
)

// ErrConcurrentChange means a node's ACL or data kept changing under a
// compare-and-swap for casAttempts tries.
var ErrConcurrentChange = errors.New("node kept changing during repair")

// Repair applies the policy to an initialized tree: it sets every ACL
// Check finds wrong (compare-and-swap on the node's ACL version, re-read
// and retried on BadVersion), creates missing metadata nodes, rewrites the
// status-ACL document and deletes status nodes no identity of the policy
// owns. It then checks again, up to three passes, and reports what
// remains (advisories, see Mismatch.Repairable). A root that does not exist
// is fleet.ErrNotInitialized: Repair never creates a root (a mistyped root name
// must not become a new tree). Permission errors are *zkclient.PermissionError and
// end the repair at once.
func Repair(ctx context.Context, conn *zk.Conn, paths layout.Paths, p Policy) (Report, error) {
	e, err := newEngine(conn, paths, p)
	if err != nil {
		return Report{}, err
	}
	return e.repair(ctx)
}

func (e *engine) repair(ctx context.Context) (Report, error) {
	var rep Report
	for pass := 0; ; pass++ {
		ms, err := e.check(ctx)
		if err != nil {
			return rep, err
		}
		var todo []Mismatch
		for _, m := range ms {
			if m.Repairable() {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 || pass == maxPasses {
			rep.Remaining = ms
			return rep, nil
		}
		// The fixed nodes first, in path order (parents before
		// children); then the nodes below them, which are independent of
		// one another, pipelined.
		var below []Mismatch
		for _, m := range todo {
			if belowFixed(m.Kind) {
				below = append(below, m)
				continue
			}
			a, err := e.fix(ctx, m)
			if err != nil {
				return rep, err
			}
			if a != nil {
				rep.Actions = append(rep.Actions, *a)
			}
		}
		done := make([]*Action, len(below))
		err = parallel(ctx, len(below), func(ctx context.Context, i int) error {
			a, err := e.fix(ctx, below[i])
			done[i] = a
			return err
		})
		for _, a := range done {
			if a != nil {
				rep.Actions = append(rep.Actions, *a)
			}
		}
		if err != nil {
			return rep, err
		}
	}
}

// belowFixed reports whether nodes of kind k hang below a fixed node of
// the layout and can be repaired independently of one another.
func belowFixed(k Kind) bool {
	switch k {
	case KindItem, KindDirectory, KindMarker, KindHistoryEntry, KindBlob, KindPublishingNode, KindStatusNode, KindElectionNode,
		KindRegistryNode, KindCandidateContent, KindRolloutDriverNode, KindQuota:
		return true
	}
	return false
}

// fix acts on one mismatch; a nil Action means there was nothing left to
// do (fixed or removed meanwhile).
func (e *engine) fix(ctx context.Context, m Mismatch) (*Action, error) {
	switch m.Fix {
	case FixCreate:
		var data []byte
		if m.Path == e.paths.Base() {
			data = e.p.statusDocument()
		}
		created, err := e.create(ctx, m.Path, data, m.Want)
		if err != nil {
			return nil, err
		}
		if created {
			return &Action{Path: m.Path, Kind: m.Kind, Did: FixCreate, Detail: e.p.Describe(m.Want)}, nil
		}
		// Created by someone else meanwhile: make its ACL right.
		return e.setACL(ctx, m.Path, m.Kind, m.Want)
	case FixSetACL:
		return e.setACL(ctx, m.Path, m.Kind, m.Want)
	case FixDelete:
		if m.Kind == KindQuota {
			return e.deleteQuota(ctx, m.Path)
		}
		return e.deleteUntrusted(ctx, m.Path, m.Kind)
	case FixQuota:
		for _, q := range e.p.Quotas(e.paths) {
			if q.Dir() == m.Path {
				return e.fixQuota(ctx, q)
			}
		}
		return nil, nil
	case FixDocument:
		return e.writeDocument(ctx)
	case FixNone:
	}
	return nil, nil
}

// create creates p; false when it exists already.
func (e *engine) create(ctx context.Context, p string, data []byte, acl []zk.ACL) (bool, error) {
	_, err := zkclient.Call(ctx, func() (string, error) { return e.conn.Create(p, data, 0, acl) })
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	case errors.Is(err, zk.ErrNoNode):
		return false, fmt.Errorf("create %s: its parent does not exist: %w", p, fleet.ErrNotInitialized)
	}
	return false, wrap(zkclient.Explain(err, p, zkclient.OpCreate), p, zkclient.OpCreate)
}

// setACL sets one node's ACL to want, with a compare-and-swap on the ACL
// version.
func (e *engine) setACL(ctx context.Context, p string, k Kind, want []zk.ACL) (*Action, error) {
	for range casAttempts {
		got, st, err := getACL(ctx, e.conn, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if aclmodel.SameACL(got, want) {
			return nil, nil
		}
		if e.beforeSetACL != nil {
			e.beforeSetACL(p)
		}
		_, err = zkclient.Call(ctx, func() (*zk.Stat, error) { return e.conn.SetACL(p, want, st.Aversion) })
		switch {
		case err == nil:
			return &Action{Path: p, Kind: k, Did: FixSetACL,
				Detail: fmt.Sprintf("%s -> %s", e.p.Describe(got), e.p.Describe(want))}, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue
		}
		return nil, wrap(zkclient.Explain(err, p, zkclient.OpSetACL), p, zkclient.OpSetACL)
	}
	return nil, fmt.Errorf("set ACL of %s: %w", p, ErrConcurrentChange)
}

// deleteUntrusted deletes a status or registry node that is still not
// provably its agent's when judged again, with a compare-and-swap on the
// data version (a node changed meanwhile is judged anew). DELETE is the publisher's permission on the
// parent, so even a node it cannot read is deleted; its Stat then comes
// from exists, which checks no ACL.
func (e *engine) deleteUntrusted(ctx context.Context, p string, k Kind) (*Action, error) {
	for range casAttempts {
		got, st, err := getACL(ctx, e.conn, p)
		var reason string
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		case errors.Is(err, zkclient.ErrPermission):
			reason = aclmodel.Unreadable(err)
			st, err = zkclient.Call(ctx, func() (*zk.Stat, error) {
				ok, st, err := e.conn.Exists(p)
				if err == nil && !ok {
					err = zk.ErrNoNode
				}
				return st, err
			})
			if errors.Is(err, zk.ErrNoNode) {
				return nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("exists %s: %w", p, err)
			}
		case err != nil:
			return nil, err
		default:
			reason = e.judgeOwned(k, path.Base(p), got, st)
		}
		if reason == "" {
			return nil, nil
		}
		_, err = zkclient.Call(ctx, func() (struct{}, error) { return struct{}{}, e.conn.Delete(p, st.Version) })
		switch {
		case err == nil:
			return &Action{Path: p, Kind: k, Did: FixDelete, Detail: "untrusted: " + reason}, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue
		}
		return nil, wrap(zkclient.Explain(err, p, zkclient.OpDelete), p, zkclient.OpDelete)
	}
	return nil, fmt.Errorf("delete %s: %w", p, ErrConcurrentChange)
}

// writeDocument writes the status-ACL document on the metadata base, with
// a compare-and-swap on its data version. Data that is not a document is
// never overwritten.
func (e *engine) writeDocument(ctx context.Context) (*Action, error) {
	base := e.paths.Base()
	want := e.p.statusDocument()
	wantACL, _ := aclmodel.ParseStatusDoc(want)
	type got struct {
		data []byte
		st   *zk.Stat
	}
	for range casAttempts {
		g, err := zkclient.Call(ctx, func() (got, error) {
			b, st, err := e.conn.Get(base)
			return got{b, st}, err
		})
		if err != nil {
			return nil, wrap(zkclient.Explain(err, base, zkclient.OpRead), base, zkclient.OpRead)
		}
		if len(g.data) > 0 {
			acl, perr := aclmodel.ParseStatusDoc(g.data)
			if perr == nil && aclmodel.SameACL(acl, wantACL) {
				return nil, nil
			}
			if perr != nil && !strings.HasPrefix(strings.TrimSpace(string(g.data)), "{") {
				return nil, fmt.Errorf("%s holds %d bytes that are not a status-ACL document: not overwritten", base, len(g.data))
			}
		}
		_, err = zkclient.Call(ctx, func() (*zk.Stat, error) { return e.conn.Set(base, want, g.st.Version) })
		switch {
		case err == nil:
			return &Action{Path: base, Kind: KindBase, Did: FixDocument,
				Detail: "status nodes grant " + e.p.Describe(wantACL)}, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue
		}
		return nil, wrap(zkclient.Explain(err, base, zkclient.OpWrite), base, zkclient.OpWrite)
	}
	return nil, fmt.Errorf("write %s: %w", base, ErrConcurrentChange)
}

// Init sets up access control for a root: it creates the root's missing
// ancestors and the metadata ancestors (<meta>, <meta>/roots, and theirs
// in ZooKeeper's quota tree) with AncestorACL (existing ancestors are
// left alone, since they may be shared, except those an earlier Init made
// for the publisher's user, which follow a change of its password),
// the root (empty data: the first publish writes generation 1), the
// metadata base with its status-ACL document, and history, blobs,
// publishing, status, election, the registry and each agent identity's
// registry node, each with its ACL of the policy, and the policy's quotas
// (Quotas), with /zookeeper/quota locked to world READ. It is
// idempotent: on an existing tree it repairs (see Repair), which is also
// how an open tree from before the ACLs is locked down. conn must be
// authenticated as p.Publisher. A root or metadata node created by someone
// else, without ADMIN for the publisher, fails with a *zkclient.PermissionError.
func Init(ctx context.Context, conn *zk.Conn, paths layout.Paths, p Policy) (Report, error) {
	e, err := newEngine(conn, paths, p)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	for _, a := range append(e.ancestors(), paths.Root) {
		ok, err := exists(ctx, conn, a)
		if err != nil {
			return rep, err
		}
		if ok {
			continue
		}
		k, acl := KindAncestor, p.AncestorACL()
		if a == paths.Root {
			k, acl = KindRoot, p.RootACL()
		}
		created, err := e.create(ctx, a, nil, acl)
		if err != nil {
			return rep, fmt.Errorf("init %s: %w", paths.Root, err)
		}
		if created {
			rep.Actions = append(rep.Actions, Action{Path: a, Kind: k, Did: FixCreate, Detail: p.Describe(acl)})
		}
	}
	r, err := e.repair(ctx)
	rep.Actions = append(rep.Actions, r.Actions...)
	rep.Remaining = r.Remaining
	var pe *zkclient.PermissionError
	switch {
	case errors.As(err, &pe) && pe.Op == zkclient.OpSetACL:
		return rep, fmt.Errorf("init %s: %w; if %s was created by another identity, its owner or a ZooKeeper "+
			"super user must delete it or grant the publisher ADMIN", paths.Root, err, pe.Path)
	case err != nil:
		return rep, fmt.Errorf("init %s: %w", paths.Root, err)
	}
	return rep, nil
}

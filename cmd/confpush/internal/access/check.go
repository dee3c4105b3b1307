package access

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/zkclient"
)

// Fix says what Repair does about a Mismatch.
type Fix string

// The fixes.
const (
	// FixNone: an advisory finding; Repair leaves it to the operator.
	FixNone Fix = "none"
	// FixCreate: the node is missing; Repair creates it with Want.
	FixCreate Fix = "create"
	// FixSetACL: Repair sets the node's ACL to Want (compare-and-swap on
	// the ACL version).
	FixSetACL Fix = "set ACL"
	// FixDelete: a status node no identity of the policy owns (created
	// before the ACLs, or by a removed identity); Repair deletes it. It is
	// ephemeral: its agent, if still allowed, creates it again.
	FixDelete Fix = "delete"
	// FixDocument: the metadata base's status-ACL document is missing or
	// stale; Repair writes it.
	FixDocument Fix = "write status-ACL document"
	// FixQuota: a quota of the policy is missing, has other limits, or
	// its nodes have another ACL; Repair sets it (Quotas).
	FixQuota Fix = "set quota"
)

// Mismatch is one difference between the tree and the policy.
type Mismatch struct {
	Path string
	Kind Kind
	// Got is the ACL found (nil when missing or unreadable).
	Got []zk.ACL
	// Want is the ACL the policy asks for (nil for advisories and
	// deletions).
	Want []zk.ACL
	Fix  Fix
	// Problem says what is wrong, for people. It names identities by user
	// and role, never by digest.
	Problem string
}

// Repairable reports whether Repair acts on m.
func (m Mismatch) Repairable() bool { return m.Fix != FixNone }

// String is one line for people: kind, path and problem.
func (m Mismatch) String() string { return fmt.Sprintf("%s %s: %s", m.Kind, m.Path, m.Problem) }

// Action is one change made by Init or Repair.
type Action struct {
	Path string
	Kind Kind
	Did  Fix
	// Detail describes the change without digests.
	Detail string
}

// String is one line for people: kind, path, what was done and how.
func (a Action) String() string {
	return fmt.Sprintf("%s %s: %s (%s)", a.Kind, a.Path, a.Did, a.Detail)
}

// Report is what Init or Repair did and what remains.
type Report struct {
	Actions []Action
	// Remaining are the mismatches left after the last pass: advisories,
	// and anything a concurrent change kept re-breaking.
	Remaining []Mismatch
}

// engine applies one policy to one root.
type engine struct {
	conn  *zk.Conn
	paths layout.Paths
	p     Policy
	trust aclmodel.Trust // p.Trust(), for status and registry nodes
	// beforeSetACL is a test seam run before each SetACL; nil in
	// production.
	beforeSetACL func(path string)
}

func newEngine(conn *zk.Conn, paths layout.Paths, p Policy) (*engine, error) {
	if err := layout.ValidateRoot(paths.Root); err != nil {
		return nil, err
	}
	if err := layout.ValidateRoot(paths.Meta); err != nil {
		return nil, fmt.Errorf("meta path: %w", err)
	}
	if within(paths.Meta, paths.Root) || within(paths.Root, paths.Meta) {
		return nil, fmt.Errorf("root %s and metadata path %s must not contain one another", paths.Root, paths.Meta)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, errors.New("nil ZooKeeper connection")
	}
	return &engine{conn: conn, paths: paths, p: p, trust: p.Trust()}, nil
}

// checkWorkers bounds the requests Check (and Repair's fixes of nodes
// below the fixed ones) has in flight: they share the connection,
// pipelined.
const checkWorkers = 256

// parallel runs fn(ctx, i) for i in [0, n) with checkWorkers at a time.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return work.Parallel(ctx, n, checkWorkers, fn)
}

// Check compares the actual ACLs of the root, every item and directory
// (every node below the root, at any depth: config trees), the metadata
// tree and every node in it (history entries, blobs, publishing, election
// and status nodes) with the policy, and reports the differences sorted by
// path (parents before children), plus advisories about what the policy
// cannot fix (see KindAncestor). It changes nothing. It needs a session
// authenticated as the publisher; a root that does not exist is
// fleet.ErrNotInitialized.
func Check(ctx context.Context, conn *zk.Conn, paths layout.Paths, p Policy) ([]Mismatch, error) {
	e, err := newEngine(conn, paths, p)
	if err != nil {
		return nil, err
	}
	return e.check(ctx)
}

// target is one node below a fixed node.
type target struct {
	path string
	kind Kind
	want []zk.ACL // nil: a status or registry node, judged by Trust
}

func (e *engine) check(ctx context.Context) ([]Mismatch, error) {
	var out []Mismatch
	if _, _, err := getACL(ctx, e.conn, e.paths.Root); errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("root %s does not exist: %w", e.paths.Root, fleet.ErrNotInitialized)
	} else if err != nil {
		return nil, fmt.Errorf("root %s: %w", e.paths.Root, err)
	}
	if m, ok, err := e.checkParent(ctx); err != nil {
		return nil, err
	} else if ok {
		out = append(out, m)
	}
	for _, a := range e.ancestors() {
		acl, _, err := getACL(ctx, e.conn, a)
		if err != nil {
			continue // missing or unreadable: not one Init made for this publisher
		}
		if e.ownAncestor(acl) && !aclmodel.SameACL(acl, e.p.AncestorACL()) {
			out = append(out, e.aclMismatch(a, KindAncestor, acl, e.p.AncestorACL()))
		}
	}
	var targets []target
	fixed := e.p.fixedNodes(e.paths)
	optional := len(fixed)
	for i, f := range append(fixed, e.p.optionalNodes(e.paths)...) {
		acl, _, err := getACL(ctx, e.conn, f.path)
		switch {
		case errors.Is(err, zk.ErrNoNode) && i >= optional:
			continue
		case errors.Is(err, zk.ErrNoNode):
			out = append(out, Mismatch{Path: f.path, Kind: f.kind, Want: f.acl, Fix: FixCreate, Problem: "missing"})
			continue
		case errors.Is(err, zkclient.ErrPermission):
			out = append(out, Mismatch{Path: f.path, Kind: f.kind, Fix: FixNone,
				Problem: "unreadable, so not checked, nor anything below it: " + err.Error()})
			continue
		case err != nil:
			return nil, err
		}
		if !aclmodel.SameACL(acl, f.acl) {
			out = append(out, e.aclMismatch(f.path, f.kind, acl, f.acl))
		}
		if f.kind == KindBase {
			m, ok, err := e.checkDocument(ctx)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, m)
			}
		}
		if f.child == "" {
			continue
		}
		kids, err := children(ctx, e.conn, f.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case errors.Is(err, zk.ErrNoAuth):
			out = append(out, Mismatch{Path: f.path, Kind: f.kind, Fix: FixNone,
				Problem: "children not checked: " + zkclient.Explain(err, f.path, zkclient.OpList).Error()})
			continue
		case err != nil:
			return nil, fmt.Errorf("list %s: %w", f.path, err)
		}
		for _, k := range kids {
			t := target{path: f.path + "/" + k, kind: f.child, want: f.childACL}
			if f.kind == KindRoot && k == path.Base(e.paths.Marker()) {
				t.kind = KindMarker
			}
			targets = append(targets, t)
		}
		if f.kind == KindRegistry {
			out = append(out, e.missingRegistrations(kids)...)
		}
	}
	found, err := e.checkTargets(ctx, targets)
	if err != nil {
		return nil, err
	}
	out = append(out, found...)
	quotas, err := e.checkQuotas(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, quotas...)
	slices.SortStableFunc(out, func(a, b Mismatch) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// missingRegistrations are the policy's agent identities without a
// registry node among kids: Init creates each (empty, RegistryNodeACL),
// since agents may not.
func (e *engine) missingRegistrations(kids []string) []Mismatch {
	var out []Mismatch
	for _, a := range e.p.agents() {
		if !slices.Contains(kids, a.User) {
			out = append(out, Mismatch{Path: e.paths.AgentNode(a.User), Kind: KindRegistryNode, Want: e.p.RegistryNodeACL(a),
				Fix: FixCreate, Problem: "missing: confpush init creates each agent identity's registry node"})
		}
	}
	return out
}

// checkTargets reads the ACLs of targets with bounded concurrency, and
// then those of the nodes below the items that have children (the
// directories of a config tree), one level at a time.
func (e *engine) checkTargets(ctx context.Context, targets []target) ([]Mismatch, error) {
	var out []Mismatch
	for len(targets) > 0 {
		found := make([][]Mismatch, len(targets))
		below := make([][]target, len(targets))
		err := parallel(ctx, len(targets), func(ctx context.Context, i int) error {
			ms, kids, err := e.checkTarget(ctx, targets[i])
			found[i], below[i] = ms, kids
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, slices.Concat(found...)...)
		targets = slices.Concat(below...)
	}
	return out, nil
}

// checkTarget judges one node; below are its children to judge next when
// it is an item node with children (a directory).
func (e *engine) checkTarget(ctx context.Context, t target) (ms []Mismatch, below []target, err error) {
	acl, st, err := getACL(ctx, e.conn, t.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil // gone meanwhile (a publish, an agent leaving)
	case errors.Is(err, zkclient.ErrPermission) && t.want == nil:
		// A status or registry node the publisher cannot read is not one
		// any agent of the policy made (they all grant it ALL): it can
		// only hide a status or block a rollout.
		return []Mismatch{untrusted(t, nil, aclmodel.Unreadable(err))}, nil, nil
	case errors.Is(err, zkclient.ErrPermission):
		return []Mismatch{{Path: t.path, Kind: t.kind, Fix: FixNone, Problem: "unreadable: " + err.Error()}}, nil, nil
	case err != nil:
		return nil, nil, err
	}
	if t.kind == KindItem && st.NumChildren > 0 {
		t.kind = KindDirectory
		kids, err := children(ctx, e.conn, t.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case errors.Is(err, zk.ErrNoAuth):
			ms = append(ms, Mismatch{Path: t.path, Kind: t.kind, Fix: FixNone,
				Problem: "children not checked: " + zkclient.Explain(err, t.path, zkclient.OpList).Error()})
		case err != nil:
			return nil, nil, fmt.Errorf("list %s: %w", t.path, err)
		}
		for _, k := range kids {
			below = append(below, target{path: t.path + "/" + k, kind: KindItem, want: t.want})
		}
	}
	if t.want != nil {
		if !aclmodel.SameACL(acl, t.want) {
			ms = append(ms, e.aclMismatch(t.path, t.kind, acl, t.want))
		}
		return ms, below, nil
	}
	name := path.Base(t.path)
	if reason := e.judgeOwned(t.kind, name, acl, st); reason != "" {
		if want, ok := e.trust.Want(name); ok && e.stalePublisher(acl, want) && e.withinBound(t.kind, st) &&
			(t.kind == KindRegistryNode || st.EphemeralOwner != 0) {
			// The agent's own node from before a change of the
			// publisher's password: keep it, fix the publisher's entry
			// (and a registration's ACL is the one Init gives).
			if id, ok := e.trust.Identity(name); ok && t.kind == KindRegistryNode {
				want = e.p.RegistryNodeACL(id)
			}
			return []Mismatch{e.aclMismatch(t.path, t.kind, acl, want)}, nil, nil
		}
		return []Mismatch{untrusted(t, acl, reason)}, nil, nil
	}
	if id, ok := e.trust.Identity(name); ok && t.kind == KindRegistryNode && !aclmodel.SameACL(acl, e.p.RegistryNodeACL(id)) {
		// A registration its agent created under an earlier release's
		// ACL: trusted, moved to the ACL Init gives (data kept).
		return []Mismatch{e.aclMismatch(t.path, t.kind, acl, e.p.RegistryNodeACL(id))}, nil, nil
	}
	return nil, nil, nil
}

// withinBound reports whether a status or registry node's data is within
// its bound (fleet.MaxStatusBytes, fleet.MaxRegistrationBytes).
func (e *engine) withinBound(k Kind, st *zk.Stat) bool {
	if st == nil {
		return true
	}
	if k == KindRegistryNode {
		return st.DataLength <= fleet.MaxRegistrationBytes
	}
	return st.DataLength <= fleet.MaxStatusBytes
}

// stalePublisher reports whether acl grants the agent's identity of want
// ALL and otherwise names only digest identities of the publisher's user:
// a node the agent made when the publisher had another password.
func (e *engine) stalePublisher(acl, want []zk.ACL) bool {
	agent := want[len(want)-1]
	eff := aclmodel.Effective(acl)
	if eff[aclmodel.Key{Scheme: agent.Scheme, ID: agent.ID}] != zk.PermAll {
		return false
	}
	for k := range eff {
		if k != (aclmodel.Key{Scheme: agent.Scheme, ID: agent.ID}) && (k.Scheme != "digest" || aclmodel.UserOf(k.ID) != e.p.Publisher.User) {
			return false
		}
	}
	return true
}

// judgeOwned judges a status or registry node with the policy's Trust,
// and its size against its bound.
func (e *engine) judgeOwned(k Kind, name string, acl []zk.ACL, st *zk.Stat) string {
	if !e.withinBound(k, st) {
		bound := fleet.MaxStatusBytes
		if k == KindRegistryNode {
			bound = fleet.MaxRegistrationBytes
		}
		return fmt.Sprintf("oversized: %d bytes, above the %d-byte bound (readers skip it)", st.DataLength, bound)
	}
	if k == KindRegistryNode {
		return e.trust.JudgeRegistration(name, acl)
	}
	return e.trust.JudgeStatus(name, acl, st)
}

// untrusted is the mismatch of a status or registry node that is not
// provably its agent's: Repair deletes it (a real agent creates its node
// again: a status node at once, watching it; a registry node on its next
// session or refresh).
func untrusted(t target, acl []zk.ACL, reason string) Mismatch {
	return Mismatch{Path: t.path, Kind: t.kind, Got: acl, Fix: FixDelete,
		Problem: "untrusted: " + reason + "; delete it (its agent, if it may, creates it again)"}
}

func (e *engine) aclMismatch(p string, k Kind, got, want []zk.ACL) Mismatch {
	return Mismatch{Path: p, Kind: k, Got: got, Want: want, Fix: FixSetACL,
		Problem: fmt.Sprintf("has %s; want %s", e.p.Describe(got), e.p.Describe(want))}
}

// checkParent reports an advisory when the root's parent lets anyone but
// the publisher delete children: ZooKeeper checks DELETE on the parent
// only, so while the root has no children (after init, before the first
// publish, or after publishing an empty set) they could delete it and
// create their own root, with their own ACL and manifest.
func (e *engine) checkParent(ctx context.Context) (Mismatch, bool, error) {
	parent := path.Dir(e.paths.Root)
	acl, _, err := getACL(ctx, e.conn, parent)
	switch {
	case errors.Is(err, zkclient.ErrPermission), errors.Is(err, zk.ErrNoNode):
		return Mismatch{Path: parent, Kind: KindAncestor, Fix: FixNone,
			Problem: "the ACL of the root's parent cannot be checked: " + err.Error()}, true, nil
	case err != nil:
		return Mismatch{}, false, err
	}
	if e.ownAncestor(acl) {
		return Mismatch{}, false, nil // repaired to AncestorACL
	}
	var others []zk.ACL
	for _, a := range acl {
		if a.Perms&zk.PermDelete != 0 && !(a.Scheme == "digest" && a.ID == e.p.Publisher.ID()) {
			others = append(others, a)
		}
	}
	if len(others) == 0 {
		return Mismatch{}, false, nil
	}
	return Mismatch{Path: parent, Kind: KindAncestor, Got: acl, Fix: FixNone, Problem: fmt.Sprintf(
		"the root's parent grants DELETE to %s: while %s has no items they can delete it and create their own; "+
			"keep at least one item published, or put the root under a parent only the publisher may change",
		e.p.Describe(others), e.paths.Root)}, true, nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// ancestors lists the ancestors of the root, of the metadata base and of
// the base's node in ZooKeeper's quota tree (below /zookeeper/quota),
// outermost first, without "/" and without duplicates.
func (e *engine) ancestors() []string {
	var out []string
	for _, full := range []string{e.paths.Root, e.paths.Base(), QuotaRoot + e.paths.Base()} {
		var chain []string
		for a := path.Dir(full); a != "/" && a != QuotaRoot && a != path.Dir(QuotaRoot); a = path.Dir(a) {
			chain = append(chain, a)
		}
		slices.Reverse(chain)
		for _, a := range chain {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// ownAncestor reports whether acl is one an Init made for an ancestor:
// ALL for digest identities of the publisher's user only (its current
// password or an earlier one).
func (e *engine) ownAncestor(acl []zk.ACL) bool {
	if len(acl) == 0 || aclmodel.Redacted(acl) {
		return false
	}
	for _, a := range acl {
		if a.Scheme != "digest" || aclmodel.UserOf(a.ID) != e.p.Publisher.User || a.Perms&zk.PermAll != zk.PermAll {
			return false
		}
	}
	return true
}

// checkDocument compares the metadata base's data with the status-ACL
// document of the policy.
func (e *engine) checkDocument(ctx context.Context) (Mismatch, bool, error) {
	base := e.paths.Base()
	data, err := getData(ctx, e.conn, base)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return Mismatch{}, false, nil
	case errors.Is(err, zk.ErrNoAuth):
		return Mismatch{Path: base, Kind: KindBase, Fix: FixNone,
			Problem: "status-ACL document not checked: " + zkclient.Explain(err, base, zkclient.OpRead).Error()}, true, nil
	case err != nil:
		return Mismatch{}, false, fmt.Errorf("read %s: %w", base, err)
	}
	want := e.p.statusDocument()
	if len(data) == 0 {
		return Mismatch{Path: base, Kind: KindBase, Fix: FixDocument,
			Problem: "no status-ACL document: agents cannot give the publisher access to their status nodes"}, true, nil
	}
	got, perr := aclmodel.ParseStatusDoc(data)
	wantACL, _ := aclmodel.ParseStatusDoc(want)
	if perr != nil {
		if !strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
			return Mismatch{Path: base, Kind: KindBase, Fix: FixNone,
				Problem: fmt.Sprintf("holds %d bytes that are not a status-ACL document; not overwritten", len(data))}, true, nil
		}
		return Mismatch{Path: base, Kind: KindBase, Fix: FixDocument, Problem: "invalid status-ACL document: " + perr.Error()}, true, nil
	}
	if !aclmodel.SameACL(got, wantACL) {
		return Mismatch{Path: base, Kind: KindBase, Fix: FixDocument, Problem: fmt.Sprintf(
			"status-ACL document names %s; want %s", e.p.Describe(got), e.p.Describe(wantACL))}, true, nil
	}
	return Mismatch{}, false, nil
}

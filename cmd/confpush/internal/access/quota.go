package access

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// QuotaRoot is ZooKeeper's quota tree: a quota on path P is the node
// QuotaRoot+P+"/zookeeper_limits" (its limits) beside
// QuotaRoot+P+"/zookeeper_stats" (what the server counted).
const QuotaRoot = "/zookeeper/quota"

// The nodes of one quota.
const (
	limitsName = "zookeeper_limits"
	statsName  = "zookeeper_stats"
)

// probeName is the status child Check creates to learn whether the
// server enforces quotas: not a name any agent identity can have (a
// digest user has no ':').
const probeName = "quota:probe"

// Quota is one enforced ZooKeeper quota of the policy: at most Count nodes
// and Bytes bytes of data in the subtree of Path, the node itself
// included. The server checks a write against the deepest quota on its
// path only, and against committed counts (docs/design.md, "Bounds on
// agent identities").
type Quota struct {
	Path  string
	Count int64
	Bytes int64
}

// Dir is the quota's node under QuotaRoot.
func (q Quota) Dir() string { return QuotaRoot + q.Path }

func (q Quota) limitsNode() string { return q.Dir() + "/" + limitsName }
func (q Quota) statsNode() string  { return q.Dir() + "/" + statsName }

// limitsData is the zookeeper_limits data of q: hard limits only (the
// soft ones, count and bytes, only log).
func (q Quota) limitsData() []byte {
	return fmt.Appendf(nil, "count=-1,bytes=-1,countHardLimit=%d,byteHardLimit=%d", q.Count, q.Bytes)
}

// String is the limits for people.
func (q Quota) String() string {
	return fmt.Sprintf("at most %d node(s) and %d bytes", q.Count, q.Bytes)
}

// Quotas returns the quotas of the policy for a root: the status parent
// may hold no child but those with a quota of their own (count 1, bytes
// 0: a status node under a name that is not a policy agent's is refused),
// and each agent identity's status node and registry node one node of at
// most fleet.MaxStatusBytes and fleet.MaxRegistrationBytes.
func (p Policy) Quotas(paths layout.Paths) []Quota {
	out := []Quota{{Path: paths.Status(), Count: 1, Bytes: 0}}
	for _, a := range p.agents() {
		out = append(out,
			Quota{Path: paths.StatusNode(a.User), Count: 1, Bytes: fleet.MaxStatusBytes},
			Quota{Path: paths.AgentNode(a.User), Count: 1, Bytes: fleet.MaxRegistrationBytes})
	}
	return out
}

// parseLimits reads the hard limits of a zookeeper_limits node
// ("count=-1,bytes=-1,countHardLimit=1,byteHardLimit=0"; -1 when unset).
func parseLimits(b []byte) (count, bytes int64, ok bool) {
	count, bytes = -1, -1
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), ",") {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return 0, 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		switch strings.TrimSpace(k) {
		case "countHardLimit":
			count = n
		case "byteHardLimit":
			bytes = n
		}
	}
	return count, bytes, true
}

// lockedQuotaRoot is the ACL /zookeeper/quota should have: what it has,
// with world READ only, plus the publisher ALL.
func (p Policy) lockedQuotaRoot(got []zk.ACL) []zk.ACL {
	var out []zk.ACL
	for _, a := range got {
		if a.Scheme != worldScheme {
			out = append(out, a)
		}
	}
	if aclmodel.Effective(out)[aclmodel.Key{Scheme: "digest", ID: p.Publisher.ID()}] != zk.PermAll {
		out = append(out, p.Publisher.ACL(zk.PermAll))
	}
	return append(out, zk.ACL{Perms: zk.PermRead, Scheme: worldScheme, ID: worldID})
}

// quotaDirs are the quota tree's plain directories of a root, which must
// be the publisher's alone: whoever may create below them can set a
// deeper quota that replaces the policy's.
func quotaDirs(paths layout.Paths) []string {
	return []string{QuotaRoot + paths.Base(), QuotaRoot + paths.Agents()}
}

// checkQuotas compares the quota tree with the policy: /zookeeper/quota
// locked, the root's quota directories and every quota's nodes the
// publisher's with the right limits, no quota of a name the policy does
// not have, and no quota zkconf did not set on a prefix of the root or
// the metadata base (advisory). When the status quota is in place it
// probes whether the server enforces quotas.
func (e *engine) checkQuotas(ctx context.Context) ([]Mismatch, error) {
	var out []Mismatch
	meta := e.p.MetaACL()
	acl, _, err := getACL(ctx, e.conn, QuotaRoot)
	switch {
	case errors.Is(err, zkclient.ErrPermission), errors.Is(err, zk.ErrNoNode):
		out = append(out, Mismatch{Path: QuotaRoot, Kind: KindQuotaRoot, Fix: FixNone,
			Problem: "cannot be checked: " + err.Error()})
	case err != nil:
		return nil, err
	case aclmodel.Effective(acl)[aclmodel.World]&^zk.PermRead != 0:
		want := e.p.lockedQuotaRoot(acl)
		out = append(out, Mismatch{Path: QuotaRoot, Kind: KindQuotaRoot, Got: acl, Want: want, Fix: FixSetACL,
			Problem: fmt.Sprintf("has %s: anyone may lift a limit, set a quota on any path, or crash a 3.8 server "+
				"with a quota on /; want %s", e.p.Describe(acl), e.p.Describe(want))})
	}
	for _, d := range quotaDirs(e.paths) {
		acl, _, err := getACL(ctx, e.conn, d)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// Created with the first quota below it.
		case err != nil:
			return nil, err
		case !aclmodel.SameACL(acl, meta):
			out = append(out, e.aclMismatch(d, KindQuota, acl, meta))
		}
	}
	qs := e.p.Quotas(e.paths)
	found := make([][]Mismatch, len(qs))
	err = parallel(ctx, len(qs), func(ctx context.Context, i int) error {
		m, err := e.checkQuota(ctx, qs[i])
		found[i] = m
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, m := range found {
		out = append(out, m...)
	}
	extra, err := e.extraQuotas(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, extra...)
	if len(found[0]) == 0 {
		m, ok, err := e.probeEnforcement(ctx, qs[0])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// checkQuota checks one quota's directory, limits and stats nodes.
func (e *engine) checkQuota(ctx context.Context, q Quota) ([]Mismatch, error) {
	meta := e.p.MetaACL()
	var problems []string
	for _, n := range []struct{ path, what string }{{q.Dir(), "its node"}, {q.limitsNode(), limitsName}, {q.statsNode(), statsName}} {
		acl, _, err := getACL(ctx, e.conn, n.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			problems = append(problems, n.what+" missing")
			continue
		case errors.Is(err, zkclient.ErrPermission):
			problems = append(problems, n.what+" unreadable ("+err.Error()+")")
			continue
		case err != nil:
			return nil, err
		case !aclmodel.SameACL(acl, meta):
			problems = append(problems, fmt.Sprintf("%s has %s", n.what, e.p.Describe(acl)))
		}
		if n.what != limitsName {
			continue
		}
		data, err := getData(ctx, e.conn, n.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			problems = append(problems, n.what+" missing")
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s unreadable (%v)", n.what, zkclient.Explain(err, n.path, zkclient.OpRead)))
		default:
			if c, b, ok := parseLimits(data); !ok || c != q.Count || b != q.Bytes {
				problems = append(problems, fmt.Sprintf("limits are %q", data))
			}
		}
	}
	if len(problems) == 0 {
		return nil, nil
	}
	return []Mismatch{{Path: q.Dir(), Kind: KindQuota, Want: meta, Fix: FixQuota,
		Problem: fmt.Sprintf("%s; want %s on %s, nodes the publisher's alone", strings.Join(problems, ", "), q, q.Path)}}, nil
}

// extraQuotas finds the quotas below the root's quota directories that
// the policy does not set: a removed identity's (deleted by Repair), or
// one zkconf never sets (advisory). Quotas zkconf did not set on a prefix
// of the root or of the metadata base are advisories too: they can refuse
// a publish.
func (e *engine) extraQuotas(ctx context.Context) ([]Mismatch, error) {
	var out []Mismatch
	base := QuotaRoot + e.paths.Base()
	for _, parent := range []string{QuotaRoot + e.paths.Status(), QuotaRoot + e.paths.Agents()} {
		kids, err := children(ctx, e.conn, parent)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", parent, zkclient.Explain(err, parent, zkclient.OpList))
		}
		for _, k := range kids {
			if k == limitsName || k == statsName || e.trust.Names(k) {
				continue
			}
			out = append(out, Mismatch{Path: parent + "/" + k, Kind: KindQuota, Fix: FixDelete,
				Problem: fmt.Sprintf("a quota of %q, which is no agent identity of the policy; delete it", k)})
		}
	}
	kids, err := children(ctx, e.conn, base)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("list %s: %w", base, zkclient.Explain(err, base, zkclient.OpList))
	}
	for _, k := range kids {
		if k != path.Base(e.paths.Status()) && k != path.Base(e.paths.Agents()) {
			out = append(out, Mismatch{Path: base + "/" + k, Kind: KindQuota, Fix: FixNone,
				Problem: "a quota node zkconf does not set: writes below it may fail with 'quota exceeded'"})
		}
	}
	var prefixes []string
	for _, full := range []string{e.paths.Root, e.paths.Base()} {
		for a := full; a != "/"; a = path.Dir(a) {
			if !slices.Contains(prefixes, a) {
				prefixes = append(prefixes, a)
			}
		}
	}
	for _, pre := range prefixes {
		node := QuotaRoot + pre + "/" + limitsName
		data, err := getData(ctx, e.conn, node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			data = []byte("unreadable: " + zkclient.Explain(err, node, zkclient.OpRead).Error())
		}
		out = append(out, Mismatch{Path: node, Kind: KindQuota, Fix: FixNone, Problem: fmt.Sprintf(
			"a quota zkconf does not set covers %s (%s): writes below it past its limits fail with 'quota exceeded'", pre, data)})
	}
	return out, nil
}

// probeEnforcement creates a status node that the status quota forbids:
// a server enforcing its quotas refuses it; one that does not lets it
// land, and the probe is deleted at once (it is ephemeral besides).
func (e *engine) probeEnforcement(ctx context.Context, status Quota) (Mismatch, bool, error) {
	node := status.Path + "/" + probeName
	_, err := zkclient.Call(ctx, func() (string, error) {
		return e.conn.Create(node, nil, zk.FlagEphemeral, e.p.MetaACL())
	})
	switch {
	case zkclient.IsQuotaExceeded(err), errors.Is(err, zk.ErrNoNode):
		return Mismatch{}, false, nil
	case err != nil && !errors.Is(err, zk.ErrNodeExists):
		return Mismatch{Path: status.Dir(), Kind: KindQuota, Fix: FixNone,
			Problem: "cannot probe whether quotas are enforced: " + zkclient.Explain(err, node, zkclient.OpCreate).Error()}, true, nil
	}
	if _, err := zkclient.Call(ctx, func() (struct{}, error) { return struct{}{}, e.conn.Delete(node, -1) }); err != nil &&
		!errors.Is(err, zk.ErrNoNode) {
		return Mismatch{}, false, fmt.Errorf("delete the quota probe %s: %w", node, err)
	}
	return Mismatch{Path: status.Dir(), Kind: KindQuota, Fix: FixNone, Problem: "the ZooKeeper leader does not enforce quotas " +
		"(a create the status quota must refuse landed): run every server with -Dzookeeper.enforceQuota=true " +
		"(docs/install.md); until then the quotas only log"}, true, nil
}

// fixQuota sets one quota: its directory and any missing parent (the
// publisher's alone), the limits and stats nodes created together when
// the limits are missing (a stats node the server did not count from the
// start is replaced), the limits rewritten when they differ, and every
// ACL set to the publisher's.
func (e *engine) fixQuota(ctx context.Context, q Quota) (*Action, error) {
	meta := e.p.MetaACL()
	if err := e.ensureQuotaDir(ctx, q.Dir()); err != nil {
		return nil, err
	}
	type node struct {
		data []byte
		st   *zk.Stat
	}
	get := func(p string) (node, error) {
		return zkclient.Call(ctx, func() (node, error) {
			b, st, err := e.conn.Get(p)
			return node{b, st}, err
		})
	}
	for range casAttempts {
		lim, lerr := get(q.limitsNode())
		_, serr := get(q.statsNode())
		var err error
		switch {
		case errors.Is(lerr, zk.ErrNoNode):
			ops := []any{}
			if serr == nil {
				ops = append(ops, &zk.DeleteRequest{Path: q.statsNode(), Version: -1})
			}
			ops = append(ops,
				&zk.CreateRequest{Path: q.limitsNode(), Data: q.limitsData(), Acl: meta},
				&zk.CreateRequest{Path: q.statsNode(), Data: []byte("count=0,bytes=0"), Acl: meta})
			var res []zk.MultiResponse
			res, err = zkclient.Call(ctx, func() ([]zk.MultiResponse, error) { return e.conn.Multi(ops...) })
			err = zkclient.ExplainMulti(err, ops, res)
		case lerr != nil:
			return nil, wrap(zkclient.Explain(lerr, q.limitsNode(), zkclient.OpRead), q.limitsNode(), zkclient.OpRead)
		case errors.Is(serr, zk.ErrNoNode):
			_, err = zkclient.Call(ctx, func() (string, error) {
				return e.conn.Create(q.statsNode(), []byte("count=0,bytes=0"), 0, meta)
			})
			err = zkclient.Explain(err, q.statsNode(), zkclient.OpCreate)
		default:
			if c, b, ok := parseLimits(lim.data); !ok || c != q.Count || b != q.Bytes {
				_, err = zkclient.Call(ctx, func() (*zk.Stat, error) { return e.conn.Set(q.limitsNode(), q.limitsData(), lim.st.Version) })
				err = zkclient.Explain(err, q.limitsNode(), zkclient.OpWrite)
			}
		}
		switch {
		case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			continue // changed meanwhile: look again
		case err != nil:
			return nil, err
		}
		for _, p := range []string{q.Dir(), q.limitsNode(), q.statsNode()} {
			if _, err := e.setACL(ctx, p, KindQuota, meta); err != nil {
				return nil, err
			}
		}
		return &Action{Path: q.Dir(), Kind: KindQuota, Did: FixQuota, Detail: q.String() + " on " + q.Path}, nil
	}
	return nil, fmt.Errorf("set quota %s: %w", q.Dir(), ErrConcurrentChange)
}

// ensureQuotaDir creates dir and its missing parents below QuotaRoot, the
// publisher's alone.
func (e *engine) ensureQuotaDir(ctx context.Context, dir string) error {
	rel := strings.TrimPrefix(dir, QuotaRoot)
	cur := QuotaRoot
	for _, part := range strings.Split(strings.TrimPrefix(rel, "/"), "/") {
		cur += "/" + part
		ok, err := exists(ctx, e.conn, cur)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := e.create(ctx, cur, nil, e.p.AncestorACL()); err != nil {
			return err
		}
	}
	return nil
}

// deleteQuota deletes a quota's node and everything below it.
func (e *engine) deleteQuota(ctx context.Context, dir string) (*Action, error) {
	if err := e.deleteTree(ctx, dir); err != nil {
		return nil, err
	}
	return &Action{Path: dir, Kind: KindQuota, Did: FixDelete, Detail: "a quota of a name the policy does not have"}, nil
}

// deleteTree deletes p and its descendants, children first; nodes gone
// meanwhile are fine.
func (e *engine) deleteTree(ctx context.Context, p string) error {
	kids, err := children(ctx, e.conn, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return wrap(zkclient.Explain(err, p, zkclient.OpList), p, zkclient.OpList)
	}
	for _, k := range kids {
		if err := e.deleteTree(ctx, p+"/"+k); err != nil {
			return err
		}
	}
	_, err = zkclient.Call(ctx, func() (struct{}, error) { return struct{}{}, e.conn.Delete(p, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return wrap(zkclient.Explain(err, p, zkclient.OpDelete), p, zkclient.OpDelete)
	}
	return nil
}

package access_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// setQuota writes a quota on p the way Init does (zkCli refuses nested
// ones; the server accepts the nodes written directly).
func setQuota(t *testing.T, conn *zk.Conn, p string, count, bytes int) {
	t.Helper()
	dir := access.QuotaRoot + p
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, world); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	ops := []any{
		&zk.CreateRequest{Path: dir + "/zookeeper_limits", Data: fmt.Appendf(nil, "count=-1,bytes=-1,countHardLimit=%d,byteHardLimit=%d", count, bytes), Acl: world},
		&zk.CreateRequest{Path: dir + "/zookeeper_stats", Data: []byte("count=0,bytes=0"), Acl: world},
	}
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatal(err)
	}
}

// TestQuotaServerFacts pins what the design relies on in ZooKeeper 3.8
// with enforced quotas (docs/design.md, "Bounds on agent identities"): a
// limit on a path that does not exist yet is enforced once it is
// created; nested quotas are checked (and counted) at the deepest one
// only; the refusal is QuotaExceeded, which go-zookeeper does not name
// and zkconf classifies by code; a byte limit of 0 refuses any data.
func TestQuotaServerFacts(t *testing.T) {
	c := sharedZooKeeper.For(t)
	conn := c.Connect(t, 4*time.Second)
	setQuota(t, conn, "/q", 1, 0)       // the parent: itself alone, no data
	setQuota(t, conn, "/q/own", 1, 100) // a name of its own: one node, 100 bytes
	for _, p := range []string{"/q", "/q/own"} {
		if _, err := conn.Create(p, nil, 0, world); err != nil {
			t.Fatalf("create %s under its (not yet existing) quota: %v", p, err)
		}
	}
	_, err := conn.Create("/q/other", nil, 0, world)
	if !zkclient.IsQuotaExceeded(err) || err.Error() != "unknown error: -125" {
		t.Errorf("create of a child the parent's count forbids: %v; want QuotaExceeded (go-zookeeper: unknown error: -125)", err)
	}
	explained := zkclient.Explain(err, "/q/other", zkclient.OpCreate)
	var qe *zkclient.QuotaError
	if !errors.As(explained, &qe) || !errors.Is(explained, zkclient.ErrQuotaExceeded) ||
		!strings.HasPrefix(explained.Error(), "quota exceeded: create on /q/other (") {
		t.Errorf("explained: %v", explained)
	}
	if _, err := conn.Set("/q/own", make([]byte, 100), -1); err != nil {
		t.Errorf("set within the deepest quota (the parent's byte limit is 0): %v", err)
	}
	if _, err := conn.Set("/q/own", make([]byte, 101), -1); !zkclient.IsQuotaExceeded(err) {
		t.Errorf("set past the deepest quota: %v", err)
	}
	if _, err := conn.Create("/q/own/child", nil, 0, world); !zkclient.IsQuotaExceeded(err) {
		t.Errorf("a child under the count of 1: %v", err)
	}
	if _, err := conn.Set("/q", []byte("x"), -1); !zkclient.IsQuotaExceeded(err) {
		t.Errorf("data on a node whose byte limit is 0: %v", err)
	}
	b, _, err := conn.Get(access.QuotaRoot + "/q/zookeeper_stats")
	if err != nil || !bytes.HasPrefix(b, []byte("count=1,")) {
		t.Errorf("the parent's stats %q, %v: the child with its own quota must not count", b, err)
	}
	// A multi carrying a refused create is refused whole, and explained.
	ops := []any{&zk.CreateRequest{Path: "/fine", Acl: world}, &zk.CreateRequest{Path: "/q/again", Acl: world}}
	res, err := conn.Multi(ops...)
	if err := zkclient.ExplainMulti(err, ops, res); !errors.Is(err, zkclient.ErrQuotaExceeded) || !strings.Contains(err.Error(), "create on /q/again") {
		t.Errorf("multi: %v", err)
	}
	if ok, _, _ := conn.Exists("/fine"); ok {
		t.Error("the multi was applied in part")
	}
}

// fixesOf runs Check and returns the fix of each path found, and the
// findings.
func fixesOf(t *testing.T, ctx context.Context, conn *zk.Conn, paths layout.Paths, pol access.Policy) (map[string]access.Fix, []access.Mismatch) {
	t.Helper()
	ms, err := access.Check(ctx, conn, paths, pol)
	if err != nil {
		t.Fatal(err)
	}
	fixes := map[string]access.Fix{}
	for _, m := range ms {
		fixes[m.Path] = m.Fix
	}
	return fixes, ms
}

// initTwo runs Init for /cfg (metadata under /meta) with the publisher
// and agents web1 and web2, and returns the server and the publisher's
// session.
func initTwo(t *testing.T) (*zktest.Cluster, *zk.Conn, access.Policy) {
	t.Helper()
	c := sharedZooKeeper.For(t)
	pol := access.Policy{Publisher: mustID(t, "publisher"), Agents: []aclmodel.Identity{mustID(t, "web1"), mustID(t, "web2")}}
	pub := connectAs(t, c, "publisher")
	if _, err := access.Init(ctxT(t), pub, layout.New("/cfg", "/meta"), pol); err != nil {
		t.Fatal(err)
	}
	return c, pub, pol
}

// TestInitSetsLockedQuotas: Init bounds what an agent identity can write
// (foreign status names refused, its own nodes bounded, no registration
// of its own making) and locks the quotas: neither an unauthenticated
// client nor an agent identity can lift a limit, reset the counts or add
// a quota (a quota on / crashes a 3.8.0 server at once and at every
// restart). Check reports a tampered limit, a missing stats node, a
// world-writable /zookeeper/quota and the quota of a removed identity;
// Repair restores them. On the code before the quotas every foreign
// create landed and /zookeeper/quota stayed world-writable.
func TestInitSetsLockedQuotas(t *testing.T) {
	c, pub, pol := initTwo(t)
	ctx, paths := ctxT(t), layout.New("/cfg", "/meta")
	pubID, web1 := pol.Publisher, pol.Agents[0]
	if ms, err := access.Check(ctx, pub, paths, pol); err != nil || slices.ContainsFunc(ms, access.Mismatch.Repairable) {
		t.Fatalf("Check after Init: %v, %v", ms, err)
	}
	agent := connectAs(t, c, "web1")
	anon := connectAs(t, c, "")
	own, err := statusNodeACL(ctx, agent, paths)
	if err != nil {
		t.Fatal(err)
	}

	_, err = agent.Create(paths.StatusNode("forged"), nil, zk.FlagEphemeral, own)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("an agent's status node under a foreign name: %v; want QuotaExceeded", err)
	}
	_, err = agent.Create(paths.StatusNode("web1"), make([]byte, fleet.MaxStatusBytes+1), zk.FlagEphemeral, own)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("an oversized status node: %v; want QuotaExceeded", err)
	}
	_, err = agent.Create(paths.StatusNode("web1"), []byte("{}"), zk.FlagEphemeral, own)
	wantOK(t, "the agent's own status node", err)
	_, err = agent.Create(paths.AgentNode("forged"), nil, 0, own)
	wantNoAuth(t, "an agent's registration under another name", err)
	_, err = agent.Set(paths.AgentNode("web1"), []byte(`{"hostname":"h"}`), -1)
	wantOK(t, "the agent writes the registration Init created", err)
	_, err = agent.Set(paths.AgentNode("web1"), make([]byte, fleet.MaxRegistrationBytes+1), -1)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("an oversized registration: %v; want QuotaExceeded", err)
	}
	_, err = agent.SetACL(paths.AgentNode("web1"), world, -1)
	wantNoAuth(t, "the agent opens its registration's ACL", err)

	var statusQ, web2Q access.Quota
	for _, q := range pol.Quotas(paths) {
		switch q.Path {
		case paths.Status():
			statusQ = q
		case paths.StatusNode("web2"):
			web2Q = q
		}
	}
	for _, s := range []*zk.Conn{anon, agent} {
		_, err = s.Set(statusQ.Dir()+"/zookeeper_limits", []byte("count=-1,bytes=-1"), -1)
		wantNoAuth(t, "lift the status limit", err)
		_, err = s.Set(statusQ.Dir()+"/zookeeper_stats", []byte("count=0,bytes=0"), -1)
		wantNoAuth(t, "reset the status counts", err)
		_, err = s.Create(access.QuotaRoot+"/zookeeper_limits", []byte("count=-1,bytes=-1,countHardLimit=1,byteHardLimit=-1"), 0, world)
		wantNoAuth(t, "a quota on /", err)
		_, err = s.Create(access.QuotaRoot+"/cfg", nil, 0, world)
		wantNoAuth(t, "a quota node for the root", err)
	}
	if acl := aclOf(t, pub, access.QuotaRoot); !aclmodel.SameACL(acl, []zk.ACL{pubID.ACL(zk.PermAll), {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}) {
		t.Errorf("/zookeeper/quota ACL %v; want the publisher cdrwa, world r", acl)
	}

	// The publisher's identity tampers, as a stolen credential or an
	// operator's mistake would.
	_, err = pub.Set(statusQ.Dir()+"/zookeeper_limits", []byte("count=-1,bytes=-1"), -1)
	wantOK(t, "lift the status limit", err)
	wantOK(t, "delete web2's stats", pub.Delete(web2Q.Dir()+"/zookeeper_stats", -1))
	_, err = pub.SetACL(access.QuotaRoot, world, -1)
	wantOK(t, "open /zookeeper/quota", err)
	_, err = agent.Create(paths.StatusNode("forged"), nil, zk.FlagEphemeral, own)
	wantOK(t, "a foreign status node past the lifted limit", err)

	fixes, ms := fixesOf(t, ctx, pub, paths, pol)
	want := map[string]access.Fix{
		statusQ.Dir():              access.FixQuota,
		web2Q.Dir():                access.FixQuota,
		access.QuotaRoot:           access.FixSetACL,
		paths.StatusNode("forged"): access.FixDelete,
	}
	for p, f := range want {
		if fixes[p] != f {
			t.Errorf("Check: %s: %q; want %q (all: %v)", p, fixes[p], f, ms)
		}
	}
	rep, err := access.Repair(ctx, pub, paths, pol)
	if err != nil || slices.ContainsFunc(rep.Remaining, access.Mismatch.Repairable) {
		t.Fatalf("Repair: %v, remaining %v", err, rep.Remaining)
	}
	_, err = agent.Create(paths.StatusNode("forged2"), nil, zk.FlagEphemeral, own)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("a foreign status node after Repair: %v; want QuotaExceeded", err)
	}
	_, err = anon.Create(access.QuotaRoot+"/zookeeper_limits", nil, 0, world)
	wantNoAuth(t, "a quota on / after Repair", err)

	// web2 leaves the policy: its quotas and registration go.
	pol.Agents = []aclmodel.Identity{web1}
	if _, err := access.Init(ctx, pub, paths, pol); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{web2Q.Dir(), access.QuotaRoot + paths.AgentNode("web2"), paths.AgentNode("web2")} {
		if ok, _, err := pub.Exists(p); err != nil || ok {
			t.Errorf("%s after web2 left the policy: exists %v, %v", p, ok, err)
		}
	}
}

// TestQuotaEnforcementProbe: on a server that does not enforce quotas
// (zookeeper.enforceQuota missing), Init and Check say so: the quotas
// would only log.
func TestQuotaEnforcementProbe(t *testing.T) {
	c := zktest.StartWith(t, zktest.Options{JVMFlags: []string{"-Dzookeeper.enforceQuota=false"}})
	ctx := ctxT(t)
	pol := access.Policy{Publisher: mustID(t, "publisher"), Agents: []aclmodel.Identity{mustID(t, "web1")}}
	paths := layout.New("/cfg", "/meta")
	pub := connectAs(t, c, "publisher")
	rep, err := access.Init(ctx, pub, paths, pol)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Remaining, func(m access.Mismatch) bool {
		return strings.Contains(m.Problem, "does not enforce quotas") && strings.Contains(m.Problem, "zookeeper.enforceQuota=true")
	})
	if i < 0 || rep.Remaining[i].Repairable() {
		t.Fatalf("remaining after Init on a server without enforcement: %v; want the advisory", rep.Remaining)
	}
	if kids, _, err := pub.Children(paths.Status()); err != nil || len(kids) != 0 {
		t.Errorf("status children after the probe: %v, %v; want none", kids, err)
	}
}

// TestRegistryMovedToInitACL: a tree an earlier release set up gave
// agents CREATE on the registry, and each agent created its own node
// (publisher and agent cdrwa). Check reports both, Repair takes CREATE
// away, moves the node to the ACL Init gives (publisher cdrwa, agent rw),
// data kept, and creates the missing node of another identity; readers
// trust both forms.
func TestRegistryMovedToInitACL(t *testing.T) {
	c, pub, pol := initTwo(t)
	ctx, paths := ctxT(t), layout.New("/cfg", "/meta")
	web1, web2 := pol.Agents[0], pol.Agents[1]
	// The earlier release's registry.
	old := append(pol.MetaACL(), web1.ACL(zk.PermCreate), web2.ACL(zk.PermCreate))
	for _, n := range []string{paths.AgentNode("web1"), paths.AgentNode("web2")} {
		wantOK(t, "delete "+n, pub.Delete(n, -1))
	}
	_, err := pub.SetACL(paths.Agents(), old, -1)
	wantOK(t, "old registry ACL", err)
	agent := connectAs(t, c, "web1")
	own, err := statusNodeACL(ctx, agent, paths)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"hostname":"h1"}`)
	_, err = agent.Create(paths.AgentNode("web1"), data, 0, own)
	wantOK(t, "an agent of the earlier release registers", err)
	// The trust a reader finds in the tree (what fleet judges with).
	docData, _, err := pub.Get(paths.Base())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := aclmodel.ParseStatusDoc(docData)
	if err != nil {
		t.Fatal(err)
	}
	trust := aclmodel.TrustFromTree(doc, aclOf(t, pub, paths.Root))
	if why := trust.JudgeRegistration("web1", aclOf(t, pub, paths.AgentNode("web1"))); why != "" {
		t.Errorf("the earlier release's registration untrusted: %s", why)
	}

	fixes, ms := fixesOf(t, ctx, pub, paths, pol)
	if fixes[paths.Agents()] != access.FixSetACL || fixes[paths.AgentNode("web1")] != access.FixSetACL ||
		fixes[paths.AgentNode("web2")] != access.FixCreate {
		t.Fatalf("Check = %v", ms)
	}
	if _, err := access.Repair(ctx, pub, paths, pol); err != nil {
		t.Fatal(err)
	}
	for id, n := range map[aclmodel.Identity]string{web1: paths.AgentNode("web1"), web2: paths.AgentNode("web2")} {
		if acl := aclOf(t, pub, n); !aclmodel.SameACL(acl, pol.RegistryNodeACL(id)) {
			t.Errorf("%s ACL %v; want %v", n, acl, pol.RegistryNodeACL(id))
		}
		if why := trust.JudgeRegistration(id.User, aclOf(t, pub, n)); why != "" {
			t.Errorf("%s untrusted after Repair: %s", n, why)
		}
	}
	if b, _, err := pub.Get(paths.AgentNode("web1")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("web1's registration after Repair: %q, %v; want its data kept", b, err)
	}
	_, err = agent.Create(paths.AgentNode("web3"), nil, 0, own)
	wantNoAuth(t, "registering another name after Repair", err)
}

package access_test

import (
	"context"
	"errors"
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

// world is the ACL of an open tree, as zkconf created it before ACLs.
var world = zk.WorldACL(zk.PermAll)

// connectAs opens a session authenticated as user (with its test password)
// or, for user "", an anonymous one.
func connectAs(t *testing.T, c *zktest.Cluster, user string) *zk.Conn {
	t.Helper()
	return connectWith(t, c, user, password(user))
}

// statusNodeACL is the ACL the agent whose session is conn gives its
// status node, as an agent reads it (fleet.Fleet.StatusNodeACL).
func statusNodeACL(ctx context.Context, conn *zk.Conn, paths layout.Paths) ([]zk.ACL, error) {
	fl, err := fleet.New(zkclient.Fixed(conn, nil), paths.Root, fleet.WithMeta(paths.Meta))
	if err != nil {
		return nil, err
	}
	return fl.StatusNodeACL(ctx)
}

func connectWith(t *testing.T, c *zktest.Cluster, user, pass string) *zk.Conn {
	t.Helper()
	conn := c.Connect(t, 4*time.Second)
	if user != "" {
		if err := conn.AddAuth("digest", []byte(user+":"+pass)); err != nil {
			t.Fatalf("AddAuth %s: %v", user, err)
		}
	}
	return conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// publishAs does what the publish package does with ACLs (read them once
// from the tree, create every node with its holder's ACL): it writes a
// manifest, creates items, a blob and a history entry.
func publishAs(t *testing.T, ctx context.Context, conn *zk.Conn, paths layout.Paths, gen int64, items ...string) {
	t.Helper()
	copyACL := func(p string) []zk.ACL {
		acl, _, err := zkclient.ReadACL(ctx, conn, p)
		if errors.Is(err, zk.ErrNoNode) {
			return world
		}
		if err != nil {
			t.Fatalf("copy the ACL of %s: %v", p, err)
		}
		return acl
	}
	in := struct{ Item, Meta []zk.ACL }{copyACL(paths.Root), copyACL(paths.History())}
	ops := []any{&zk.SetDataRequest{Path: paths.Root, Data: []byte(`{"format":1}`), Version: -1}}
	for _, it := range items {
		ops = append(ops, &zk.CreateRequest{Path: paths.Item(it), Data: []byte("content of " + it), Acl: in.Item})
	}
	ops = append(ops,
		&zk.CreateRequest{Path: paths.Blob(strings.Repeat("b", 63) + string(rune('0'+gen))), Data: []byte("blob"), Acl: in.Meta},
		&zk.CreateRequest{Path: paths.HistoryNode(gen), Data: []byte(`{"format":1}`), Acl: in.Meta})
	if res, err := conn.Multi(ops...); err != nil {
		t.Fatalf("publish: %v", zkclient.ExplainMulti(err, ops, res))
	}
}

func wantNoAuth(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("%s = %v; want NoAuth", what, err)
	}
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func aclOf(t *testing.T, conn *zk.Conn, p string) []zk.ACL {
	t.Helper()
	acl, _, err := conn.GetACL(p)
	if err != nil {
		t.Fatalf("GetACL %s: %v", p, err)
	}
	return acl
}

// TestModel checks the access model against a real server: with
// Init in place an agent identity cannot publish or touch another agent's
// status node, a stranger can read nothing, and the publisher works as
// before, its new items carrying the root's ACL.
func TestModel(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	pubID, webID, dbID := mustID(t, "publisher"), mustID(t, "web1"), mustID(t, "db1")
	pol := access.Policy{Publisher: pubID, Agents: []aclmodel.Identity{webID, dbID}}
	paths := layout.New("/config", layout.DefaultMeta)

	pub := connectAs(t, c, "publisher")
	rep, err := access.Init(ctx, pub, paths, pol)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	var created []string
	for _, a := range rep.Actions {
		if a.Did == access.FixCreate {
			created = append(created, a.Path)
		}
	}
	for _, p := range []string{"/zkconf", "/zkconf/roots", paths.Root, paths.Base(), paths.History(), paths.Blobs(),
		paths.Publishing(), paths.Status(), paths.Election()} {
		if !slices.Contains(created, p) {
			t.Errorf("Init did not create %s (created %v)", p, created)
		}
	}
	if data, _, err := pub.Get(paths.Root); err != nil || len(data) != 0 {
		t.Errorf("root after Init = %q, %v; want empty data (the first publish writes generation 1)", data, err)
	}
	for p, want := range pol.ACLs(paths) {
		if got := aclOf(t, pub, p); !aclmodel.SameACL(got, want) {
			t.Errorf("ACL of %s = %s; want %s", p, pol.Describe(got), pol.Describe(want))
		}
	}
	// The default root lives under "/", whose world ACL lets anyone delete
	// the root while it has no items: Init says so.
	if len(rep.Remaining) != 1 || rep.Remaining[0].Kind != access.KindAncestor || rep.Remaining[0].Path != "/" {
		t.Errorf("Init remaining = %v; want the advisory about /", rep.Remaining)
	}

	// The publisher publishes with the ACLs it reads from the tree.
	publishAs(t, ctx, pub, paths, 1, "app.json", "db.conf")
	for _, it := range []string{"app.json", "db.conf"} {
		if got := aclOf(t, pub, paths.Item(it)); !aclmodel.SameACL(got, pol.RootACL()) {
			t.Errorf("item %s has %s; want the root's ACL", it, pol.Describe(got))
		}
	}
	if got := aclOf(t, pub, paths.HistoryNode(1)); !aclmodel.SameACL(got, pol.MetaACL()) {
		t.Errorf("history entry has %s; want %s", pol.Describe(got), pol.Describe(pol.MetaACL()))
	}
	if err := access.Probe(ctx, pub, paths, access.RolePublisher); err != nil {
		t.Errorf("Probe(publisher): %v", err)
	}

	web := connectAs(t, c, "web1")
	db := connectAs(t, c, "db1")
	stranger := connectAs(t, c, "")

	t.Run("agent reads root and items", func(t *testing.T) {
		_, _, err := web.Get(paths.Root)
		wantOK(t, "get root", err)
		kids, _, err := web.Children(paths.Root)
		wantOK(t, "children of root", err)
		slices.Sort(kids)
		if !slices.Equal(kids, []string{"app.json", "db.conf"}) {
			t.Errorf("items = %v", kids)
		}
		data, _, err := web.Get(paths.Item("app.json"))
		if err != nil || string(data) != "content of app.json" {
			t.Errorf("get item = %q, %v", data, err)
		}
		wantOK(t, "probe", access.Probe(ctx, web, paths, access.RoleAgent))
	})

	t.Run("agent cannot publish", func(t *testing.T) {
		_, err := web.Set(paths.Root, []byte(`{"format":1,"generation":99}`), -1)
		wantNoAuth(t, "set root", err)
		_, err = web.Set(paths.Item("app.json"), []byte("evil"), -1)
		wantNoAuth(t, "set item", err)
		_, err = web.Create(paths.Item("evil.conf"), []byte("evil"), 0, world)
		wantNoAuth(t, "create item", err)
		wantNoAuth(t, "delete item", web.Delete(paths.Item("db.conf"), -1))
		_, err = web.SetACL(paths.Root, world, -1)
		wantNoAuth(t, "set root ACL", err)
		_, err = web.Create(paths.Marker(), nil, 0, world)
		wantNoAuth(t, "create marker", err)
		_, err = web.Create(paths.HistoryNode(2), nil, 0, world)
		wantNoAuth(t, "create history entry", err)
		_, _, err = web.Get(paths.HistoryNode(1))
		wantNoAuth(t, "read history entry", err)
		_, _, err = web.Children(paths.Blobs())
		wantNoAuth(t, "list blobs (old contents)", err)
		_, _, err = web.Children(paths.Status())
		wantNoAuth(t, "list the fleet", err)
		ops := []any{&zk.SetDataRequest{Path: paths.Root, Data: []byte("x"), Version: -1}}
		res, err := web.Multi(ops...)
		err = zkclient.ExplainMulti(err, ops, res)
		if !errors.Is(err, zkclient.ErrPermission) || !strings.Contains(err.Error(), "write on /config") ||
			!strings.Contains(err.Error(), "lacks WRITE") {
			t.Errorf("multi as an agent = %v", err)
		}
	})

	t.Run("status nodes", func(t *testing.T) {
		acl, err := statusNodeACL(ctx, web, paths)
		if err != nil {
			t.Fatal(err)
		}
		if !aclmodel.SameACL(acl, pol.StatusNodeACL()) {
			t.Fatalf("ReadStatusNodeACL = %v; want %v", acl, pol.StatusNodeACL())
		}
		mine := paths.StatusNode("web1")
		_, err = web.Create(mine, []byte(`{"generation":1}`), zk.FlagEphemeral, acl)
		wantOK(t, "create own status node", err)
		_, err = web.Set(mine, []byte(`{"generation":2}`), -1)
		wantOK(t, "set own status node", err)
		got := aclOf(t, pub, mine)
		if !aclmodel.SameACL(got, []zk.ACL{pubID.ACL(zk.PermAll), webID.ACL(zk.PermAll)}) {
			t.Errorf("status node ACL = %s; want publisher and web1 ALL", pol.Describe(got))
		}
		// The publisher (confpush status, fleet) reads it.
		if data, _, err := pub.Get(mine); err != nil || string(data) != `{"generation":2}` {
			t.Errorf("publisher reads status = %q, %v", data, err)
		}
		// Another agent identity cannot read, set, re-ACL or delete it.
		_, _, err = db.Get(mine)
		wantNoAuth(t, "other agent reads it", err)
		_, err = db.Set(mine, []byte(`{"generation":999}`), -1)
		wantNoAuth(t, "other agent sets it", err)
		_, err = db.SetACL(mine, world, -1)
		wantNoAuth(t, "other agent sets its ACL", err)
		wantNoAuth(t, "other agent deletes it", db.Delete(mine, -1))
		// Nor may its owner delete it: DELETE would be on the parent, for
		// everyone's nodes. Closing the session removes it.
		wantNoAuth(t, "owner deletes it", web.Delete(mine, -1))
		// The other agent creates its own.
		dbACL, err := statusNodeACL(ctx, db, paths)
		wantOK(t, "db1 reads the status ACL", err)
		_, err = db.Create(paths.StatusNode("db1"), []byte("{}"), zk.FlagEphemeral, dbACL)
		wantOK(t, "db1 creates its status node", err)
		// A stranger cannot create one, nor create with "auth" at all.
		_, err = stranger.Create(paths.StatusNode("x"), nil, zk.FlagEphemeral, world)
		wantNoAuth(t, "stranger creates a status node", err)
		ms, err := access.Check(ctx, pub, paths, pol)
		wantOK(t, "check", err)
		for _, m := range ms {
			if m.Kind != access.KindAncestor {
				t.Errorf("mismatch after agents wrote status: %v", m)
			}
		}
	})

	t.Run("stranger reads nothing", func(t *testing.T) {
		_, _, err := stranger.Get(paths.Root)
		wantNoAuth(t, "get root", err)
		_, _, err = stranger.Children(paths.Root)
		wantNoAuth(t, "children of root", err)
		_, _, err = stranger.Get(paths.Item("app.json"))
		wantNoAuth(t, "get item", err)
		_, _, err = stranger.GetACL(paths.Root)
		wantNoAuth(t, "get root ACL", err)
		_, _, err = stranger.Get(paths.Base())
		wantNoAuth(t, "get metadata base", err)
		_, err = stranger.Set(paths.Root, []byte("x"), -1)
		wantNoAuth(t, "set root", err)
		_, err = statusNodeACL(ctx, stranger, paths)
		if !errors.Is(err, zkclient.ErrPermission) {
			t.Errorf("ReadStatusNodeACL as a stranger = %v", err)
		}
		err = access.Probe(ctx, stranger, paths, access.RoleAgent)
		if !errors.Is(err, zkclient.ErrPermission) || !strings.Contains(err.Error(), "read on /config") {
			t.Errorf("Probe as a stranger = %v", err)
		}
		// What ZooKeeper does not protect: exists and sync check no ACL,
		// so a stranger learns that the root exists and its Stat.
		ok, st, err := stranger.Exists(paths.Root)
		if err != nil || !ok || st.NumChildren != 2 {
			t.Errorf("stranger exists(root) = %v, %+v, %v; ZooKeeper is expected to answer it", ok, st, err)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		// Digest credentials are never refused at login: AddAuth succeeds
		// and the first request fails with NoAuth.
		bad := connectWith(t, c, "web1", "not-the-password-at-all")
		_, _, err := bad.Get(paths.Root)
		wantNoAuth(t, "get root with a wrong password", err)
		err = zkclient.Explain(err, paths.Root, zkclient.OpRead)
		want := "permission denied: read on /config (the ZooKeeper identity in use lacks READ; check the credentials file"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("explained = %q; want it to start with %q", err, want)
		}
		// A publisher with a wrong password cannot copy ACLs: Probe says so.
		badPub := connectWith(t, c, "publisher", "not-the-password-either")
		err = access.Probe(ctx, badPub, paths, access.RolePublisher)
		var pe *zkclient.PermissionError
		if !errors.As(err, &pe) || pe.Path != paths.Root || pe.Op != zkclient.OpReadACL {
			t.Errorf("Probe(publisher) with a wrong password = %v", err)
		}
	})

	t.Run("an agent identity without ADMIN cannot copy ACLs", func(t *testing.T) {
		// GetACL with READ only hides digests ("user:x"); copying that ACL
		// would lock everyone out, so ReadACL (with which a publisher
		// copies it) refuses.
		acl := aclOf(t, web, paths.Root)
		if !strings.Contains(pol.Describe(acl), "digest hidden") {
			t.Fatalf("ACL as read by an agent = %s; want digests hidden", pol.Describe(acl))
		}
		_, _, err := zkclient.ReadACL(ctx, web, paths.Root)
		if !errors.Is(err, zkclient.ErrPermission) || !strings.Contains(err.Error(), "ADMIN") {
			t.Errorf("ReadACL as an agent = %v", err)
		}
	})

	t.Run("publisher does everything", func(t *testing.T) {
		publishAs(t, ctx, pub, paths, 2, "new.conf")
		wantOK(t, "delete item", pub.Delete(paths.Item("db.conf"), -1))
		_, err := pub.Set(paths.Item("app.json"), []byte("v2"), -1)
		wantOK(t, "set item", err)
		wantOK(t, "gc history", pub.Delete(paths.HistoryNode(1), -1))
		_, err = pub.Create(paths.PublishingNode("p1"), nil, zk.FlagEphemeral, aclOf(t, pub, paths.History()))
		wantOK(t, "create liveness node", err)
		ms, err := access.Check(ctx, pub, paths, pol)
		wantOK(t, "check", err)
		for _, m := range ms {
			if m.Kind != access.KindAncestor {
				t.Errorf("mismatch after publishing: %v", m)
			}
		}
	})

	t.Run("policy read back from the root", func(t *testing.T) {
		got, err := access.PolicyFromRoot(ctx, pub, paths, pubID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Publisher != pubID || got.WorldReadable || len(got.Agents) != 2 ||
			!slices.Contains(got.Agents, webID) || !slices.Contains(got.Agents, dbID) {
			t.Errorf("PolicyFromRoot = %v", got)
		}
		_, err = access.PolicyFromRoot(ctx, web, paths, webID)
		if !errors.Is(err, zkclient.ErrPermission) {
			t.Errorf("PolicyFromRoot as an agent = %v; want a permission error (digests hidden)", err)
		}
	})

	t.Run("init is idempotent", func(t *testing.T) {
		rep, err := access.Init(ctx, pub, paths, pol)
		if err != nil || len(rep.Actions) != 0 {
			t.Errorf("second Init = %v, %v; want no action", rep.Actions, err)
		}
	})
}

// TestWorldReadable: the option lets anonymous sessions read the root and
// its items, and nothing else.
func TestWorldReadable(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	pol := access.Policy{Publisher: mustID(t, "publisher"), Agents: []aclmodel.Identity{mustID(t, "web1")}, WorldReadable: true}
	// A root under a parent Init creates: no advisory about "/" then.
	paths := layout.New("/zkconf-roots/web", layout.DefaultMeta)
	pub := connectAs(t, c, "publisher")
	rep, err := access.Init(ctx, pub, paths, pol)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Remaining) != 0 {
		t.Errorf("remaining = %v; want none under a parent Init created", rep.Remaining)
	}
	publishAs(t, ctx, pub, paths, 1, "app.json")
	anon := connectAs(t, c, "")
	_, _, err = anon.Get(paths.Root)
	wantOK(t, "anonymous get root", err)
	_, _, err = anon.Children(paths.Root)
	wantOK(t, "anonymous children of root", err)
	_, _, err = anon.Get(paths.Item("app.json"))
	wantOK(t, "anonymous get item", err)
	_, err = anon.Set(paths.Item("app.json"), []byte("x"), -1)
	wantNoAuth(t, "anonymous set item", err)
	_, err = anon.Create(paths.Item("x"), nil, 0, world)
	wantNoAuth(t, "anonymous create item", err)
	wantOK(t, "Probe(agent) as an anonymous reader", access.Probe(ctx, anon, paths, access.RoleAgent))
	_, _, err = anon.Get(paths.Base())
	wantNoAuth(t, "anonymous get base", err)
	_, _, err = anon.Get(paths.HistoryNode(1))
	wantNoAuth(t, "anonymous get history", err)
	_, _, err = anon.Children(paths.Status())
	wantNoAuth(t, "anonymous list status", err)
	_, _, err = anon.Children("/zkconf-roots")
	wantNoAuth(t, "anonymous list the root's parent Init created", err)
	// The parent protects the empty root from deletion by strangers.
	wantNoAuth(t, "anonymous delete of the root", anon.Delete(paths.Root, -1))
}

// TestCheckRepair loosens ACLs the way mistakes and old versions do and
// checks that Check reports each one and Repair restores the policy.
func TestCheckRepair(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	pubID, webID := mustID(t, "publisher"), mustID(t, "web1")
	pol := access.Policy{Publisher: pubID, Agents: []aclmodel.Identity{webID}}
	paths := layout.New("/cfg/web", "/meta")
	pub := connectAs(t, c, "publisher")
	if _, err := access.Init(ctx, pub, paths, pol); err != nil {
		t.Fatal(err)
	}
	publishAs(t, ctx, pub, paths, 1, "app.json", "other.conf")
	web := connectAs(t, c, "web1")
	stranger := connectAs(t, c, "")

	// Someone loosens an item and a history entry; a session squats an
	// agent's status name with a world-writable node; the status parent
	// loses its ACL; the status-ACL document is wiped.
	_, err := pub.SetACL(paths.Item("app.json"), world, -1)
	wantOK(t, "loosen item", err)
	_, err = stranger.Set(paths.Item("app.json"), []byte("tampered"), -1)
	wantOK(t, "a stranger writes the loosened item", err)
	_, err = pub.SetACL(paths.HistoryNode(1), append(pol.MetaACL(), zk.WorldACL(zk.PermRead)...), -1)
	wantOK(t, "loosen history entry", err)
	_, err = pub.Create(paths.StatusNode("web1"), []byte("{}"), zk.FlagEphemeral, world)
	wantOK(t, "squatted status node", err)
	_, err = pub.SetACL(paths.Status(), world, -1)
	wantOK(t, "loosen status parent", err)
	_, err = pub.Set(paths.Base(), nil, -1)
	wantOK(t, "wipe document", err)

	ms, err := access.Check(ctx, pub, paths, pol)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]access.Fix{
		paths.Item("app.json"):   access.FixSetACL,
		paths.HistoryNode(1):     access.FixSetACL,
		paths.StatusNode("web1"): access.FixDelete,
		paths.Status():           access.FixSetACL,
		paths.Base():             access.FixDocument,
	}
	got := map[string]access.Fix{}
	for _, m := range ms {
		if m.Kind == access.KindAncestor {
			continue
		}
		got[m.Path] = m.Fix
		if strings.Contains(m.Problem, pubID.Digest) || strings.Contains(m.Problem, webID.Digest) {
			t.Errorf("mismatch shows a digest: %v", m)
		}
	}
	for p, f := range want {
		if got[p] != f {
			t.Errorf("Check: %s: fix %q; want %q (all: %v)", p, got[p], f, ms)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Check found %v; want %v", got, want)
	}
	item := ms[slices.IndexFunc(ms, func(m access.Mismatch) bool { return m.Path == paths.Item("app.json") })]
	if !strings.Contains(item.Problem, "world:anyone:cdrwa") || !strings.Contains(item.Problem, "digest:web1:r (agent)") {
		t.Errorf("item mismatch problem = %q", item.Problem)
	}

	// The root's ACL is intact, so the policy can be read back from it.
	fromRoot, err := access.PolicyFromRoot(ctx, pub, paths, pubID)
	if err != nil || !aclmodel.SameACL(fromRoot.RootACL(), pol.RootACL()) {
		t.Fatalf("PolicyFromRoot = %v, %v", fromRoot, err)
	}
	rep, err := access.Repair(ctx, pub, paths, fromRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Actions) != len(want) {
		t.Errorf("Repair actions = %v; want %d", rep.Actions, len(want))
	}
	if len(rep.Remaining) != 0 {
		t.Errorf("remaining after repair: %v", rep.Remaining)
	}
	// Init created /cfg for the publisher alone: no advisory about it.
	if ms, err := access.Check(ctx, pub, paths, pol); err != nil || len(ms) != 0 {
		t.Errorf("Check after Repair = %v, %v; want nothing", ms, err)
	}
	_, err = stranger.Set(paths.Item("app.json"), []byte("again"), -1)
	wantNoAuth(t, "stranger writes the repaired item", err)
	_, _, err = web.Get(paths.Item("app.json"))
	wantOK(t, "agent reads the repaired item", err)
	if ok, _, _ := pub.Exists(paths.StatusNode("web1")); ok {
		t.Error("the world-writable status node survived Repair")
	}
	if _, err := statusNodeACL(ctx, web, paths); err != nil {
		t.Errorf("status-ACL document after Repair: %v", err)
	}

	t.Run("status node squatting is untrusted and repaired", func(t *testing.T) {
		db := mustID(t, "db1")
		pol := pol
		pol.Agents = append(slices.Clone(pol.Agents), db)
		if _, err := access.Init(ctx, pub, paths, pol); err != nil {
			t.Fatal(err)
		}
		// web1 creates a node named after db1 before db1 starts.
		acl, err := statusNodeACL(ctx, web, paths)
		wantOK(t, "read status ACL", err)
		_, err = web.Create(paths.StatusNode("db1"), []byte("{}"), zk.FlagEphemeral, acl)
		wantOK(t, "squat", err)
		ms, err := access.Check(ctx, pub, paths, pol)
		wantOK(t, "check", err)
		i := slices.IndexFunc(ms, func(m access.Mismatch) bool { return m.Path == paths.StatusNode("db1") })
		if i < 0 || ms[i].Fix != access.FixDelete || !strings.Contains(ms[i].Problem, "untrusted") {
			t.Fatalf("Check = %v; want %s untrusted, to delete", ms, paths.StatusNode("db1"))
		}
		if _, err := access.Repair(ctx, pub, paths, pol); err != nil {
			t.Fatal(err)
		}
		if ok, _, _ := pub.Exists(paths.StatusNode("db1")); ok {
			t.Error("the squatted status node survived Repair")
		}
	})

	t.Run("removing an agent identity", func(t *testing.T) {
		// Re-running init without web1 revokes it everywhere.
		rep, err := access.Init(ctx, pub, paths, access.Policy{Publisher: pubID})
		wantOK(t, "init without agents", err)
		if len(rep.Actions) == 0 {
			t.Error("no action")
		}
		_, _, err = web.Get(paths.Item("app.json"))
		wantNoAuth(t, "revoked agent reads an item", err)
		_, _, err = web.Get(paths.Root)
		wantNoAuth(t, "revoked agent reads the root", err)
	})
	t.Run("rotating the publisher's password", func(t *testing.T) {
		// A session may hold several identities: with the old and the new
		// credentials, Init moves every ACL (status nodes included) to the
		// new publisher identity.
		newPub := aclmodel.Identity{User: "publisher", Digest: aclmodel.Digest("publisher", "the-new-publisher-password")}
		pol := access.Policy{Publisher: newPub, Agents: []aclmodel.Identity{webID}}
		_, err := access.Init(ctx, pub, paths, access.Policy{Publisher: pubID, Agents: []aclmodel.Identity{webID}})
		wantOK(t, "init with web1 again", err)
		acl, err := statusNodeACL(ctx, web, paths)
		wantOK(t, "read status ACL", err)
		_, err = web.Create(paths.StatusNode("web1"), []byte("{}"), zk.FlagEphemeral, acl)
		wantOK(t, "web1 status node", err)
		both := connectAs(t, c, "publisher")
		wantOK(t, "add the new credentials", both.AddAuth("digest", []byte("publisher:the-new-publisher-password")))
		if _, err := access.Init(ctx, both, paths, pol); err != nil {
			t.Fatal(err)
		}
		fresh := connectWith(t, c, "publisher", "the-new-publisher-password")
		ms, err := access.Check(ctx, fresh, paths, pol)
		if err != nil || len(ms) != 0 {
			t.Errorf("Check as the new publisher = %v, %v", ms, err)
		}
		if _, _, err := fresh.Get(paths.StatusNode("web1")); err != nil {
			t.Errorf("new publisher reads a status node created before the rotation: %v", err)
		}
		// Ancestors the first Init made follow the new password.
		if got := aclOf(t, fresh, "/cfg"); !aclmodel.SameACL(got, pol.AncestorACL()) {
			t.Errorf("ancestor /cfg after rotation has %s", pol.Describe(got))
		}
		_, _, err = pub.Get(paths.Root)
		wantNoAuth(t, "old publisher credentials", err)
	})
}

// TestRepairCompareAndSwap: an ACL changed between Repair's read and its
// SetACL makes the SetACL fail with BadVersion; Repair reads again and
// still ends with the policy's ACL.
func TestRepairCompareAndSwap(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	pol := access.Policy{Publisher: mustID(t, "publisher"), Agents: []aclmodel.Identity{mustID(t, "web1")}}
	paths := layout.New("/config", layout.DefaultMeta)
	pub := connectAs(t, c, "publisher")
	if _, err := access.Init(ctx, pub, paths, pol); err != nil {
		t.Fatal(err)
	}
	publishAs(t, ctx, pub, paths, 1, "app.json")
	item := paths.Item("app.json")
	_, err := pub.SetACL(item, world, -1)
	wantOK(t, "loosen", err)
	other := connectAs(t, c, "publisher")
	interfered := 0
	rep, err := access.RepairWithHook(ctx, pub, paths, pol, func(p string) {
		if p == item && interfered == 0 {
			interfered++
			if _, err := other.SetACL(item, zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), -1); err != nil {
				t.Errorf("concurrent SetACL: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if interfered != 1 {
		t.Fatalf("hook ran %d times", interfered)
	}
	if got := aclOf(t, pub, item); !aclmodel.SameACL(got, pol.ItemACL()) {
		t.Errorf("item ACL after Repair = %s", pol.Describe(got))
	}
	if len(rep.Actions) != 1 || !strings.Contains(rep.Actions[0].Detail, "world:anyone:rwa ->") {
		t.Errorf("actions = %v; want one SetACL from the concurrently changed ACL", rep.Actions)
	}
}

// TestInitLocksDownAnOpenTree: a tree published before ACLs (everything
// world-writable) is locked down by Init.
func TestInitLocksDownAnOpenTree(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	paths := layout.New("/config", layout.DefaultMeta)
	old := connectAs(t, c, "")
	for _, p := range []string{"/zkconf", "/zkconf/roots", paths.Base(), paths.History(), paths.Blobs(), paths.Root} {
		if _, err := old.Create(p, nil, 0, world); err != nil {
			t.Fatal(err)
		}
	}
	publishAs(t, ctx, old, paths, 1, "app.json")
	if _, err := access.PolicyFromRoot(ctx, old, paths, mustID(t, "publisher")); !errors.Is(err, access.ErrForeignACL) ||
		!errors.Is(err, access.ErrOpenTree) || !strings.Contains(err.Error(), "no quota bounds what agents write") {
		t.Errorf("PolicyFromRoot of an open tree = %v; want ErrOpenTree (an ErrForeignACL) saying nothing is bounded", err)
	}
	if _, err := access.Check(ctx, old, paths, access.Policy{}); !errors.Is(err, access.ErrInvalidPolicy) {
		t.Errorf("Check with an empty policy = %v", err)
	}
	pol := access.Policy{Publisher: mustID(t, "publisher"), Agents: []aclmodel.Identity{mustID(t, "web1")}}
	pub := connectAs(t, c, "publisher")
	rep, err := access.Init(ctx, pub, paths, pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Remaining {
		if m.Kind != access.KindAncestor {
			t.Errorf("remaining: %v", m)
		}
	}
	for _, p := range []string{paths.Root, paths.Item("app.json"), paths.HistoryNode(1), paths.Base()} {
		_, _, err := old.Get(p)
		wantNoAuth(t, "stranger reads "+p, err)
	}
	// The metadata ancestors existed: Init leaves them as they were.
	if got := aclOf(t, pub, "/zkconf/roots"); !aclmodel.SameACL(got, world) {
		t.Errorf("existing ancestor ACL changed to %s", pol.Describe(got))
	}
	if ms, err := access.Check(ctx, pub, paths, pol); err != nil || slices.ContainsFunc(ms, access.Mismatch.Repairable) {
		t.Errorf("Check after Init = %v, %v", ms, err)
	}
}

// TestInitRefusals: a root squatted by someone else, and a root that does
// not exist for Check and Repair.
func TestInitRefusals(t *testing.T) {
	c := sharedZooKeeper.For(t)
	ctx := ctxT(t)
	pol := access.Policy{Publisher: mustID(t, "publisher")}
	pub := connectAs(t, c, "publisher")

	paths := layout.New("/nothing", layout.DefaultMeta)
	if _, err := access.Check(ctx, pub, paths, pol); !errors.Is(err, fleet.ErrNotInitialized) {
		t.Errorf("Check of a missing root = %v", err)
	}
	if _, err := access.Repair(ctx, pub, paths, pol); !errors.Is(err, fleet.ErrNotInitialized) {
		t.Errorf("Repair of a missing root = %v", err)
	}
	if ok, _, _ := pub.Exists(paths.Root); ok {
		t.Error("Repair created a root")
	}
	if _, err := statusNodeACL(ctx, pub, paths); !errors.Is(err, fleet.ErrNotInitialized) {
		t.Errorf("ReadStatusNodeACL of an uninitialized tree = %v", err)
	}

	// Before init, someone creates the root with an ACL of their own: even
	// one naming the publisher's user, with another password.
	squatter := connectWith(t, c, "publisher", "the-squatters-password")
	squatted := layout.New("/squatted", layout.DefaultMeta)
	fake := zk.DigestACL(zk.PermAll, "publisher", "the-squatters-password")
	if _, err := squatter.Create(squatted.Root, []byte(`{"format":1,"generation":1000}`), 0, append(fake, zk.WorldACL(zk.PermRead)...)); err != nil {
		t.Fatal(err)
	}
	_, err := access.Init(ctx, pub, squatted, pol)
	var pe *zkclient.PermissionError
	if !errors.As(err, &pe) || pe.Path != squatted.Root {
		t.Fatalf("Init over a squatted root = %v; want a permission error on %s", err, squatted.Root)
	}
	t.Logf("Init over a squatted root: %v", err)
}

// TestAuthFailed shows what zk.ErrAuthFailed is: the answer to an
// authentication scheme the server rejects, never to a wrong digest
// password. The server drops the connection; the client reconnects to the
// same session without those credentials.
func TestAuthFailed(t *testing.T) {
	c := sharedZooKeeper.For(t)
	conn, events, err := zk.Connect(c.Addrs(), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	waitSession := func() {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-events:
				if ev.State == zk.StateHasSession {
					return
				}
			case <-timeout:
				t.Fatalf("no session (state %v)", conn.State())
			}
		}
	}
	waitSession()
	sid := conn.SessionID()
	err = conn.AddAuth("no-such-scheme", []byte("x"))
	if !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("AddAuth with an unknown scheme = %v; want ErrAuthFailed", err)
	}
	if err := zkclient.Explain(err, "", "add auth"); !errors.Is(err, zkclient.ErrAuthFailed) {
		t.Errorf("explained = %v", err)
	}
	// The server dropped the connection; the client reconnects to the
	// same session, without the rejected credentials.
	waitSession()
	if _, _, err := conn.Get("/zookeeper"); err != nil {
		t.Errorf("after AuthFailed: %v", err)
	}
	if conn.SessionID() != sid {
		t.Errorf("session changed after AuthFailed: %x -> %x", sid, conn.SessionID())
	}
	// A malformed digest credential is not refused either.
	wantOK(t, "AddAuth digest without ':'", conn.AddAuth("digest", []byte("no-colon")))
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

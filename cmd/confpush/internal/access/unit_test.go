package access_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
)

func mustID(t *testing.T, user string) aclmodel.Identity {
	t.Helper()
	id, err := aclmodel.ParseIdentity(user + ":" + password(user))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// password is a test identity's password: long enough for ParseIdentity.
func password(user string) string { return "pw-of-" + user + "-0123456789" }

func TestPolicyACLs(t *testing.T) {
	pub, a1, a2 := mustID(t, "pub"), mustID(t, "web1"), mustID(t, "web2")
	p := access.Policy{Publisher: pub, Agents: []aclmodel.Identity{a1, a2, a1}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	paths := layout.New("/config/web", "/zkconf")
	acls := p.ACLs(paths)
	all := func(id aclmodel.Identity) zk.ACL { return id.ACL(zk.PermAll) }
	want := map[string][]zk.ACL{
		paths.Root:         {all(pub), a1.ACL(zk.PermRead), a2.ACL(zk.PermRead)},
		paths.Base():       {all(pub), a1.ACL(zk.PermRead), a2.ACL(zk.PermRead)},
		paths.History():    {all(pub)},
		paths.Blobs():      {all(pub)},
		paths.Publishing(): {all(pub)},
		paths.Election():   {all(pub)},
		paths.Status():     {all(pub), a1.ACL(zk.PermCreate), a2.ACL(zk.PermCreate)},
		paths.Agents():     {all(pub)},
	}
	if len(acls) != len(want) {
		t.Fatalf("ACLs has %d nodes; want %d", len(acls), len(want))
	}
	for path, w := range want {
		if got := acls[path]; len(got) != len(w) || !aclmodel.SameACL(got, w) {
			t.Errorf("ACL of %s = %v; want %v", path, got, w)
		}
	}
	if !aclmodel.SameACL(p.ItemACL(), p.RootACL()) {
		t.Error("items do not carry the root's ACL")
	}
	sn := p.StatusNodeACL()
	if len(sn) != 2 || sn[0] != all(pub) || sn[1].Scheme != "auth" || sn[1].Perms != zk.PermAll {
		t.Errorf("StatusNodeACL = %v", sn)
	}
	p.WorldReadable = true
	world := zk.WorldACL(zk.PermRead)[0]
	for path, acl := range p.ACLs(paths) {
		has := false
		for _, a := range acl {
			has = has || a == world
		}
		if has != (path == paths.Root) {
			t.Errorf("WorldReadable: world READ on %s = %v; want only on the root", path, has)
		}
	}
	if !strings.Contains(p.Describe(p.RootACL()), "world:anyone:r") {
		t.Errorf("Describe = %q", p.Describe(p.RootACL()))
	}
}

func TestPolicyValidate(t *testing.T) {
	pub, a1 := mustID(t, "pub"), mustID(t, "web1")
	other := aclmodel.Identity{User: "web1", Digest: aclmodel.Digest("web1", "another-password-1")}
	for name, p := range map[string]access.Policy{
		"no publisher":        {Agents: []aclmodel.Identity{a1}},
		"agent is publisher":  {Publisher: pub, Agents: []aclmodel.Identity{{User: "pub", Digest: a1.Digest}}},
		"two digests, a user": {Publisher: pub, Agents: []aclmodel.Identity{a1, other}},
		"bad digest":          {Publisher: pub, Agents: []aclmodel.Identity{{User: "x", Digest: "nope"}}},
	} {
		if err := p.Validate(); !errors.Is(err, access.ErrInvalidPolicy) {
			t.Errorf("%s: Validate = %v; want ErrInvalidPolicy", name, err)
		}
	}
	if err := (access.Policy{Publisher: pub}).Validate(); err != nil {
		t.Errorf("publisher only: %v", err)
	}
}

func TestDescribeHidesDigests(t *testing.T) {
	pub, a1 := mustID(t, "pub"), mustID(t, "web1")
	p := access.Policy{Publisher: pub, Agents: []aclmodel.Identity{a1}}
	stranger := aclmodel.Identity{User: "web1", Digest: aclmodel.Digest("web1", "guessed-password-9")}
	acl := []zk.ACL{pub.ACL(zk.PermAll), a1.ACL(zk.PermRead), stranger.ACL(zk.PermWrite),
		{Perms: zk.PermRead, Scheme: "digest", ID: "web2:x"}, zk.WorldACL(zk.PermAll)[0], a1.ACL(zk.PermCreate)}
	got := p.Describe(acl)
	for _, d := range []string{pub.Digest, a1.Digest, stranger.Digest} {
		if strings.Contains(got, d) {
			t.Fatalf("Describe shows a digest: %s", got)
		}
	}
	for _, want := range []string{"digest:pub:cdrwa (publisher)", "digest:web1:cr (agent)", "digest:web1:w (not in the policy)",
		"digest:web2:r (digest hidden: no ADMIN)", "world:anyone:cdrwa"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q; missing %q", got, want)
		}
	}
	if aclmodel.PermString(zk.PermAll) != "cdrwa" || aclmodel.PermString(0) != "-" {
		t.Error("PermString")
	}
}

func TestLayoutRefused(t *testing.T) {
	pol := access.Policy{Publisher: mustID(t, "pub")}
	for _, paths := range []layout.Paths{
		layout.New("/zkconf", "/zkconf"),
		layout.New("/config", "/config/meta"),
		layout.New("/zkconf/roots/x", "/zkconf"),
		layout.New("config", "/zkconf"),
	} {
		// Refused before any request: a nil connection is never used.
		if _, err := access.Check(context.Background(), nil, paths, pol); err == nil || strings.Contains(err.Error(), "nil ZooKeeper") {
			t.Errorf("Check of layout %+v = %v; want the layout refused", paths, err)
		}
	}
}

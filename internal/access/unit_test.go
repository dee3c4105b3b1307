package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/layout"
)

func TestDigestMatchesZooKeeper(t *testing.T) {
	for _, c := range []struct{ user, pass string }{
		{"publisher", "correct horse battery staple"},
		{"agent-web1", "ü:ñ with a colon"},
		{"a", ""},
	} {
		want := zk.DigestACL(zk.PermAll, c.user, c.pass)[0].ID
		if got := c.user + ":" + access.Digest(c.user, c.pass); got != want {
			t.Errorf("Digest(%q) = %q; zk.DigestACL says %q", c.user, got, want)
		}
	}
}

func TestParseIdentity(t *testing.T) {
	const pass = "s3cret-s3cret-s3cret"
	id, err := access.ParseIdentity("web1:" + pass + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if id.User != "web1" || id.Digest != access.Digest("web1", pass) {
		t.Fatalf("identity = %+v", id)
	}
	if s := fmt.Sprint(id, access.Policy{Publisher: id}); strings.Contains(s, id.Digest) || !strings.Contains(s, "digest:web1") {
		t.Fatalf("printing an identity shows %q; want its user, never its digest", s)
	}
	// A password may contain ':'; only the first one separates.
	if id, err := access.ParseIdentity("u:" + pass + ":x"); err != nil || id.Digest != access.Digest("u", pass+":x") {
		t.Fatalf("password with ':' = %+v, %v", id, err)
	}
	for _, bad := range []string{"", "nocolon" + pass, ":" + pass, "web1:", "web1:short-secret", "we b1:" + pass, "web\x001:" + pass} {
		_, err := access.ParseIdentity(bad)
		if !errors.Is(err, access.ErrInvalidIdentity) {
			t.Errorf("ParseIdentity(%q) = %v; want ErrInvalidIdentity", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseIdentity(%q) error quotes the password: %v", bad, err)
		}
	}
}

func TestParseDigestIdentity(t *testing.T) {
	d := access.Digest("web1", "whatever-it-is-long")
	id, err := access.ParseDigestIdentity("web1:" + d)
	if err != nil || id != (access.Identity{User: "web1", Digest: d}) {
		t.Fatalf("ParseDigestIdentity = %+v, %v", id, err)
	}
	for _, bad := range []string{"web1", "web1:" + d[:27], "web1:not base64 at all!", ":" + d, "web1:" + "QUJD"} {
		if _, err := access.ParseDigestIdentity(bad); !errors.Is(err, access.ErrInvalidIdentity) {
			t.Errorf("ParseDigestIdentity(%q) = %v; want ErrInvalidIdentity", bad, err)
		}
	}
	if _, err := access.IdentityFromDigest("a:b", d); !errors.Is(err, access.ErrInvalidIdentity) {
		t.Errorf("user with ':' = %v", err)
	}
}

func mustID(t *testing.T, user string) access.Identity {
	t.Helper()
	id, err := access.ParseIdentity(user + ":" + password(user))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// password is a test identity's password: long enough for ParseIdentity.
func password(user string) string { return "pw-of-" + user + "-0123456789" }

func TestPolicyACLs(t *testing.T) {
	pub, a1, a2 := mustID(t, "pub"), mustID(t, "web1"), mustID(t, "web2")
	p := access.Policy{Publisher: pub, Agents: []access.Identity{a1, a2, a1}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	paths := layout.New("/config/web", "/zkconf")
	acls := p.ACLs(paths)
	all := func(id access.Identity) zk.ACL { return id.ACL(zk.PermAll) }
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
		if got := acls[path]; len(got) != len(w) || !access.SameACL(got, w) {
			t.Errorf("ACL of %s = %v; want %v", path, got, w)
		}
	}
	if !access.SameACL(p.ItemACL(), p.RootACL()) {
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
	other := access.Identity{User: "web1", Digest: access.Digest("web1", "another-password-1")}
	for name, p := range map[string]access.Policy{
		"no publisher":        {Agents: []access.Identity{a1}},
		"agent is publisher":  {Publisher: pub, Agents: []access.Identity{{User: "pub", Digest: a1.Digest}}},
		"two digests, a user": {Publisher: pub, Agents: []access.Identity{a1, other}},
		"bad digest":          {Publisher: pub, Agents: []access.Identity{{User: "x", Digest: "nope"}}},
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
	p := access.Policy{Publisher: pub, Agents: []access.Identity{a1}}
	stranger := access.Identity{User: "web1", Digest: access.Digest("web1", "guessed-password-9")}
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
	if access.PermString(zk.PermAll) != "cdrwa" || access.PermString(0) != "-" {
		t.Error("PermString")
	}
}

func TestSameACL(t *testing.T) {
	a := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	b := zk.ACL{Perms: zk.PermWrite, Scheme: "world", ID: "anyone"}
	ab := zk.ACL{Perms: zk.PermRead | zk.PermWrite, Scheme: "world", ID: "anyone"}
	none := zk.ACL{Perms: 0, Scheme: "digest", ID: "x:y"}
	if !access.SameACL([]zk.ACL{a, b}, []zk.ACL{ab}) || !access.SameACL([]zk.ACL{ab, none}, []zk.ACL{b, a, a}) {
		t.Error("SameACL must compare what is granted, not the entries")
	}
	if access.SameACL([]zk.ACL{a}, []zk.ACL{ab}) {
		t.Error("SameACL ignores a permission")
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

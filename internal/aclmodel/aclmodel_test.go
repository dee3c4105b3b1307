package aclmodel

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestDigestMatchesZooKeeper(t *testing.T) {
	for _, c := range []struct{ user, pass string }{
		{"publisher", "correct horse battery staple"},
		{"agent-web1", "ü:ñ with a colon"},
		{"a", ""},
	} {
		want := zk.DigestACL(zk.PermAll, c.user, c.pass)[0].ID
		if got := c.user + ":" + Digest(c.user, c.pass); got != want {
			t.Errorf("Digest(%q) = %q; zk.DigestACL says %q", c.user, got, want)
		}
	}
}

func TestParseIdentity(t *testing.T) {
	const pass = "s3cret-s3cret-s3cret"
	id, err := ParseIdentity("web1:" + pass + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if id.User != "web1" || id.Digest != Digest("web1", pass) {
		t.Fatalf("identity = %+v", id)
	}
	if s := fmt.Sprint(id, Roles{Publisher: id}); strings.Contains(s, id.Digest) || !strings.Contains(s, "digest:web1") {
		t.Fatalf("printing an identity shows %q; want its user, never its digest", s)
	}
	// A password may contain ':'; only the first one separates.
	if id, err := ParseIdentity("u:" + pass + ":x"); err != nil || id.Digest != Digest("u", pass+":x") {
		t.Fatalf("password with ':' = %+v, %v", id, err)
	}
	for _, bad := range []string{"", "nocolon" + pass, ":" + pass, "web1:", "web1:short-secret", "we b1:" + pass, "web\x001:" + pass} {
		_, err := ParseIdentity(bad)
		if !errors.Is(err, ErrInvalidIdentity) {
			t.Errorf("ParseIdentity(%q) = %v; want ErrInvalidIdentity", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseIdentity(%q) error quotes the password: %v", bad, err)
		}
	}
}

func TestParseDigestIdentity(t *testing.T) {
	d := Digest("web1", "whatever-it-is-long")
	id, err := ParseDigestIdentity("web1:" + d)
	if err != nil || id != (Identity{User: "web1", Digest: d}) {
		t.Fatalf("ParseDigestIdentity = %+v, %v", id, err)
	}
	for _, bad := range []string{"web1", "web1:" + d[:27], "web1:not base64 at all!", ":" + d, "web1:" + "QUJD"} {
		if _, err := ParseDigestIdentity(bad); !errors.Is(err, ErrInvalidIdentity) {
			t.Errorf("ParseDigestIdentity(%q) = %v; want ErrInvalidIdentity", bad, err)
		}
	}
	if _, err := IdentityFromDigest("a:b", d); !errors.Is(err, ErrInvalidIdentity) {
		t.Errorf("user with ':' = %v", err)
	}
}

func TestSameACL(t *testing.T) {
	a := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	b := zk.ACL{Perms: zk.PermWrite, Scheme: "world", ID: "anyone"}
	ab := zk.ACL{Perms: zk.PermRead | zk.PermWrite, Scheme: "world", ID: "anyone"}
	none := zk.ACL{Perms: 0, Scheme: "digest", ID: "x:y"}
	if !SameACL([]zk.ACL{a, b}, []zk.ACL{ab}) || !SameACL([]zk.ACL{ab, none}, []zk.ACL{b, a, a}) {
		t.Error("SameACL must compare what is granted, not the entries")
	}
	if SameACL([]zk.ACL{a}, []zk.ACL{ab}) {
		t.Error("SameACL ignores a permission")
	}
}

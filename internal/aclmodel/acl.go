package aclmodel

import (
	"maps"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Key is an ACL entry's id: its scheme and the id within it.
type Key struct{ Scheme, ID string }

// World is ZooKeeper's id for everyone.
var World = Key{"world", "anyone"}

// Effective reduces an ACL to what ZooKeeper grants: the union of the
// permissions of every entry naming the same id, entries granting nothing
// dropped. Order and duplicates do not matter to the server.
func Effective(acl []zk.ACL) map[Key]int32 {
	m := make(map[Key]int32, len(acl))
	for _, a := range acl {
		if a.Perms&zk.PermAll == 0 {
			continue
		}
		m[Key{a.Scheme, a.ID}] |= a.Perms & zk.PermAll
	}
	return m
}

// SameACL reports whether two ACLs grant the same permissions to the same
// ids, whatever their order or duplicates.
func SameACL(a, b []zk.ACL) bool { return maps.Equal(Effective(a), Effective(b)) }

// PermString renders permissions the way zkCli does: a subset of "cdrwa"
// (create, delete, read, write, admin).
func PermString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.c)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// UserOf is the user part of a digest id ("user:hash").
func UserOf(id string) string {
	u, _, _ := strings.Cut(id, ":")
	return u
}

// Redacted reports whether acl was returned by GetACL to a session without
// ADMIN on the node: ZooKeeper then replaces every digest hash with "x".
func Redacted(acl []zk.ACL) bool {
	for _, a := range acl {
		if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
			return true
		}
	}
	return false
}

// Roles are the identities of an access policy, by role.
type Roles struct {
	Publisher Identity
	Agents    []Identity
}

// Describe renders an ACL for people and logs without any digest: each
// digest entry is named by its user and its role ("publisher", "agent"),
// or flagged as not in the policy (another password, or an identity the
// policy does not name). Entries are sorted.
func (r Roles) Describe(acl []zk.ACL) string {
	known := map[string]string{r.Publisher.ID(): "publisher"}
	for _, a := range r.Agents {
		if _, ok := known[a.ID()]; !ok {
			known[a.ID()] = "agent"
		}
	}
	eff := Effective(acl)
	keys := slices.SortedFunc(maps.Keys(eff), func(a, b Key) int {
		return strings.Compare(a.Scheme+":"+a.ID, b.Scheme+":"+b.ID)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		perms := PermString(eff[k])
		switch {
		case k.Scheme == "digest":
			role, ok := known[k.ID]
			switch {
			case ok:
			case strings.HasSuffix(k.ID, ":x"):
				role = "digest hidden: no ADMIN"
			default:
				role = "not in the policy"
			}
			parts = append(parts, "digest:"+UserOf(k.ID)+":"+perms+" ("+role+")")
		default:
			parts = append(parts, k.Scheme+":"+k.ID+":"+perms)
		}
	}
	if len(parts) == 0 {
		return "(nobody)"
	}
	return strings.Join(parts, ", ")
}

package access

import (
	"maps"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

type aclKey struct{ scheme, id string }

// effective reduces an ACL to what ZooKeeper grants: the union of the
// permissions of every entry naming the same id, entries granting nothing
// dropped. Order and duplicates do not matter to the server.
func effective(acl []zk.ACL) map[aclKey]int32 {
	m := make(map[aclKey]int32, len(acl))
	for _, a := range acl {
		if a.Perms&zk.PermAll == 0 {
			continue
		}
		m[aclKey{a.Scheme, a.ID}] |= a.Perms & zk.PermAll
	}
	return m
}

// SameACL reports whether two ACLs grant the same permissions to the same
// ids, whatever their order or duplicates.
func SameACL(a, b []zk.ACL) bool { return maps.Equal(effective(a), effective(b)) }

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

// userOf is the user part of a digest id ("user:hash").
func userOf(id string) string {
	u, _, _ := strings.Cut(id, ":")
	return u
}

// redacted reports whether acl was returned by GetACL to a session without
// ADMIN on the node: ZooKeeper then replaces every digest hash with "x".
func redacted(acl []zk.ACL) bool {
	for _, a := range acl {
		if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
			return true
		}
	}
	return false
}

// Describe renders an ACL for people and logs without any digest: each
// digest entry is named by its user and its role in the policy
// ("publisher", "agent"), or flagged as not in the policy (another
// password, or an identity the policy does not name). Entries are sorted.
func (p Policy) Describe(acl []zk.ACL) string {
	known := map[string]string{p.Publisher.ID(): "publisher"}
	for _, a := range p.Agents {
		if _, ok := known[a.ID()]; !ok {
			known[a.ID()] = "agent"
		}
	}
	eff := effective(acl)
	keys := slices.SortedFunc(maps.Keys(eff), func(a, b aclKey) int {
		return strings.Compare(a.scheme+":"+a.id, b.scheme+":"+b.id)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		perms := PermString(eff[k])
		switch {
		case k.scheme == "digest":
			role, ok := known[k.id]
			switch {
			case ok:
			case strings.HasSuffix(k.id, ":x"):
				role = "digest hidden: no ADMIN"
			default:
				role = "not in the policy"
			}
			parts = append(parts, "digest:"+userOf(k.id)+":"+perms+" ("+role+")")
		default:
			parts = append(parts, k.scheme+":"+k.id+":"+perms)
		}
	}
	if len(parts) == 0 {
		return "(nobody)"
	}
	return strings.Join(parts, ", ")
}

package aclmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// statusDocFormat is the version of the status-ACL document.
const statusDocFormat = 1

// statusDoc is the metadata base's data: what an agent adds to its status
// node's ACL besides its own ids.
type statusDoc struct {
	Format        int      `json:"format"`
	StatusNodeACL []docACL `json:"status_node_acl"`
}

type docACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  int32  `json:"perms"`
}

// StatusDocument is the status-ACL document `confpush init` writes on the
// metadata base: what an agent adds to its status node's ACL besides its
// own ids (the publisher's ALL).
func StatusDocument(publisher Identity) []byte {
	a := publisher.ACL(zk.PermAll)
	b, err := json.Marshal(statusDoc{Format: statusDocFormat, StatusNodeACL: []docACL{{a.Scheme, a.ID, a.Perms}}})
	if err != nil {
		panic(err) // cannot happen: plain strings and ints
	}
	return b
}

// ParseStatusDoc decodes a status-ACL document into ACL entries. Only
// digest entries are accepted: the document may only name identities.
func ParseStatusDoc(b []byte) ([]zk.ACL, error) {
	var d statusDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("status-ACL document: %w", err)
	}
	if d.Format != statusDocFormat {
		return nil, fmt.Errorf("status-ACL document format %d: this version understands %d", d.Format, statusDocFormat)
	}
	if len(d.StatusNodeACL) == 0 {
		return nil, errors.New("status-ACL document names nobody")
	}
	out := make([]zk.ACL, 0, len(d.StatusNodeACL))
	for _, e := range d.StatusNodeACL {
		if e.Scheme != "digest" || e.Perms <= 0 || e.Perms&^zk.PermAll != 0 {
			return nil, fmt.Errorf("status-ACL document: entry %s:%s (perms %d) is not a digest identity with valid permissions",
				e.Scheme, UserOf(e.ID), e.Perms)
		}
		user, digest, _ := strings.Cut(e.ID, ":")
		if _, err := IdentityFromDigest(user, digest); err != nil {
			return nil, fmt.Errorf("status-ACL document: %w", err)
		}
		out = append(out, zk.ACL{Perms: e.Perms, Scheme: e.Scheme, ID: e.ID})
	}
	return out, nil
}

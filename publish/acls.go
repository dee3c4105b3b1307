package publish

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// inherited are the ACLs a publisher gives the nodes it creates, copied
// from the live tree so that publishing needs no knowledge of the access
// policy and keeps working, unchanged, after confpush init or a repair.
type inherited struct {
	// Item is the root's ACL: for items, the marker, and the root itself
	// when the publisher has to create it.
	Item []zk.ACL
	// Meta is the history parent's ACL: for history entries, blobs and
	// publishing (liveness) nodes, and metadata parents the publisher has
	// to create.
	Meta []zk.ACL
	// ItemFrom and MetaFrom identify the ACLs copied: the root's and the
	// history parent's node and ACL version as read (zero where the node
	// did not exist and the fallback was used). A caller holding an
	// Inherited may reuse it as long as both nodes still show the same.
	ItemFrom, MetaFrom aclVersion
}

// aclVersion identifies one version of a node's ACL: the node (its
// creation zxid, so a node deleted and created again differs) and the
// ACL's version. The zero value is "no such node".
type aclVersion struct {
	Czxid    int64
	Aversion int32
}

// aclVersionOf returns the aclVersion a stat shows; nil is the zero value.
func aclVersionOf(st *zk.Stat) aclVersion {
	if st == nil {
		return aclVersion{}
	}
	return aclVersion{Czxid: st.Czxid, Aversion: st.Aversion}
}

// inheritedACLs reads the ACLs of the root and of the history parent,
// once per publish. A node that does not exist (a tree never initialized)
// yields fallback, the publisher's configured ACL. The session must have
// ADMIN on both: without it ZooKeeper hides the digests ("user:x") and the
// ACL cannot be copied, which is a *zkclient.PermissionError.
func inheritedACLs(ctx context.Context, conn *zk.Conn, paths layout.Paths, fallback []zk.ACL) (inherited, error) {
	// Both reads are sent at once: go-zookeeper pipelines concurrent
	// requests on one connection, so this costs one round trip on the
	// publish path instead of two.
	paths2 := [2]string{paths.Root, paths.History()}
	var acls [2][]zk.ACL
	var from [2]aclVersion
	var errs [2]error
	var wg sync.WaitGroup
	for i := range paths2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acl, st, err := zkclient.ReadACL(ctx, conn, paths2[i])
			if errors.Is(err, zk.ErrNoNode) {
				acl, st, err = fallback, nil, nil
			}
			acls[i], from[i], errs[i] = acl, aclVersionOf(st), err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return inherited{}, err
		}
	}
	return inherited{Item: acls[0], Meta: acls[1], ItemFrom: from[0], MetaFrom: from[1]}, nil
}

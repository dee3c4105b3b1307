package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// ErrNotInitialized means the root's access control was never set up
// (confpush init): its metadata base, or the status-ACL document on it, is
// missing. Agents then keep their configured ACL, and readers judge status
// nodes in open mode.
var ErrNotInitialized = errors.New("access control not initialized (run confpush init)")

// StatusNodeACL returns the ACL an agent gives its status node: the
// entries of the status-ACL document confpush init writes on the root's
// metadata base (the publisher's ALL), plus ALL for the agent session's
// own ids (zk.AuthACL). The session must be authenticated: the server
// refuses the "auth" scheme otherwise (InvalidACL).
//
// A metadata base that is missing or holds no document is
// ErrNotInitialized: the tree has no access control. A
// *zkclient.PermissionError means the agent identity may not read the
// base: a wrong password or an identity the policy does not name.
func (f *Fleet) StatusNodeACL(ctx context.Context) ([]zk.ACL, error) {
	acl, err := readStatusDoc(ctx, f.cl.Conn(), f.paths)
	if err != nil {
		return nil, err
	}
	return append(acl, zk.AuthACL(zk.PermAll)...), nil
}

// readStatusDoc reads the status-ACL document's entries (see
// StatusNodeACL for the errors).
func readStatusDoc(ctx context.Context, conn *zk.Conn, paths layout.Paths) ([]zk.ACL, error) {
	base := paths.Base()
	data, err := zkclient.Call(ctx, func() ([]byte, error) {
		b, _, err := conn.Get(base)
		return b, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, fmt.Errorf("%s does not exist: %w", base, ErrNotInitialized)
	case zkclient.IsDenied(err):
		return nil, zkclient.Explain(err, base, zkclient.OpRead)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", zkclient.OpRead, base, err)
	case len(data) == 0:
		return nil, fmt.Errorf("%s holds no status-ACL document: %w", base, ErrNotInitialized)
	}
	acl, err := aclmodel.ParseStatusDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	return acl, nil
}

// readTrust reads what a reader needs to judge status and registry nodes:
// the status-ACL document on the metadata base (missing or empty: open
// mode, the zero Trust) and the agent identities from the root's ACL. The
// session needs ADMIN on the root to see the digests (the publisher has
// it); otherwise the error is a *zkclient.PermissionError: a reader that
// cannot verify must not count anything.
func readTrust(ctx context.Context, conn *zk.Conn, paths layout.Paths) (aclmodel.Trust, error) {
	doc, err := readStatusDoc(ctx, conn, paths)
	if errors.Is(err, ErrNotInitialized) {
		return aclmodel.Trust{}, nil
	}
	if err != nil {
		return aclmodel.Trust{}, err
	}
	acl, _, err := zkclient.ReadACL(ctx, conn, paths.Root)
	if err != nil {
		return aclmodel.Trust{}, fmt.Errorf("read the agent identities: %w", err)
	}
	return aclmodel.TrustFromTree(doc, acl), nil
}

package zkclient

import (
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// Op is a ZooKeeper operation, as named in permission errors. Each needs
// one permission, on the node itself or, for create and delete, on its
// parent.
type Op string

// The operations Explain knows.
const (
	OpRead    Op = "read"     // Get, GetW: READ on the node
	OpList    Op = "list"     // Children, ChildrenW: READ on the node
	OpWrite   Op = "write"    // Set: WRITE on the node
	OpCreate  Op = "create"   // Create: CREATE on the parent
	OpDelete  Op = "delete"   // Delete: DELETE on the parent
	OpCheck   Op = "check"    // CheckVersion in a Multi: READ on the node
	OpReadACL Op = "read ACL" // GetACL: READ or ADMIN (ADMIN to see digests)
	OpSetACL  Op = "set ACL"  // SetACL: ADMIN on the node
)

// need returns the permission op needs and the node it is checked on.
func (op Op) need(p string) (perm, node string) {
	switch op {
	case OpRead, OpList, OpCheck:
		return "READ", p
	case OpWrite:
		return "WRITE", p
	case OpCreate:
		return "CREATE", path.Dir(p)
	case OpDelete:
		return "DELETE", path.Dir(p)
	case OpReadACL:
		return "READ or ADMIN", p
	case OpSetACL:
		return "ADMIN", p
	}
	return "the permission " + string(op) + " needs", p
}

// The error classes (see the package documentation, "Errors"). Each is a
// sentinel that errors.Is matches, whatever package returned the error.
var (
	// ErrPermission matches every request ZooKeeper refused with NoAuth,
	// explained as a *PermissionError naming the operation, the node and
	// the permission missing. Fatal for that request: retrying cannot
	// change the answer. A wrong password looks exactly like this:
	// ZooKeeper accepts any digest credentials at login and only compares
	// them with ACLs.
	ErrPermission = errors.New("permission denied")
	// ErrAuthFailed means the server refused the credentials: a session
	// that ended in the AuthFailed state (Session.WaitConnected), or a
	// request answered with an authentication failure (*AuthError). Fatal,
	// never retried.
	ErrAuthFailed = errors.New("ZooKeeper authentication failed")
	// ErrQuotaExceeded matches every write ZooKeeper refused because an
	// enforced quota (a server run with zookeeper.enforceQuota=true) on the
	// node or an ancestor is full (*QuotaError). The same write cannot
	// succeed until the node shrinks, nodes are removed or the quota
	// changes (docs/security.md, "Quotas").
	ErrQuotaExceeded = errors.New("ZooKeeper quota exceeded")
	// ErrSessionExpired is the client's session-expiry error
	// (zk.ErrSessionExpired itself, so that the client's own errors match
	// it): the session is gone, with its watches and its ephemeral nodes.
	// Errors of zkconf caused by an expiry wrap it.
	ErrSessionExpired = zk.ErrSessionExpired
)

// PermissionError is a request ZooKeeper refused with NoAuth: the identity
// in use lacks Perm on Node. It is fatal: retrying or reconnecting cannot
// change the answer. errors.Is(err, ErrPermission) and
// errors.Is(err, zk.ErrNoAuth) both hold.
//
// A wrong password looks exactly like this: ZooKeeper accepts any digest
// credentials at login and only compares them with ACLs.
type PermissionError struct {
	// Op is the operation refused.
	Op Op
	// Path is the node the request named.
	Path string
	// Node is the node whose ACL refused it: Path, or its parent for
	// create and delete.
	Node string
	// Perm is the permission missing ("READ", "CREATE", ...).
	Perm string
	// Err is the client's error, zk.ErrNoAuth.
	Err error
}

// Error names the operation, the node and the permission missing.
func (e *PermissionError) Error() string {
	on := ""
	if e.Node != e.Path {
		on = " on " + e.Node
	}
	return fmt.Sprintf("permission denied: %s on %s (the ZooKeeper identity in use lacks %s%s; "+
		"check the credentials file: a wrong password shows up the same way)", e.Op, e.Path, e.Perm, on)
}

// Unwrap returns the client's error.
func (e *PermissionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPermission) true.
func (e *PermissionError) Is(target error) bool { return target == ErrPermission }

// AuthError is zk.ErrAuthFailed explained: the server rejected an
// authentication packet. With the digest scheme that never happens (any
// "user:password" is accepted and only compared with ACLs later); it
// means an unknown scheme, or a SASL or certificate login the server
// refused. The server also drops the connection; the client reconnects to
// the same session without those credentials. Fatal: never retried.
type AuthError struct {
	Op   Op
	Path string
	Err  error
}

// Error says that ZooKeeper rejected the credentials, and where.
func (e *AuthError) Error() string {
	where := ""
	if e.Path != "" {
		where = fmt.Sprintf(" (%s on %s)", e.Op, e.Path)
	}
	return "authentication rejected by ZooKeeper" + where +
		": the credentials' scheme is unknown to the server or its login failed; check the credentials file"
}

// Unwrap returns the client's error.
func (e *AuthError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAuthFailed) true.
func (e *AuthError) Is(target error) bool { return target == ErrAuthFailed }

// QuotaError is a write ZooKeeper refused with QuotaExceeded (code -125,
// which go-zookeeper reports as "unknown error: -125"): an enforced quota
// on Path or an ancestor is full. The same write cannot succeed until the
// node shrinks, nodes go or the quota changes. errors.Is(err,
// ErrQuotaExceeded) holds.
type QuotaError struct {
	// Op is the operation refused (create or write).
	Op Op
	// Path is the node the request named.
	Path string
	// Err is the client's error.
	Err error
}

// Error names the operation and the node, and what a quota bounds.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s on %s (ZooKeeper's enforced quota on this node or an ancestor is full: "+
		"too many nodes, or too many bytes; 'confpush acl' shows the quotas zkconf sets, docs/security.md \"Quotas\")", e.Op, e.Path)
}

// Unwrap returns the client's error.
func (e *QuotaError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrQuotaExceeded) true.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// Explain turns zk.ErrNoAuth from op on path into a *PermissionError
// naming the node and the permission missing, zk.ErrAuthFailed into an
// *AuthError and ZooKeeper's QuotaExceeded into a *QuotaError. Other
// errors (and nil, and errors already explained) are returned unchanged.
// Callers must treat all three as final for that request: never retry it
// unchanged.
func Explain(err error, path string, op Op) error {
	var pe *PermissionError
	var ae *AuthError
	var qe *QuotaError
	switch {
	case err == nil, errors.As(err, &pe), errors.As(err, &ae), errors.As(err, &qe):
		return err
	case errors.Is(err, zk.ErrNoAuth):
		perm, node := op.need(path)
		return &PermissionError{Op: op, Path: path, Node: node, Perm: perm, Err: err}
	case errors.Is(err, zk.ErrAuthFailed):
		return &AuthError{Op: op, Path: path, Err: err}
	case IsQuotaExceeded(err):
		return &QuotaError{Op: op, Path: path, Err: err}
	}
	return err
}

// ExplainMulti explains the error of conn.Multi(ops...): on NoAuth (or
// QuotaExceeded) it finds the refused operation in the responses and
// explains it with its path. ops are the pointers passed to Multi.
func ExplainMulti(err error, ops []any, res []zk.MultiResponse) error {
	quota := IsQuotaExceeded(err)
	if !errors.Is(err, zk.ErrNoAuth) && !errors.Is(err, zk.ErrAuthFailed) && !quota {
		return err
	}
	for i, r := range res {
		if i >= len(ops) {
			continue
		}
		if quota && !IsQuotaExceeded(r.Error) || !quota && !errors.Is(r.Error, zk.ErrNoAuth) {
			continue
		}
		switch o := ops[i].(type) {
		case *zk.CreateRequest:
			return Explain(err, o.Path, OpCreate)
		case *zk.SetDataRequest:
			return Explain(err, o.Path, OpWrite)
		case *zk.DeleteRequest:
			return Explain(err, o.Path, OpDelete)
		case *zk.CheckVersionRequest:
			return Explain(err, o.Path, OpCheck)
		}
	}
	return Explain(err, "(a node of the transaction)", "transaction")
}

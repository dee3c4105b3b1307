package aclmodel

import (
	"crypto/sha1" // #nosec G505 -- ZooKeeper's digest scheme is defined as SHA-1; not our choice.
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/go-zookeeper/zk"
)

// MinPasswordLen is the shortest password ParseIdentity accepts. A
// ZooKeeper digest is an unsalted SHA-1 of "user:password" and digests are
// visible to other identities by design (the publisher's to every agent
// through the status-ACL document, every agent's to the publisher), so a
// short or guessable password could be recovered offline. Use random
// passwords: head -c 24 /dev/urandom | base64.
const MinPasswordLen = 16

// Identity is a ZooKeeper digest identity: a user name and the digest of
// its password. It never holds the password itself.
type Identity struct {
	// User is the digest user name. It cannot contain ':'.
	User string
	// Digest is base64(sha1("user:password")), as ZooKeeper stores it.
	Digest string
}

// Digest returns ZooKeeper's digest of user's password, the same value
// zk.DigestACL and the server's DigestAuthenticationProvider compute:
// base64(sha1("user:password")).
func Digest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password)) // #nosec G401 -- see import.
	return base64.StdEncoding.EncodeToString(sum[:])
}

// ParseIdentity parses credentials "user:password" (the content of a
// credentials file, as zkclient.LoadAuth returns it) into an Identity. The
// password is hashed at once and never kept; errors never quote it. It is
// refused when shorter than MinPasswordLen.
func ParseIdentity(s string) (Identity, error) {
	user, pass, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Identity{}, fmt.Errorf("%w: credentials must be \"user:password\"", ErrInvalidIdentity)
	}
	if err := checkUser(user); err != nil {
		return Identity{}, err
	}
	if pass == "" {
		return Identity{}, fmt.Errorf("%w: identity %q has an empty password", ErrInvalidIdentity, user)
	}
	if len(pass) < MinPasswordLen {
		return Identity{}, fmt.Errorf("%w: the password of identity %q is shorter than %d characters; "+
			"ZooKeeper digests are unsalted SHA-1 and other identities can read them: use a random password",
			ErrInvalidIdentity, user, MinPasswordLen)
	}
	return Identity{User: user, Digest: Digest(user, pass)}, nil
}

// ParseDigestIdentity parses "user:digest", a precomputed digest such as
// `confpush digest` prints, so that confpush init never needs an agent's
// password.
func ParseDigestIdentity(s string) (Identity, error) {
	user, digest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Identity{}, fmt.Errorf("%w: a digest identity must be \"user:digest\"", ErrInvalidIdentity)
	}
	return IdentityFromDigest(user, digest)
}

// IdentityFromDigest returns the identity of user with a precomputed
// digest (base64 of a 20-byte SHA-1, as Digest returns).
func IdentityFromDigest(user, digest string) (Identity, error) {
	id := Identity{User: user, Digest: digest}
	if err := id.Validate(); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// ErrInvalidIdentity marks credentials or digests that cannot form an
// identity.
var ErrInvalidIdentity = errors.New("invalid identity")

// Validate checks the user name and that Digest is a SHA-1 digest.
func (id Identity) Validate() error {
	if err := checkUser(id.User); err != nil {
		return err
	}
	if !validDigest(id.Digest) {
		return fmt.Errorf("%w: the digest of identity %q is not base64 of a SHA-1 (28 characters)", ErrInvalidIdentity, id.User)
	}
	return nil
}

// ID is the identity's ZooKeeper id in the digest scheme, "user:digest".
func (id Identity) ID() string { return id.User + ":" + id.Digest }

// String names the identity without its digest, so that printing or
// logging an Identity (or a Policy) never shows a hash.
func (id Identity) String() string { return "digest:" + id.User }

// ACL is a one-entry ACL granting perms to the identity.
func (id Identity) ACL(perms int32) zk.ACL {
	return zk.ACL{Perms: perms, Scheme: "digest", ID: id.ID()}
}

func checkUser(user string) error {
	switch {
	case user == "":
		return fmt.Errorf("%w: empty user name", ErrInvalidIdentity)
	case strings.ContainsRune(user, ':'):
		return fmt.Errorf("%w: user name %q contains ':'", ErrInvalidIdentity, user)
	case strings.IndexFunc(user, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%w: user name %q contains white space or control characters", ErrInvalidIdentity, user)
	}
	return nil
}

func validDigest(d string) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(d)
	return err == nil && len(b) == sha1.Size
}

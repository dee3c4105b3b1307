// Package access is confpush's access policy: who may read and write a
// config root, its items and its metadata tree, the ACLs that say so, and
// what confpush init and confpush acl do with them (Init, Check, Repair,
// the quotas). It is the binary's: the runtime pieces every reader and
// writer uses are elsewhere (the identities, the ACL comparison, the
// status-ACL document's format and the rule judging a status or registry
// node in internal/aclmodel; the reading of that document and the judging
// of agents in fleet; the copying of ACLs in publish; the explained
// refusals, *zkclient.PermissionError and its siblings, in zkclient).
// docs/security.md is the operator's guide; this comment is the model.
//
// # Identities
//
// Two kinds of digest identities ("user:password", stored by ZooKeeper as
// user:base64(sha1("user:password"))):
//
//   - the publisher (confpush) may do everything on the root, its items
//     and the root's metadata tree;
//   - agents (confagent, or any cache user) may read the root and its
//     items, and create and write their own status node.
//
// Nobody else ("world", including sessions with a wrong password) may do
// anything, except READ on the root and its items when the policy is
// WorldReadable. Init takes identities as digests, so confpush never needs
// an agent's password (aclmodel.ParseDigestIdentity, aclmodel.Digest).
//
// # ACLs
//
// ZooKeeper ACLs are per node, not inherited, and creating or deleting a
// child is a permission on the parent. The policy (Policy.ACLs) is:
//
//	<root>, items, marker         publisher cdrwa, agents r, [world r]
//	<meta>/roots/<key>            publisher cdrwa, agents r   (data: status-ACL document)
//	  history, blobs, publishing,
//	  election, and all below      publisher cdrwa
//	  status                       publisher cdrwa, agents c
//	  status/<agent-id>            publisher cdrwa, creating agent cdrwa
//	  agents                       publisher cdrwa, agents c   (the registry)
//	  agents/<agent-id>            publisher cdrwa, creating agent cdrwa
//	ancestors Init creates         publisher cdrwa
//
// Agents get CREATE on the status parent but not DELETE (that would let
// any agent delete any other's node; ephemeral nodes vanish with their
// session). A status node's ACL is {publisher ALL, zk.AuthACL(ALL)}: the
// server replaces "auth" by the creating session's ids, so no other agent
// identity can read, write, re-ACL or delete it. The agent learns the
// publisher's entry from the status-ACL document on the metadata base
// (fleet.Fleet.StatusNodeACL), which is why agents may read the base.
//
// The publisher creates every node with the ACL of the node that holds it,
// read once per publish (a publisher re-reads it whenever the ACL version
// changes): items and the marker get the
// root's, history entries, blobs and liveness nodes the history parent's.
// So publishing needs no knowledge of the policy, and Init or a repair
// changes what the next publish creates.
//
// # What ZooKeeper does not protect
//
//   - exists and sync check no ACL: anyone can learn that a node exists
//     and its Stat (versions, sizes, child count, times). Names of
//     children and data are protected.
//   - Digest credentials are never refused at login: AddAuth with a wrong
//     password succeeds and the session simply lacks the permissions; the
//     first request fails with zk.ErrNoAuth (zkclient.Explain names the
//     node and the permission). zk.ErrAuthFailed is only for a scheme the server
//     does not know or a SASL/certificate login it refused; the server then
//     drops the connection and the client reconnects to the same session
//     without those credentials. go-zookeeper v1.0.4 declares
//     StateAuthFailed but never emits it.
//   - Anyone with CREATE on a parent may create a node under a name that
//     does not exist yet, with any ACL, even one naming another identity's
//     digest. So an agent identity can create a status or registry node
//     under another agent's name. Readers therefore trust such a node only
//     when its ACL is exactly the named agent's (aclmodel.Trust); Check
//     reports any other as untrusted and Repair deletes it. Anyone with
//     DELETE on the root's parent can delete the root while it has no
//     items (Check reports such a parent, KindAncestor).
//   - Digests are unsalted SHA-1. The publisher's is readable by every
//     agent identity (status-ACL document) and every agent's by the
//     publisher: passwords must be random (aclmodel.ParseIdentity refuses
//     short ones).
package access

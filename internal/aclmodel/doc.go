// Package aclmodel is the part of zkconf's ZooKeeper access model that
// readers and the policy's tools share, without any request of its own:
// digest identities, ACL comparison and description, the status-ACL
// document's format, and the rule that judges whether a status or registry
// node is provably the agent's it is named after (Trust). fleet reads the
// tree and judges with it; confpush's access policy (init, acl) writes the
// tree and checks it with the same rule. docs/security.md is the
// operator's guide to the model.
package aclmodel

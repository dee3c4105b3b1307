// Package publish publishes a config set to a ZooKeeper root atomically,
// keeps its history, and rolls it back.
//
// # Data model
//
// A root znode holds one config set: its data is the manifest (package
// manifest), the nodes below it are the items, each at its path (item
// "conf.d/site.conf" is the node <root>/conf.d/site.conf), with the
// directories of those paths as nodes of empty data (docs/design.md,
// "Config trees"); the child "invalid" is the marker of a marker-mode
// publish in progress. History entries, blobs and
// liveness nodes live under the metadata path (WithMeta).
// docs/design.md describes the layout, the guarantees this protocol keeps
// and why, and the history invariant (every content a retained history
// entry references is a blob or a live item's content) that the blob
// steps below maintain. This documentation is the protocol step by step;
// the code marks the same steps.
//
// # Publishing, step by step
//
//  1. Validate the request before touching ZooKeeper (the reads of step 2
//     are in flight meanwhile, and cancelled if it fails): item paths (and
//     no path that is also another's directory), item sizes
//     (ItemLimit), the set size, an empty set, the manifest size (it must
//     fit one znode, and the marker-mode final commit that carries it
//     twice must fit the multi budget). The set is hashed once, here (or
//     beforehand, by Publisher.Prefetch, for the same set). Any problem:
//     nothing is written.
//  2. Read: the root (manifest M at data version V, or absent, or empty),
//     its children, the marker if any (and whether its publish's liveness
//     node exists) and the history list; alongside, the ACLs to copy,
//     whether a candidate node exists and, for a small set (at most 64
//     items, 256 KiB), the live nodes at the new set's paths and whether
//     the blob of each of its contents exists (one listing of the blob
//     store; Publisher.Prefetch sends these reads early); for a larger
//     set, once the root's answer is in, the live items whose entry in
//     its manifest is the new set's (those step 3 verifies). On ZooKeeper
//     3.6+ all of it but the ACLs is one multiRead, the root's listing
//     right after its data (readCombined; docs/design.md, "Step 2 in one
//     multiRead"). A root with data that is not a manifest is refused.
//  3. Check: the fence node of Request.Fence exists (else ErrFenced);
//     ExpectGeneration (mismatch: ConflictError). A root with children
//     but no manifest and no marker is refused. A live marker:
//     MarkerBusyError (owner, age) unless OverrideMarker. A dead (or
//     overridden) marker is taken over: the root's actual children are read
//     and hashed, since the dead publish may have written some of them, and
//     the diff is computed against them. A marker whose data confpush did
//     not write (made by hand, or by a crashed tool) names no publish, so
//     no liveness node can exist for it: it is dead and taken over too.
//     Result.TookOver says which marker was taken over and why.
//     Taking a marker over walks the whole tree (a Get of every node, a
//     Children of every node with children, 16 levels at most): leaves
//     are the items actually present, nodes with children directories.
//     Without a marker, every directory of M and of the new set is listed
//     (one round, pipelined; nothing for a flat set), and every live item
//     the plan would leave alone (same path and hash in M and the new set)
//     is read (in step 2, or here for what step 2 did not read) and
//     verified against M (its bytes equal to the new set's, which has M's
//     digest): an item changed outside confpush is rewritten in the commit
//     (Result.Repaired) instead of being skipped as unchanged. Beside
//     those reads, for a set step 2 did not list the blob store for, one
//     Exists per entering content (at most 8, fitting the budget), so
//     that the commit can carry their blobs.
//  4. Plan generation N = max(M.Generation, newest history entry) + 1 and
//     the diff (a root at generation 2^63-1 refuses: ErrGenerationExhausted).
//     With NoRemove, a plan that removes live items is refused
//     (RemovalError listing them), dry runs included.
//     Identical content (and no marker, and no item to repair):
//     Result.Unchanged, no write, unless Force.
//     A set whose manifest needs format 2 (an item path with "/") reads
//     the root's expected fleet and is refused (OldAgentsError naming
//     them), dry runs included, while an agent reports reading less,
//     unless AllowOldAgents.
//  5. Mode: multi when the encoded transaction below fits the multi budget
//     (1 MiB - 64 KiB, computed op by op), else marker (manifest.ModeAuto). DryRun
//     stops here, reporting the plan and the mode.
//  6. Commit: create the missing metadata parents, then commit in multi
//     mode (one transaction) or in marker mode (steps 6a to 6f), both
//     below.
//  7. After the acknowledgement: store the blobs of the contents that
//     entered the live set and that the commit did not create (multi
//     mode), remove a candidate node step 2 found, and run the GC, side by
//     side (History and garbage collection, below).
//
// Multi mode (step 6) is one transaction:
//
//	SetData(root, manifest N, V)        -- the compare-and-swap (Create when the root is absent)
//	Delete(root/invalid, version)       -- only when taking over a dead marker
//	Create(dir, empty) / SetData(dir, empty, -1)
//	                                    -- each missing directory of N (or a node that held
//	                                       an item and is a directory of N), parent first
//	Create / SetData(-1)                -- added and changed items only
//	Delete(-1)                          -- removed items
//	Delete(dir, -1)                     -- directories left without items, children first
//	Check(blobs/<sha>, -1)              -- every departing content: in M, in no item of N
//	Create(blobs/<sha>, content)        -- entering contents (in N, not in M) whose blob step 2
//	                                       or 3 read missing, while the commit fits the budget
//	Create(history/g-N, manifest N)     -- history lands with the commit
//	Check(fence, -1)                    -- with Request.Fence
//
// A directory with a node under it that zkconf did not write (a stray) is
// not deleted: it stays, with its parents, reported in Result.Strays. A
// stray that appears between the listing and the commit fails the commit
// with NotEmpty (nothing applied): the directory is listed again and the
// commit sent again without its delete, under the same compare-and-swap,
// at most 4 times.
//
// A Check failing with NoNode means a publisher stopped between its
// acknowledgement and storing its blobs: nothing was applied, so the
// publisher reads which departing blobs are missing, reads those contents
// from the live items (verified against M; a content found nowhere is a
// conflict if the root moved, else a damaged history, and nothing is
// written) and sends the commit again under the same compare-and-swap
// with Create(blobs/<sha>, content) in place of those Checks (NodeExists
// on such a Create, someone having stored it meanwhile, turns it back
// into a Check). The commit creates the blobs of entering contents step
// 2 (a small set) or 3 read missing, as many as fit the multi budget: NodeExists on
// one (stored by someone else since) fails the commit with nothing
// applied, and it is sent again without that Create. The other entering
// contents' blobs (they are live items once the commit lands) are
// created in step 7, pipelined (NodeExists is fine), best effort, while
// GC runs beside them (GC never deletes a blob the new generation
// references, so neither waits for the other). A publisher that dies
// before storing them leaves them to the next commit's departing Checks
// above.
//
// Marker mode (step 6):
//
//	6a. Create the blobs of contents not in M (NodeExists is fine).
//	6b. Create the ephemeral liveness node publishing/<publish id>.
//	6c. Multi(SetData(root, M unchanged, V), Create(root/invalid, marker))
//	   -- or SetData(root/invalid, marker, its version) to take one over,
//	   or Create(root, empty) when the root is absent. Rewriting the root's
//	   data unchanged moves its version to V': a publish that read V can no
//	   longer commit, and one that reads V' sees the marker.
//	6c2. For every item about to be overwritten or deleted, store M's
//	   content of it as a blob if it is missing (read from the live item,
//	   verified): a death midway must not lose a retained generation's
//	   content. No GC runs while the marker holds the root's version.
//	6d. Make the missing directories (parent first, a depth at a time),
//	   write each added or changed item, delete each removed one, then
//	   delete the directories left without items (children first; one a
//	   stray keeps stays, reported), every write as
//	   Multi(Check(root/invalid, marker version), write): a publish that
//	   took the marker over (or a zombie of this one after its session
//	   expired) can never write over it.
//	6e. Multi(SetData(root, manifest N, V'), Delete(root/invalid, marker
//	   version), Check every departing content's blob, Create(history/g-N),
//	   Check(fence, -1) with Request.Fence).
//	6f. Delete the liveness node (also when the publish fails after 6b).
//
// If the publisher dies midway the marker stays, the root keeps manifest M
// (readers verifying items either still see M or wait), and the next
// publish takes the marker over. A publish that fails after 6c leaves the
// marker too, and deletes its liveness node so the next publish does not
// wait for it.
//
// # Edits
//
// Edit is read-modify-write of one live set: Read (verified, never
// torn), the caller's change to a copy, and Publish with ExpectGeneration
// set to the generation read, so that step 3 refuses the plan when a
// publish landed after the read and the commit's compare-and-swap refuses
// it when one lands after step 2. A lost race reads and edits again, at
// most MaxEditAttempts times: no concurrent update is lost, and a storm of
// them ends in a ConflictError instead of a loop.
//
// # Errors, by class
//
// zkclient's package documentation ("Errors") defines the classes and the
// sentinel or type of each; this section says what a publish does in each.
//
// Normal state: BadVersion or NodeExists on the root is a ConflictError
// carrying the generation that won (read after the failure);
// NodeExists/NoNode on an item means someone else changed the root's
// children: a ConflictError, never a blind retry. A blob that vanished
// (GC) or appeared (another publish) is not a conflict: the publish plans
// again.
//
// Recoverable (connection loss during a commit, outcome unknown): wait for
// the session, Sync, and read history/g-N (created by the same
// transaction, so present if and only if the commit landed) and the root.
// Our publish id there: it landed (Result.Recovered). Absent: the same
// transaction is sent again, same compare-and-swap, so it cannot land
// twice; if that resend loses the compare-and-swap, history/g-N is read
// once more (the first send may have landed late) before reporting a
// conflict. Marker-mode item writes lost with the connection are sent
// again: under the marker fence they are idempotent.
//
// Fatal: after a session expiry no write is ever re-sent. The outcome of
// a commit in flight is read on the new session: success only if it
// landed, otherwise an error wrapping zkclient.ErrSessionExpired. A marker-mode
// publish whose session expired stops (its liveness node is gone, so the
// marker is dead and the next publish takes it over). A context that ends
// while a commit is in flight gives ErrOutcomeUnknown with the publish id
// and generation to look for. A refusal by ZooKeeper's access control
// (NoAuth) is an error naming the node and the permission missing
// (errors.Is(err, zkclient.ErrPermission)), and a refusal by an enforced
// ZooKeeper quota (QuotaExceeded, code -125: a quota someone set on the
// root, the metadata path or an ancestor) one naming the node
// (errors.Is(err, zkclient.ErrQuotaExceeded)); neither is ever retried.
//
// # ACLs
//
// The publisher copies the ACLs of the root and of the history parent
// (as `confpush init` set them) on its first publish, and again whenever the stats
// its state reads return show another ACL version (or another node) for
// either; it creates items and the marker
// with the root's, history entries, blobs, liveness nodes and missing
// metadata parents with the history parent's; the transaction size
// estimate counts those ACLs. A tree without access control (never set up
// by `confpush init`) uses zk.WorldACL(zk.PermAll), as ZooKeeper would. The session must
// have ADMIN on both nodes to copy their ACLs.
//
// # Fencing token
//
// Result.Zxid is the zxid of the commit (the root's Mzxid right after it,
// equal to the history entry's Czxid): strictly increasing per commit and
// comparable across roots. Note that setting a marker rewrites the root's
// data unchanged, so the root's Mzxid can move without a new generation.
//
// # History and garbage collection
//
// Step 7, after each commit, beside the blob stores that follow it, best
// effort: keep the newest Retention history entries (the live one always);
// when some fall out, list the history again (the state's list was read
// beside the root, so a commit landing between the two can be missing from
// it; listed after our commit, every entry committed before ours is
// there) and the blob store, and read the retained manifests, all at once
// (one round trip), and delete those entries and
// every blob no kept generation references, in transactions that start
// with Check(root, version after our commit): if anything touched the root
// since, the GC stops and the next publisher's GC does the work (why that
// never deletes a blob a retained generation references: docs/design.md,
// "History and GC"). Rollback(G) reads
// generation G from history and blobs and publishes it as a new
// generation, recording RollbackOf = G: generations only go up.
//
// # Canary rollouts
//
// A Request with Canary publishes its set as the candidate generation C of
// a rollout (docs/design.md, "Canary rollouts"): every candidate content
// is stored as a blob, the contents the stable set lacks as
// candidate/<sha256> (readable by agents), then one transaction sets the
// root's data to the stable manifest plus a manifest.Canary, the
// candidate node's data to the candidate manifest, and creates history
// g-C and the rollout record. While a root carries a canary every other
// publish (Publish, Rollback, Edit) fails with a *RolloutInProgressError
// unless Request.Supersede. Widen changes the selection (only wider);
// Promote and Abort end the rollout with a normal publish of the
// candidate's or the stable content as C+1 (PromoteOf, AbortOf), expecting
// the rollout's id in the root (else a *RolloutConflictError); Rollout
// reads it, RolloutW with watches. A publish that leaves the root without
// a canary removes the candidate node. This package only writes: judging
// the fleet, driving a rollout (holding HoldDriver's liveness node) and
// refusing a selection that selects no expected agent are package
// rollout's, above this one and fleet.
package publish

// Package chaos is zkconf's chaos suite: Jepsen-style histories checked by
// an independent checker, with faults injected on a seeded schedule in the
// manner of etcd's functional tester.
//
// # The system under test
//
// A 3-node ZooKeeper ensemble (internal/zktest, quotas enforced), set up
// by the confpush binary's `confpush init` (Config.Confpush: a publisher,
// one digest identity per agent whose user is the agent id, one more agent
// identity, "hostile", that runs no agent; quotas set and locked), at
// least five real
// confagent processes, each with its identity's credentials file (subprocesses with Pdeathsig, in their own process
// groups, stopped before Run returns), each reaching every server through
// its own fault proxy (internal/faultproxy; faults apply to all of an
// agent's proxies), each with a dir target and a template target. Agent 0
// is "picky": its dir target's check rejects any content holding
// PoisonToken. A publisher (package publish, through its own proxies)
// commits continuously: random item counts and sizes (bytes to ~130 KB,
// empty items, binary items, names with spaces, dots and non-ASCII), items
// added, changed and removed, forced marker-mode publishes, sets too big
// for one transaction (marker mode by size), poisoned publishes, and
// rollbacks. In stretches of its publishes (a flip about one publish in
// six) it draws config trees (issue 25): item paths 1 to 3 directories
// deep from a small pool of directory names (with spaces, dots,
// non-ASCII, "invalid" below the top level), items moving between
// directories and to and from the top level, whole directories emptied,
// and a flip back to flat that removes every directory at once (manifest
// format 1 again), in every mode. Every attempt is recorded with the
// signature of every item, keyed by path.
//
// # Two roots
//
// All agents but agent-1 follow two roots in one process (roots: main,
// chaosRoot, and common, commonRoot; roots.go): besides their targets of
// main, a dir target of common and a template target of common that reads
// main too (cutTemplate: main's generation and request nonce, common's
// generation, nonce and items). A second publisher commits to common
// beside the main one, concurrently, through the publisher's proxies (so
// publisher faults reach it, with outcomes it may not learn), held with
// it, started over on a wiped tree: small config trees (a pool of paths up
// to three components, items added, changed, removed and so moved between
// directories, a nonce item that makes every set its attempt's own), now
// and then in marker mode. agent-1 keeps the single-root configuration.
//
// # Canary rollouts
//
// Agents carry labels: zone=a (even index) or zone=b (odd), besides their
// ids (agent-N, whose percentage buckets are fixed by the id). When the
// root carries no rollout, the publisher now and then publishes its next
// set as a canary instead (by zone, by percent, by zone and percent, or by
// explicit agent ids); while one is open, each turn is a rollout step
// (workload_rollout.go): a widen (a percent grows), a promote, an abort, a
// plain publish with Supersede, a new canary with Supersede, or a plain
// publish without it, which must be refused with ErrRolloutInProgress.
// The rollout state is read from the root before every turn (a fault may
// leave a step's outcome unknown; a wipe ends any rollout). The first and
// last publishes supersede whatever is open. After the final publish has
// converged, a closing canary of one zone (drawn from the seed) is left
// open: the selected agents are awaited on the candidate; then one agent
// on the candidate and one outside the selection are restarted with the
// other zone (relabelled mid-rollout: the first must stay on the
// candidate, never backwards, the second must move to it), and the run
// ends with a rollout in progress.
//
// # Faults
//
// The schedule is derived from the seed alone (makeSchedule) and printed
// into the history: an ensemble track (leader kill and restart, follower
// kill, quorum loss — two of three servers down for 1.5-2.5 session
// timeouts), one track per agent (connection cuts; blackholes of 1.5-2.5
// session timeouts, which expire the session; added latency; SIGKILL and
// restart, half of them aimed right after an apply; the configuration
// edited into one of several invalid forms, in place or by rename,
// sometimes with SIGHUP, then restored), and a publisher track (cut storms
// under latency, to lose commits in flight; partitions longer than the
// session timeout). Every ensemble and agent fault kind occurs in every
// run; publisher faults are drawn at random.
//
// The trust-and-recovery fault kinds (faults_recovery.go): agent-disk-full (the
// agent's own output tmpfs filled with a ballast file), agent-reload-fail
// (the template target's reload fails while a flag file exists),
// forged-status (a session of the hostile identity tries to create
// status nodes for agents that do not exist, which the status quota
// refuses, and squats a stopped agent's node) and, once per run,
// ensemble-wipe (every server's data wiped, the tree initialised again and
// the publisher starting over on it). On a track of its own, at least once
// per run, the hostile-agent fault (faults_hostile.go): the hostile
// identity sends a burst of writes past its bounds (status nodes and
// registrations under foreign names, 1 MB status nodes, its own nodes
// above their bounds), then floods its own status node and registration
// within their quotas while the fleet view is sampled, and ends with the
// operator's `confpush acl --repair`. The disk-full, reload and wipe faults heal with the
// publisher held (the first two within a budget of a fifth of the run),
// so that only the agent's own retry can bring it back.
//
// # The checker
//
// The checker shares no code with the agent's rendering. It polls every
// agent's outputs: a dir target by os.Readlink of DEST/..data once, reading
// every file of the resolved directory's tree (items keyed by path; an
// empty directory or anything but files and directories is no generation)
// and checking the link again (a read that raced a swap is discarded and
// counted), plus every top-level DEST/name link (which must point to
// ..data/name) read one by one, a directory walked through its link; the
// live root is walked as a tree at the end (a node with children is a
// directory); the template output by its own parser
// (parseTemplateOutput), which accepts nothing but a whole output. At the
// end it reads ZooKeeper's history, the live root and the blob list
// directly and verifies:
//
//  1. never torn: every dir set and template output equals one generation
//     of the history, item for item (template outputs name their
//     generation; dir sets are matched by content);
//  2. never backwards: per agent and target, the generations never
//     decrease (a set republished by a rollback matches the rollback's
//     newer generation);
//  3. never partial or empty: every file, read through the generation
//     directory or through its top-level link, is a whole item of some
//     generation; a template output always parses completely;
//  4. every acknowledged publish is in ZooKeeper and in the history at the
//     generation it was acknowledged with, with exactly the items sent;
//     none landed twice; none reported as failed landed; every generation
//     belongs to an attempt; unknown outcomes are resolved from the
//     history; every manifest has the format its paths need (2 with a
//     '/'); the live root's tree matches its manifest (no directory left
//     without an item below it); no marker is left;
//     every content a retained generation references is stored as a blob
//     or held by a live item of the current generation;
//  5. after the last fault and the final publish, every agent shows the
//     final generation in both outputs and in its status node within
//     Config.Bound (2 x session timeout + resync jitter + slack);
//
// Candidate generations are history entries like any other (the checker
// learns their manifests from history g-C), so properties 1 to 3 cover a
// host on a candidate, and an abort (the stable content at a higher
// generation) is not a step back. Property 4 also holds for rollouts: a
// root announcing a canary has that candidate as its newest history
// entry, above the stable generation it holds; a promote carries exactly
// the candidate's items and an abort the stable generation's (the newest
// non-candidate below the candidate); each candidate ends at most once,
// and only when an attempt not reported as failed asked for it.
//
//  7. P7-rollout-refusal: a plain publish attempted while the root carried
//     a rollout never landed;
//  8. P8-selection: at the end, every agent's two outputs hold what its
//     labels select in the final root: during the closing canary the
//     candidate for a selected agent (or one already above the stable
//     generation), the stable generation for the others; without a rollout,
//     the live generation. The checker evaluates selectors and buckets
//     itself, from the design (check_rollout.go).
//
// For common and the template over both roots (roots_check.go):
//
//   - R1-torn: every common dir set is one generation of common's history,
//     every file read through a link a whole item of one; the template's
//     common part is exactly the generation it names, its main part names a
//     generation of main's history with its own request nonce;
//   - R2-backwards: per agent, common's dir target, and each root in the
//     template's combinations, never decrease;
//   - R3-lost: after the final publishes (main's, then common's), every
//     two-root agent shows common's final generation in its dir target and
//     the combination of both final generations in the template, within
//     Config.Bound;
//   - R4-cut: every combination the template rendered was live at one
//     moment, decided by commit zxids, not clocks: a generation is live from
//     the Czxid of its history entry (created by the commit's own Multi)
//     until that of the entry that ended it (a candidate: the next
//     generation; any other: the next generation that is no candidate), and
//     the two intervals must meet. A publish of uncertain outcome needs no
//     special care: what landed is in the history with its zxid, what did
//     not is not. Generations of two incarnations are never a cut;
//   - R5-common-publish: common's history against its publisher's log, as
//     property 4 (acknowledged at its generation with its items, failed
//     never landed, unknown resolved, every generation an attempt's, the
//     format its paths need, the final publish live, no marker left).
//
// and besides: the picky agent never renders content its check rejects;
// after a healed reload failure a reload succeeds within the bound with
// nothing new published, and every agent's last reload succeeded for the
// final generation (reload-retry); the fleet view and a rollout wait never
// count a forged status node, no foreign status node is created, and a
// squatted node keeps the forger's content (forged-status); no write of the
// hostile identity past its bounds lands (but the overshoot of empty
// foreign status nodes a burst can get past a quota checked against
// committed counts), the fleet view never lists or counts a foreign node,
// and none survives the repair (hostile-agent); every ensemble wipe gives the root a new
// incarnation id (incarnation); properties 1 to 3 hold per incarnation
// and across a wipe only from the old incarnation to the new one, and
// every agent reaches the new incarnation's first generation within the
// bound;
// after every agent fault the agent catches up with the generation
// acknowledged by then within the same bound (the window restarting after
// anything that held it back); no agent exits on its own or ignores
// SIGTERM; every invalid configuration is rejected and the restored one
// reloaded.
//
// Any violation fails the run; the summary prints the seed and, for each
// violation, the history around it (faults, publishes, every state each
// output went through). Run with the same seed to replay the schedule and
// the workload (timing differs).
package chaos

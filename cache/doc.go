// Package cache follows one zkconf config root in ZooKeeper and hands out
// never-torn snapshots of it: what it serves is exactly one published
// generation, the newest it could verify, and it says honestly how fresh
// that is (State, StateChanges). A Group follows several roots on one
// session and hands out cuts: one snapshot of each root, all live at one
// moment (see Cuts below).
//
// # Use
//
// Start a cache with New and one way to reach ZooKeeper (WithServers,
// WithConfig, or WithClient for a zkclient.Client the application shares);
// Close it when done:
//
//	c, err := cache.New(ctx, "/config", cache.WithServers(servers, 10*time.Second),
//		cache.WithStateFile("/var/lib/app/config.state"), // serve the last good config at a restart
//		cache.WithLogger(log))                            // default: WARN and above to slog.Default()
//	if err != nil {
//		return err // a bad root or option: nothing was started
//	}
//	defer c.Close()
//
// Wait for the first snapshot (from the state file at once, or from
// ZooKeeper), then follow the root in a select loop:
//
//	snap, err := c.Wait(ctx, 1) // generation 1 or newer
//	if err != nil {
//		return err // ctx ended (errors.Is context.DeadlineExceeded), or ErrClosed
//	}
//	use(snap) // snap.Get("db.url"): shared, read-only bytes of one generation
//	for {
//		select {
//		case snap := <-c.Updates(): // a newer generation; never the one Wait returned, never a backlog
//			use(snap)
//		case st := <-c.StateChanges(): // Live, Stale, Expired, and why (st.Err)
//			log.Info("config", "state", st) // "stale, generation 7: cache: no ZooKeeper session"
//		case <-ctx.Done():
//			return nil
//		}
//	}
//
// Updates and StateChanges keep the latest value only: a slow reader gets
// the newest snapshot and the current state, and the cache never waits
// for it. Snapshot returns the newest snapshot without waiting (nil before
// the first); State the current state. A snapshot returned by Wait is not
// delivered again by Updates, so the loop above handles each generation
// once; Snapshot is a look only, which any goroutine may take without
// taking a snapshot away from the loop. WithOnUpdate is the callback form of Updates.
// examples/library is a complete program.
//
// # Errors
//
// zkclient's package documentation ("Errors") defines the classes once;
// this section says which the cache reports and what it does about each.
// New fails only for a bad root or bad options. Wait fails only when its
// ctx ends (the error names the state and why: errors.Is with
// context.DeadlineExceeded or context.Canceled) or the cache is closed
// (ErrClosed). Everything that happens to ZooKeeper or the root afterwards
// is not an error return but a state: the cache keeps serving its last
// good snapshot and StateInfo.Err says why it is not Live. Branch on it
// with errors.Is (errors.As for the typed errors), in three classes:
//
//   - It passes by itself; the cache retries or waits for the event that
//     ends it: ErrDisconnected, ErrResyncing, zkclient.ErrSessionExpired,
//     ErrNotSynced (serving the state file, not yet confirmed),
//     ErrPublishInProgress (a marker-mode publish), ErrBackwards (a lagging
//     server: *BackwardsError), and manifest.ErrTorn for a few reads while a
//     publish lands.
//   - Nothing to serve yet: ErrRootMissing, ErrNotPublished; the cache
//     watches for the first publish.
//   - Someone must act; the cache stays as it is until then:
//     zkclient.ErrAuthFailed (refused credentials; it matches
//     ErrDisconnected too, so test it first), a ZooKeeper permission
//     error (zk.ErrNoAuth, explained: which identity lacks what; re-checked
//     every 30 s), ErrAbandonedMarker (*AbandonedMarkerError) and a
//     lasting manifest.ErrTorn (*manifest.ItemMismatchError, *CandidateError: an item
//     changed behind the publisher's back), both repaired by the next
//     publish; ErrIncarnationRefused (*IncarnationError: call Adopt),
//     manifest.ErrForeign and manifest.ErrFutureFormat (the root holds
//     what this version cannot read), ErrRefused and ErrConnClosed (the
//     application's own connection, zkclient.Fixed: dial a new one).
//
// # Guarantees
//
//   - Every snapshot handed out is one published generation, complete and
//     verified against its manifest.
//   - Generations (and commit zxids) handed out never decrease, across
//     reconnects, expiries, server changes and restarts from the state file.
//   - The sync loop never waits for a consumer: Updates and StateChanges
//     keep only the latest value, OnUpdate runs on its own goroutine.
//   - Close stops every goroutine the cache started.
//
// # Limits
//
//   - Freshness is bounded by ZooKeeper's notification delivery: a Live
//     cache may serve a generation for as long as the watch event of a newer
//     commit takes to arrive. Use Snapshot().Zxid() as a fencing token when
//     that matters.
//   - While a marker-mode publish is in progress a cache that does not hold
//     the generation committed before it waits (it cannot read that
//     generation: its items are being overwritten); a publisher that died
//     with its marker in place (or a marker made by hand) leaves such caches
//     on their snapshot, reporting ErrAbandonedMarker, until the next
//     publish takes the marker over and commits, unless the items still
//     verify against the root's manifest, which is then served.
//   - A root changed by hand (not through a zkconf publisher) so that its
//     items do not match its manifest is never served; the cache reports an
//     *manifest.ItemMismatchError naming the item (manifest.ErrTorn) and keeps the snapshot it
//     holds. The next publish of the set rewrites the item.
//   - Zxids of two ensembles cannot be compared: a state file from another
//     ensemble whose commit zxid is higher than the new ensemble's is
//     refused until the new ensemble passes it. Delete the state file when
//     moving to a new ensemble on purpose.
//   - The state file's item directory holds the configuration in clear,
//     and until its pack is replaced older generations' items too (files
//     0600, directory 0700): protect them like the configuration itself.
//
// # Cuts
//
// An application that reads a shared root beside its own (/config/common
// and /config/web) must not combine a generation of one with a generation
// of the other that were never live together: a database address moved to
// common and removed from web in two publishes would otherwise be seen in
// neither, or in both. NewGroup follows several roots, each with a Cache
// of its own on one shared session, and hands out Cut values
// (map[name]*Snapshot) through Wait, Updates and Cut, shaped like a
// Cache's Wait, Updates and Snapshot:
//
//	g, err := cache.NewGroup(ctx, map[string]string{"common": "/config/common", "web": "/config/web"},
//		cache.WithClient(client))
//	...
//	cut, err := g.Wait(ctx, nil) // the first cut
//	use(cut["common"], cut["web"])
//	for {
//		select {
//		case cut := <-g.Updates(): // a newer cut, latest value only
//			use(cut["common"], cut["web"])
//		case <-ctx.Done():
//			return nil
//		}
//	}
//
// Every snapshot in a cut is one the root's cache handed out (never torn;
// never backwards and never lost per root). The generations of a cut were
// all named by their roots at one moment. ZooKeeper has no snapshot read
// across znodes; the group builds one from sequential consistency: one
// session's requests are served in order, so a request sent after
// another's answer came back is served after it.
//
//  1. Each root's snapshot comes with its witness: the root read it was
//     assembled from, stamped with a group-wide counter when the request
//     was sent and when its answer came back. Its Mzxid is held with it.
//  2. When a root's cache delivers a new snapshot, the group takes T, the
//     moment the latest witness was served. A root whose witness was
//     answered before the latest one was sent was live at its witness;
//     one Exists of it, sent now, that finds its Mzxid unchanged shows it
//     still live after T; generations only grow, so it was live at T. The
//     root with the latest witness needs no request. When the counter
//     cannot tell which witness is the latest (two roots read at the same
//     time) every root is confirmed.
//  3. A root whose znode changed without a new generation (a marker-mode
//     publish sets the root's data unchanged with its marker; a canary
//     step rewrites it): the Exists finds another Mzxid, and a Get of the
//     root is accepted when its manifest still names the held generation
//     (or, for a member of a canary's selection, its candidate).
//  4. A root that moved (a newer generation, or gone) is marked: the group
//     waits for its cache's next snapshot (an event, no timer) and starts
//     over from 2. A failed request is retried with a backoff (100 ms up
//     to 10 s). Before its first request in a new session the group sends
//     a Sync, and an answer that came from a session it has not synced in
//     is discarded: after an expiry the client may reach a server behind
//     the one it left.
//
// Cost: a publish to one root costs its own cache what a lone Cache pays
// (a root read and the changed items), and the group one Exists per other
// root (one more, for every root, when reads overlapped; a Get more for a
// root whose data changed without a new generation). A Cache outside a
// Group pays nothing for it. Progress: a confirm fails only when another
// root committed a generation between its witness and the confirm (a few
// round trips: the mover's item reads and the Exists); each failure waits
// for that root's next snapshot, whose witness is then the latest, so the
// group hands out a cut as soon as one such window passes without a
// commit to another root (GroupStats.Moved counts the failures). Under a
// publish loop on every root that happens again and again (the tests
// require it); it can starve only while some other root commits within
// every window, that is when publishes to it arrive back to back, each as
// soon as the previous one committed, for as long as that lasts. It is
// not bounded otherwise: no request reads two znodes at one moment.
// Limits: each root's cache may keep a state file (WithRootOptions), but
// its snapshot enters a cut only once the group confirmed it against
// ZooKeeper (state files written at different moments are not known to
// hold a cut): restarted while ZooKeeper is down, a group serves each
// root's persisted snapshot (Group.Snapshots) and no cut. Each root's
// Cache keeps its own State (Group.States), so a cut is as fresh as the
// least fresh root. What reads one root only takes each root's newest
// snapshot from Group.RootUpdates (and states from Group.StateChanges),
// which never wait for a cut: confagent renders the targets of one root
// from it and its templates over several roots from the cuts.
//
// The rest of this documentation is how the cache works: the read
// protocol step by step (the code refers to its numbered steps), when it
// resyncs and retries, and the state file.
//
// # Read protocol
//
// One goroutine runs the loop below (sync.go: one loop, one select; each
// cycle is steps 2-7, read.go); item reads (multiReads of several items,
// step 6) run several in flight (WithFetchConcurrency) on the same
// connection (fetch.go). Why a wiped or
// rebuilt ZooKeeper needs the incarnation and refused-session rules below
// is in docs/design.md (Read protocol).
//
//  1. Wait for a session. The session is tracked through the client's
//     synchronous event callback (zkclient.Session), never its 6-slot event
//     channel, which drops events.
//  2. On the first read in every session the loop has not synced in (see
//     Resyncs below), send
//     Sync(root), so that the server answering is as current as the leader:
//     a cache never reads older data than a server has already committed.
//  3. GetW(root): one read returns the manifest and arms the data watch, so
//     no change can slip between reading and watching. A missing root is
//     watched with ExistsW (state Starting/Stale, ErrRootMissing); an empty
//     root means never published (ErrNotPublished); a manifest that is not
//     zkconf's or of a newer format keeps the held snapshot and reports Stale
//     with manifest.ErrForeign or manifest.ErrFutureFormat.
//     When the root's manifest announces a canary rollout
//     (manifest.Manifest.Canary) and this cache follows its candidate
//     (manifest.Manifest.Follows: WithLabels and the selection picks it,
//     or it already holds a generation above the stable one in the root's
//     incarnation, so a host on the candidate never goes back), the
//     manifest judged and fetched below is the candidate's: unless the
//     held snapshot is that generation already, Get <meta>/roots/<key>/candidate,
//     check its sha256 against the canary's manifest_sha256, its
//     generation and its incarnation; a missing or different candidate
//     (a rollout step landed after the root read) is a torn read (a
//     *CandidateError, manifest.ErrTorn, retried as in step 6). Its zxid is the
//     root's Mzxid. Every other cache (without WithLabels, or not
//     selected) follows the root's own, stable, generation at the cost of
//     this one root read. No other watch is armed: the candidate node
//     changes only in the same transaction as the root's data.
//  4. If the manifest names the generation held (generation and publish id),
//     the cache is Live. If it is not newer in both generation and commit
//     zxid (the root's Mzxid), it is refused (ErrBackwards, counted in
//     Stats.BackwardsRejected, logged) and the cache waits for the watch:
//     a snapshot is never replaced by an older one, whether the older one
//     comes from a lagging server, another ensemble, or a state file newer
//     than the server. Generations compare within an incarnation
//     (manifest.Manifest.Incarnation) only: a root published anew on a
//     ZooKeeper wiped or rebuilt starts a new incarnation, which the cache
//     follows from whatever generation it has (IncarnationFollow, the
//     default: logged, counted in Stats.IncarnationSwitches) or refuses
//     until Adopt (IncarnationRefuse: *IncarnationError). An incarnation it
//     left is only taken again above the generation it held in it
//     (Snapshot.LeftIncarnations, persisted).
//  5. The marker (<root>/invalid, a marker-mode publish in progress) is read
//     with GetW when the root's children version (Cversion) differs from the
//     one at which the marker was last seen absent (or the root znode was
//     re-created: its Czxid differs), and on every full resync. Creating
//     the marker changes Cversion, so an unchanged Cversion proves it is
//     still absent without a request. GetW arms a watch only
//     when the marker exists (it then fires when the marker goes), so caches
//     get no notification when a publish merely starts (herd effect): they
//     keep serving the committed generation, which is still current. If
//     the marker exists and the held snapshot is not the committed
//     generation, the cache checks that the publish that set it is alive:
//     its liveness node <meta>/roots/<key>/publishing/<publish id> exists
//     (ExistsW, whose watch fires when the publisher goes). The publisher
//     creates that node before the marker and deletes it after its final
//     commit, so a marker without one is abandoned (as is a marker whose
//     data confpush did not write). For a live publish the cache keeps its
//     snapshot and waits for the marker, root or liveness watch
//     (ErrPublishInProgress). For an abandoned marker it reads the items
//     of the root's manifest as in step 6: if every one verifies, that
//     generation is consistent and is served (logged; applied as in step 7,
//     a switch of incarnation counted and remembered); otherwise it keeps
//     its snapshot and reports an *AbandonedMarkerError
//     (ErrAbandonedMarker) naming the marker and the first item that does
//     not verify, until the next publish takes the marker over.
//  6. Items whose sha256 equals the held snapshot's are reused; the others
//     are read, each from its node <root>/<path> (an item path of a tree,
//     "conf.d/site.conf", is a nested node; its directories are never
//     read and nothing is ever listed), and each is verified against the
//     manifest (size and sha256).
//     A missing item or a mismatch means a newer publish is landing: the
//     attempt is dropped whole and the root re-read after a jittered
//     exponential backoff (10 ms up to 2 s; after 20 tries in a row up to
//     30 s, and the state reports, from the 5th, a *manifest.ItemMismatchError
//     naming the item, which matches manifest.ErrTorn). Because every item
//     is checked against the manifest read in step 3, a snapshot is exactly
//     that generation, item for item; nothing from two generations is ever
//     assembled. One changed item is read with a Get; several are read
//     with ZooKeeper 3.6's multiRead, one request per up to 64 KiB of
//     contents (an item larger than that alone), those requests in flight
//     together: one round trip and one answer where a Get per item cost
//     an answer and a goroutine's wake-up each. A multiRead is not a
//     transaction and need not be: each item in it is verified as a Get's
//     would be. A server older than 3.6 answers it "unimplemented" and
//     closes the connection (the session lives on): the cache retries the
//     cycle after the reconnect, as after any connection loss, and from
//     then on reads every item with a Get of its own. A publish that changes k items costs one root read and one
//     item request per cache for small items (k item reads in Stats); k
//     requests without multiRead. A candidate's item is read from the
//     stable item with the same sha256 when there is one, else from
//     <meta>/roots/<key>/candidate/<sha256>, and verified against the
//     candidate manifest alone.
//  7. Apply: the snapshot becomes Snapshot(), wakes Wait, replaces the
//     pending value of Updates (one slot, latest value), is passed to
//     OnUpdate (on its own goroutine), after it is written to the state
//     file.
//  8. Wait for: a watch event, a session change, the retry timer, an Adopt
//     request, or the safety-net resync. Without a session only the first
//     two count: retries, Adopt and the safety-net resync wait for one.
//
// # Resyncs and retries
//
// A full resync is a cycle (steps 2-7) with the marker read regardless. A
// cycle that is due waits for a pending retry delay.
//
//   - Disconnect: state Stale (ErrDisconnected; wrapping
//     zkclient.ErrAuthFailed when authentication failed), Starting without
//     a snapshot, still Expired after an expiry; the snapshot is still
//     served. Watch channels receive nothing on a plain disconnect.
//   - A session the loop has not synced in (zkclient.Status.Epoch changed:
//     a reconnect within the session, or the new session after an expiry
//     or a replaced connection): Sync, then a full resync, even if no watch
//     fired. The client re-registers watches in the background and only
//     logs failures, and an exists watch can miss a create followed by a
//     delete while disconnected; the resync depends on neither. A Live
//     cache reports Stale (ErrResyncing) meanwhile. Except in the first
//     session the resync waits a random delay up to WithResyncJitter
//     (default none), which spreads a fleet's resyncs.
//   - Expiry (zkclient.Status.Expiries changed, or EventNotWatching with
//     zk.ErrSessionExpired on a watch channel): state Expired
//     (zkclient.ErrSessionExpired), every watch is forgotten, and the cache resyncs on
//     the client's new session (which the go-zookeeper client opens
//     silently), then reports Live. With its own connection that is all
//     (the cache holds no ephemeral nodes). With the application's
//     connection (WithClient) the cache does the same and nothing else: what
//     an expiry means for the application's own ephemeral nodes, locks or
//     leadership is the application's decision (a library must not hide a
//     fatal error). StateInfo.Expiries lets an application that only reads
//     the latest state notice an expiry it did not see.
//   - Refused session (zkclient.Status.Refused: every handshake closed, the
//     way a server wiped or rebuilt on the same address refuses a client
//     that has seen a newer zxid; the go-zookeeper client would retry with
//     that zxid forever): a cache that dials itself (WithServers,
//     WithConfig) or uses a Client from zkclient.Dial (WithClient) gets a
//     fresh connection after the session timeout, counted as an expiry; on
//     the application's own connection (zkclient.Fixed) the state says
//     ErrRefused and the application must dial again.
//   - Closed channels (after EventNotWatching) are never read twice: every
//     watch channel is dropped after its one event. EventNotWatching with
//     zk.ErrClosing on a connection that is not redialled means its owner
//     closed it: state ErrConnClosed until Close.
//   - Safety net: a full resync when no cycle ran for WithResyncInterval
//     (default 10 min, ±10% each time): every cycle restarts the period.
//   - Adopt: a full resync.
//   - A failed request: the cycle is retried after a jittered exponential
//     backoff (100 ms up to 10 s). The state names the error (Stale or
//     Starting), except for a lost connection or session, which the
//     session tracker reports. No permission to read (zk.ErrNoAuth,
//     explained by the error): re-checked every 30 s, so that a repaired
//     ACL is picked up without a restart.
//   - A torn read: retried as in step 6.
//
// # State file
//
// WithStateFile persists every applied snapshot before it is handed out
// (with WithDurableBarrier: while it is handed out, and Snapshot.Durable
// returns once it is persisted, so that a consumer prepares its effect
// meanwhile and shows it only after), incrementally: the contents the
// current pack does not hold and a commit record (root, zxid, manifest,
// each content's offset, with a fixed-size trailer: its length and a
// sha256 checksum keyed by the pack's random key) are appended to one
// append-only pack in the directory beside the state file (path + ".d"),
// and the pack is synced once: that sync is the commit point, with no
// rename and no directory sync. The state file itself is a pointer naming
// the pack; it is replaced atomically (rename, directory sync) only when
// a write starts a new pack: the first, one after a failed write, or when
// the pack has grown past four times the live contents plus 1 MiB (the older
// pack is removed after that commit point; statefile.go gives the
// layout and the crash analysis). An apply that changes one item of
// 100 × 4 KiB appends that item and a ~10 KiB commit record. New loads
// the state before contacting ZooKeeper, so Snapshot is available at once
// (state Stale, ErrNotSynced, until the first sync). A corrupt, truncated
// or foreign (other root) state file, or a pack whose contents do not
// match the manifest, makes the whole state ignored with a warning: the
// cache starts without a snapshot and reads ZooKeeper's in full, never
// serving a partial one. A crash before the commit point leaves the
// previous generation loadable. The previous layouts (a commit file naming
// a pack of bare contents, a file per content, items inline) are read and
// converted by New; an older zkconf ignores the
// new format (and re-reads ZooKeeper).
package cache

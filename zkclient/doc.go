// Package zkclient is how every zkconf package reaches ZooKeeper, and the
// one vocabulary for what can go wrong there.
//
// # One client
//
// A *Client is the one value the public packages take, the way etcd's
// concurrency.NewSession and NewElection build on one *clientv3.Client:
//
//	cl, err := zkclient.Dial(zkclient.Config{Servers: servers, Auth: creds})
//	if err != nil {
//		return err
//	}
//	defer cl.Close()
//	p, err := publish.New(cl, "/config/web")                         // publish generations
//	f, err := fleet.New(cl, "/config/web")                           // read and follow the agents
//	c, err := cache.New(ctx, "/config/web", cache.WithClient(cl))    // follow the root
//
// Dial returns a Client that owns its connection: it tracks the session
// through the client library's synchronous event callback (its 6-slot
// event channel drops events), makes session expiry visible (go-zookeeper
// silently opens a new session after an expiry), routes the library's
// logging to slog, adds the credentials as soon as a server answers, and
// replaces the connection when the servers refuse its session (a server
// wiped or rebuilt on the same address). Fixed wraps an application's own
// connection and its Session tracker (DialConn dials both) as a Client
// that is never replaced. Either way, everything that uses a Client takes
// the connection from Conn for every unit of work and treats a
// replacement as a session expiry.
//
// For requests of its own, an application uses the same helpers zkconf
// does: Call (a blocking request bounded by a context), EnsurePath,
// ReadACL, and Explain and ExplainMulti (a refusal turned into an error
// naming the node and the permission missing).
//
// # Errors
//
// Branch on errors with errors.Is and errors.As, never on messages. Every
// error a zkconf package returns, or reports in a cache's state, is in one
// of these classes; the sentinel or type named identifies it whatever
// package returned it and however it was wrapped.
//
//   - Transient: the connection was lost; the session may live on
//     (IsRecoverable: zk.ErrConnectionClosed, zk.ErrNoServer). A read may
//     be sent again; a write in flight may or may not have been applied
//     (IsUncertain), which only reading can tell. zkconf does that for
//     you: publish re-sends every read, decides a lost commit by reading
//     its history entry and re-sends it under the same compare-and-swap,
//     and reports publish.ErrOutcomeUnknown only when its context ended
//     first; a cache reports cache.ErrDisconnected or cache.ErrResyncing
//     and catches up by itself; an agent rewrites its status node. A
//     request the client failed to write (IsLostWrite: the socket's
//     *net.OpError, the connection then closed and reopened) did not go
//     out whole; publish and confpush send such a read again too.
//   - Session expired (ErrSessionExpired, the client library's own
//     value): the session is gone with its watches and its ephemeral
//     nodes (an agent's status node, a publisher's liveness node, a
//     leader's election node: the fence its writes carry). The client
//     library opens a new session by itself. A cache reports
//     cache.StateExpired and resyncs; publish never re-sends a write after
//     an expiry and wraps ErrSessionExpired in the error it returns; what
//     an expiry means for the application's own ephemeral nodes and locks
//     is the application's decision. A Client counts a replaced connection
//     as an expiry too (Status.Expiries).
//   - Denied (IsDenied), never retried: a request the ACLs refused
//     (ErrPermission, *PermissionError: the operation, the node and the
//     permission missing; a wrong password shows up exactly like this,
//     since ZooKeeper accepts any digest credentials at login), refused
//     credentials (ErrAuthFailed, *AuthError; a session in state
//     AuthFailed), or a write an enforced quota refused (ErrQuotaExceeded,
//     *QuotaError). Fix the credentials or the tree (confpush acl,
//     docs/security.md).
//   - Conflict: another publish won the root's compare-and-swap, or the
//     live generation is not the one the request expected
//     (publish.ErrConflict, *publish.ConflictError with the live
//     generation); a marker-mode publish or a canary rollout holds the
//     root (publish.ErrMarkerBusy, *publish.MarkerBusyError;
//     *publish.RolloutInProgressError); a leader lost its fence
//     (publish.ErrFenced); the rollout a promote or an abort names is not
//     the one in progress (publish.ErrNoRollout, rollout.ErrEnded).
//     Nothing was written; read again and decide.
//   - Torn or mismatched: what a reader read does not match the manifest
//     it read with it (manifest.ErrTorn: *manifest.ItemMismatchError
//     naming the item, *cache.CandidateError naming a canary's
//     candidate). Readers retry and never answer with what they read; a
//     lasting one is an item changed outside zkconf, which the next
//     publish of the set repairs.
//   - Not there yet: the root was never published or does not exist
//     (publish.ErrNotPublished, cache.ErrNotPublished, cache.ErrRootMissing;
//     a cache waits for it), a generation is not in the history
//     (publish.ErrGenerationNotFound), or the tree has no access policy
//     (fleet.ErrNotInitialized).
//   - Not this version's: the root holds something this version cannot
//     read (manifest.ErrForeign, manifest.ErrFutureFormat). Upgrade, or
//     publish the root again.
//   - Bad input: a name, a file, a size or a request that cannot be
//     published (publish.ErrInvalidInput: *publish.InputError,
//     *publish.TooLargeError; publish.ErrWouldRemove), or a root that
//     cannot take another generation (publish.ErrGenerationExhausted).
//     Nothing was written.
//   - A rollout that did not complete: agents rejected the generation,
//     are gone or did not apply it in time (*fleet.RolloutError, with the
//     agents in its Progress; fleet.ErrNoExpectedAgents). The agents'
//     verdict, not ZooKeeper's: look at them (confpush status).
//   - Unreachable: no server gave a session (ErrNoSession, *ServerError
//     from Diagnose naming each server's cause: DNS, refused, timed out,
//     TLS; ErrTLS), or a Config that does not Validate; a connection that
//     cannot recover by itself (cache.ErrRefused on a Fixed client whose
//     servers refuse its session, cache.ErrConnClosed).
//
// Each package's documentation names the errors it returns; these are
// their classes.
package zkclient

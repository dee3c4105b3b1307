package cache

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// State says how fresh the snapshot a Cache serves is.
type State int

const (
	// StateStarting: nothing has been synced with ZooKeeper yet and no
	// snapshot is held (none was persisted, or none could be read).
	StateStarting State = iota
	// StateLive: connected, and the snapshot is the newest generation
	// committed under the root as of the last read; watches are armed.
	StateLive
	// StateStale: a snapshot is held but it may be behind: the session is
	// disconnected, a resync is running or was refused (StateInfo.Err says
	// why), or the snapshot was loaded from the state file and not yet
	// confirmed against ZooKeeper.
	StateStale
	// StateExpired: the ZooKeeper session expired. The snapshot is still
	// served; the cache resyncs on the client's new session and then reports
	// StateLive again. What an expiry means for the application (locks,
	// ephemeral nodes, leadership it held on the same connection) is the
	// application's decision; StateInfo.Expiries lets it notice an expiry
	// even when it only sees the latest state.
	StateExpired
)

// String returns the state's lower-case name, the one confagent reports
// (status node, HTTP status, metrics).
func (s State) String() string {
	switch s {
	case StateStarting:
		return "starting"
	case StateLive:
		return "live"
	case StateStale:
		return "stale"
	case StateExpired:
		return "expired"
	default:
		return fmt.Sprintf("state(%d)", int(s))
	}
}

// StateInfo is one state transition of a Cache.
type StateInfo struct {
	// State is the current state.
	State State
	// Since is when State was entered.
	Since time.Time
	// Err says why the cache is not Live (nil when Live). Branch on it with
	// errors.Is: ErrDisconnected, ErrResyncing, zkclient.ErrSessionExpired,
	// ErrRootMissing, ErrNotPublished, ErrPublishInProgress,
	// ErrAbandonedMarker, manifest.ErrTorn (a *manifest.ItemMismatchError
	// naming the item, or a *CandidateError naming a canary candidate that
	// does not match its root), ErrBackwards, ErrNotSynced, ErrConnClosed,
	// ErrRefused, ErrIncarnationRefused, manifest.ErrForeign,
	// manifest.ErrFutureFormat, zkclient.ErrAuthFailed, or a ZooKeeper error
	// (zkclient's package documentation, "Errors", says what each class
	// means). Refused credentials match both ErrDisconnected and
	// zkclient.ErrAuthFailed: test the latter first.
	Err error
	// Generation is the generation of the snapshot served (0: none).
	Generation int64
	// Expiries counts the session expiries this cache has seen. An
	// application reading StateChanges (latest value only) can miss a short
	// StateExpired; a changed Expiries tells it one happened.
	Expiries uint64
	// Incarnation is the incarnation of the snapshot served ("": none, or
	// published before incarnations existed).
	Incarnation string
	// IncarnationSwitches counts the switches to a new incarnation this
	// cache followed (IncarnationFollow).
	IncarnationSwitches uint64
}

// String describes the state for a log line or a status page: "live,
// generation 7", "stale, generation 7: cache: no ZooKeeper session",
// "starting, no snapshot: cache: config root does not exist".
func (s StateInfo) String() string {
	var b strings.Builder
	b.WriteString(s.State.String())
	if s.Generation > 0 {
		fmt.Fprintf(&b, ", generation %d", s.Generation)
	} else {
		b.WriteString(", no snapshot")
	}
	if s.Err != nil {
		b.WriteString(": ")
		b.WriteString(s.Err.Error())
	}
	return b.String()
}

// Errors reported in StateInfo.Err and returned by Wait. Callers branch on
// them with errors.Is.
var (
	// ErrClosed is returned by Wait once the cache is closed.
	ErrClosed = errors.New("cache: closed")
	// ErrNotSynced means the snapshot came from the state file and has not
	// been confirmed against ZooKeeper yet.
	ErrNotSynced = errors.New("cache: serving the persisted snapshot; not yet synced with ZooKeeper")
	// ErrDisconnected means the client has no ZooKeeper session right now.
	ErrDisconnected = errors.New("cache: no ZooKeeper session")
	// ErrResyncing means the client reconnected and the cache is checking
	// the root again (watches may have missed changes while disconnected).
	ErrResyncing = errors.New("cache: reconnected to ZooKeeper; resyncing")
	// ErrConnClosed means the application closed the connection it gave
	// the cache (WithClient(zkclient.Fixed(conn, sess))); the cache can do
	// nothing more until Close.
	ErrConnClosed = errors.New("cache: the ZooKeeper connection was closed by its owner")
	// ErrRefused means every connection to ZooKeeper was closed during the
	// session handshake for a while: a server wiped or rebuilt on the same
	// address refuses a client that has seen a newer zxid than its own,
	// and the client library retries with that zxid forever. A cache that
	// dials itself (WithServers, WithConfig) or uses a Client from
	// zkclient.Dial replaces the connection; on the application's own
	// connection (zkclient.Fixed) the application must dial a new one.
	ErrRefused = errors.New("cache: ZooKeeper refuses this connection's session (every handshake closed; a wiped or rebuilt server?); a fresh connection is needed")
	// ErrRootMissing means the root znode does not exist; the cache watches
	// for its creation.
	ErrRootMissing = errors.New("cache: config root does not exist")
	// ErrNotPublished means the root exists but holds no manifest yet.
	ErrNotPublished = errors.New("cache: config root has never been published")
	// ErrPublishInProgress means a marker-mode publish is in progress and
	// the cache does not hold the generation committed before it; it waits
	// for the publish to finish.
	ErrPublishInProgress = errors.New("cache: a marker-mode publish is in progress")
	// ErrBackwards means ZooKeeper returned a generation that is not newer
	// than the one held (a lagging server, a different ensemble, or a state
	// file newer than the server). The held snapshot is kept. Use
	// errors.As with *BackwardsError for details.
	ErrBackwards = errors.New("cache: ZooKeeper returned an older generation than the one held")
	// ErrAbandonedMarker means a marker whose publisher is gone (no
	// liveness node; or a marker not written by confpush) is on the root
	// and the live items do not verify against the root's manifest: the
	// held snapshot is kept until the next publish takes the marker over.
	// Use errors.As with *AbandonedMarkerError for details.
	ErrAbandonedMarker = errors.New("cache: an abandoned marker blocks the root")
)

// AbandonedMarkerError describes an abandoned marker that blocks a root. It
// matches ErrAbandonedMarker.
type AbandonedMarkerError struct {
	// Marker is the marker's path.
	Marker string
	// PublishID and Publisher are what the marker names (empty when it
	// was not written by confpush: Foreign).
	PublishID, Publisher string
	Foreign              bool
	// Generation is the root's manifest's generation and Item the first
	// item that does not verify against it.
	Generation int64
	Item       string
}

// Error says what blocks the root and what unblocks it.
func (e *AbandonedMarkerError) Error() string {
	owner := fmt.Sprintf("of publish %s by %s, whose publisher is gone", e.PublishID, e.Publisher)
	if e.Foreign {
		owner = "not written by confpush"
	}
	return fmt.Sprintf("cache: an abandoned marker %s (%s) blocks the root: item %q does not match the manifest of generation %d; keeping the held snapshot until the next confpush publish takes the marker over",
		e.Marker, owner, e.Item, e.Generation)
}

// Is makes an *AbandonedMarkerError match ErrAbandonedMarker.
func (e *AbandonedMarkerError) Is(target error) bool { return target == ErrAbandonedMarker }

// BackwardsError describes a generation the cache refused because it is not
// newer than the one it holds. It matches ErrBackwards.
type BackwardsError struct {
	// HeldGeneration and HeldZxid identify the snapshot kept.
	HeldGeneration, HeldZxid int64
	// SeenGeneration and SeenZxid are what the root held.
	SeenGeneration, SeenZxid int64
}

// Error describes both generations.
func (e *BackwardsError) Error() string {
	return fmt.Sprintf("cache: ZooKeeper returned generation %d (zxid 0x%x), not newer than the held generation %d (zxid 0x%x); keeping the held snapshot",
		e.SeenGeneration, e.SeenZxid, e.HeldGeneration, e.HeldZxid)
}

// Is makes a *BackwardsError match ErrBackwards.
func (e *BackwardsError) Is(target error) bool { return target == ErrBackwards }

package cache

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/logfilter"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Defaults of the options.
const (
	// DefaultResyncInterval is the period of the safety-net resync.
	DefaultResyncInterval = 10 * time.Minute
	// DefaultFetchConcurrency is how many item reads are in flight at once:
	// every changed item of a publish of up to 64 (the publisher's own
	// batch) in one round trip, as confd's backends read theirs. An item
	// read in flight costs a goroutine; its data the snapshot holds anyway.
	DefaultFetchConcurrency = 64
	// DefaultSessionTimeout is the session timeout of a connection the
	// cache dials itself when none is given.
	DefaultSessionTimeout = 10 * time.Second
)

// Option configures New.
type Option func(*options) error

type options struct {
	cfg       *zkclient.Config
	client    *zkclient.Client
	meta      string
	stateFile string
	// durableBarrier: hand a snapshot out while its state is written
	// (WithDurableBarrier).
	durableBarrier bool
	log            *slog.Logger
	resync         time.Duration
	jitter         time.Duration
	concurrency    int
	onUpdate       func(*Snapshot)
	incarnation    IncarnationPolicy
	// id and labels: the member identity matched against a canary's
	// selection (WithLabels); id "" follows the stable generation.
	id     string
	labels map[string]string
	// clock orders the root reads of a Group's members and the group's
	// confirms (nil outside a Group: a lone cache pays nothing).
	clock *atomic.Uint64
	// groupOwned: client was dialled by the Group, which shares it among
	// its members; each closes it (Client.Close is idempotent).
	groupOwned bool
	// rootOpts: a Group's options for one of its roots (WithRootOptions).
	rootOpts map[string][]Option
	// refusedReport: how long handshakes must have failed before the state
	// says ErrRefused (refusedReport; tests shorten it).
	refusedReport time.Duration
}

func defaultOptions() options {
	return options{
		meta:          layout.DefaultMeta,
		resync:        DefaultResyncInterval,
		concurrency:   DefaultFetchConcurrency,
		refusedReport: refusedReport,
	}
}

// WithServers makes the cache dial its own connection to servers
// ("host:port") with the given session timeout (DefaultSessionTimeout when
// zero). The cache owns that connection: it survives session expiry by
// carrying on with the client's new session, and Close closes it.
func WithServers(servers []string, sessionTimeout time.Duration) Option {
	return func(o *options) error {
		if sessionTimeout == 0 {
			sessionTimeout = DefaultSessionTimeout
		}
		return o.setConfig(zkclient.Config{Servers: servers, SessionTimeout: sessionTimeout})
	}
}

// WithConfig makes the cache dial its own connection with cfg (servers,
// session timeout, auth, TLS). Like WithServers, the cache owns it.
func WithConfig(cfg zkclient.Config) Option {
	return func(o *options) error { return o.setConfig(cfg) }
}

func (o *options) setConfig(cfg zkclient.Config) error {
	if o.cfg != nil || o.client != nil {
		return errors.New("cache: give exactly one of WithServers, WithConfig or WithClient")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	o.cfg = &cfg
	return nil
}

// WithClient makes the cache use a Client the application owns and shares
// (the cache never closes it). After a session expiry the cache reports
// StateExpired and resyncs on the client's new session, and leaves every
// other consequence of the expiry to the application.
//
// A Client from zkclient.Dial replaces its connection when the servers
// refuse its session (every handshake closed for a while: a server wiped
// or rebuilt on the same address), and the cache follows the replacement
// (it resyncs in full, as after an expiry). Everything else the
// application keeps on that connection (ephemeral nodes, watches) must
// take the connection from Client.Conn for every unit of work and treat
// the replacement as an expiry.
//
// An application's own connection goes in as zkclient.Fixed(conn, sess),
// sess tracking that connection (the application dials with
// zk.WithEventCallback(sess.Callback), sess from zkclient.NewSession, or
// with zkclient.DialConn). Such a client is never replaced: when the
// servers refuse its session the cache reports ErrRefused and can do
// nothing more on it; the application must dial a new connection and
// start a new cache on it.
func WithClient(cl *zkclient.Client) Option {
	return func(o *options) error {
		if cl == nil || cl.Conn() == nil || cl.Session() == nil {
			return errors.New("cache: WithClient needs a client with its connection and its session tracker")
		}
		if o.cfg != nil || o.client != nil {
			return errors.New("cache: give exactly one of WithServers, WithConfig or WithClient")
		}
		o.client = cl
		return nil
	}
}

// WithMeta sets the metadata path of the zkconf layout ("/zkconf" by
// default). Besides the root, its items and its marker, the
// cache reads under it only the liveness node of the publish a marker
// names (to tell a live marker-mode publish from an abandoned marker), so
// it must be the publishers' metadata path.
func WithMeta(meta string) Option {
	return func(o *options) error {
		if err := layout.ValidateRoot(meta); err != nil {
			return fmt.Errorf("cache: meta path: %w", err)
		}
		o.meta = meta
		return nil
	}
}

// WithStateFile persists every applied snapshot, before it is handed out
// (or, with WithDurableBarrier, before Snapshot.Durable returns), at path and makes New start from it, so that a process restarted while
// ZooKeeper is down serves its last good config. path is a small commit
// file naming the generation; the items' contents are kept beside it in
// one append-only pack in the directory path + ".d", so an apply appends
// only the items that changed and creates no file (files mode 0600,
// directories created 0700). A state that is torn, incomplete or corrupt is
// ignored as a whole (logged); the previous layouts (a file per content,
// or a single file) are read and converted by New. A write that fails (a full disk) is logged
// and counted (Stats.PersistErrors), and the older state is removed before
// the snapshot is handed out (before Durable returns), so a restart never
// starts from a generation older than one already handed out; it waits
// for ZooKeeper instead. Only when that removal fails too does Durable
// return an error (ErrNotPersisted).
func WithStateFile(path string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("cache: empty state file path")
		}
		o.stateFile = path
		return nil
	}
}

// WithDurableBarrier makes a cache with a state file (WithStateFile) hand
// each snapshot out while its state is still being written, instead of
// after: a consumer can prepare its effect of the snapshot (render and
// stage files, say) while the state is made durable, and must call
// Snapshot.Durable before anything it does with the snapshot becomes
// visible, and not act on it when Durable fails. What a restart starts
// from is then never older than what any consumer showed, as without the
// option, with the persist off the consumer's critical path. Without a
// state file the option changes nothing.
func WithDurableBarrier() Option {
	return func(o *options) error {
		o.durableBarrier = true
		return nil
	}
}

// WithLogger sets the logger: the cache logs its state transitions,
// reconnects and resyncs at INFO, what needs attention (a refused
// generation, an ignored state file, no permission, a failed write) at
// WARN and ERROR, and its reads at DEBUG. Item contents are never logged.
// Without WithLogger the cache logs WARN and ERROR only, to
// slog.Default()'s handler: a library does not fill the application's log
// with its routine, but what an operator must act on is not lost.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		o.log = l
		return nil
	}
}

// WithResyncInterval sets the period of the safety-net resync: a full
// resync, even when no watch fired, after d without any cycle
// (DefaultResyncInterval; each period is jittered by ±10%). Zero or
// negative disables it. The package documentation lists every resync rule.
func WithResyncInterval(d time.Duration) Option {
	return func(o *options) error {
		o.resync = d
		return nil
	}
}

// WithResyncJitter delays the resync after a reconnect or a session expiry
// by a random duration up to max, so that a fleet of caches does not hit
// the ensemble at the same instant (herd effect). Default 0; agents running
// on many hosts should set a few seconds.
func WithResyncJitter(max time.Duration) Option {
	return func(o *options) error {
		if max < 0 {
			return errors.New("cache: negative resync jitter")
		}
		o.jitter = max
		return nil
	}
}

// WithFetchConcurrency sets how many item reads are in flight at once
// (DefaultFetchConcurrency).
func WithFetchConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("cache: fetch concurrency %d is not positive", n)
		}
		o.concurrency = n
		return nil
	}
}

// WithOnUpdate calls fn with every snapshot the cache applies, in order,
// on a goroutine of its own: the cache never waits for fn. If fn is slower
// than the updates, intermediate snapshots are skipped and fn gets the
// newest one (like Updates). fn must not call Close.
func WithOnUpdate(fn func(*Snapshot)) Option {
	return func(o *options) error {
		o.onUpdate = fn
		return nil
	}
}

// WithLabels makes the cache follow the root as a member of canary
// rollouts (docs/design.md, "Canary rollouts"): id is the member's id (its
// percentage bucket, manifest.Bucket, and its "agent" label) and labels
// are the labels a canary's selector is matched with (include "hostname"
// to be matched by it; "agent" is set to id and may not be given). A cache
// in a rollout's selection follows the candidate generation, and keeps it
// until the rollout ends even when it is no longer selected (never
// backwards); a cache without WithLabels follows the stable generation.
// Snapshot.Candidate tells which one a snapshot is.
func WithLabels(id string, labels map[string]string) Option {
	return func(o *options) error {
		if id == "" {
			return errors.New("cache: WithLabels needs a member id")
		}
		if _, ok := labels[manifest.LabelAgent]; ok {
			return fmt.Errorf("cache: label %q is the member id and may not be given", manifest.LabelAgent)
		}
		o.id, o.labels = id, maps.Clone(labels)
		return nil
	}
}

// defaultLogger is the logger without WithLogger: slog.Default()'s
// handler, WARN and above.
func defaultLogger() *slog.Logger {
	return slog.New(logfilter.AtLeast(slog.Default().Handler(), slog.LevelWarn))
}

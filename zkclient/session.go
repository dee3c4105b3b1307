package zkclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/errlist"
)

// Config says how to reach ZooKeeper.
type Config struct {
	// Servers are host:port addresses.
	Servers []string
	// SessionTimeout is the requested session timeout; the server clamps it
	// to [2, 20] ticks.
	SessionTimeout time.Duration
	// Auth, when set, is added as digest credentials ("user:password") and
	// re-sent by the client on every reconnect.
	Auth string
	// ExtraAuth are more digest identities added to the same session
	// after Auth (a session may carry several: confagent following roots
	// that each have an identity of their own).
	ExtraAuth []string
	// TLS, when set, dials every server over TLS with this configuration.
	TLS *tls.Config
	// Logger receives the client library's messages at debug level.
	Logger *slog.Logger
	// RedialAfter is how long every session handshake must have failed
	// before a Client replaces its connection (Status.Refused); the
	// session timeout when zero, at least 2s.
	RedialAfter time.Duration
	// LazyResolve keeps every server in the list whether or not its name
	// resolves, and has each connection attempt resolve the name again
	// (the dialer does), instead of resolving every name once and failing
	// the dial when one does not resolve (the go-zookeeper default). For
	// long-running processes that must start while DNS is down, or with
	// one stale name among several (confagent); a command is better told
	// at once (Diagnose names the server and the DNS error).
	LazyResolve bool
}

// Validate reports whether the configuration can be dialled.
func (c Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("no ZooKeeper servers given"))
	}
	for _, s := range c.Servers {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("ZooKeeper server %q is not host:port", s))
		}
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("session timeout %v is negative", c.SessionTimeout))
	}
	return errlist.Join(errs...)
}

// DialConn connects to ZooKeeper and returns the connection and its Session
// tracker. Like zk.Connect it does not wait for a session: use
// Session.WaitConnected, or let the first request wait.
func DialConn(cfg Config) (*zk.Conn, *Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	s := NewSession()
	conn, err := dial(cfg, s.Callback)
	if err != nil {
		return nil, nil, err
	}
	return conn, s, nil
}

// dial is Dial with the event callback given: a Client forwards only the
// current connection's events to its Session. The credentials are added
// before it returns: it fails when no server answers.
func dial(cfg Config, callback func(zk.Event)) (*zk.Conn, error) {
	conn, err := connect(cfg, callback)
	if err != nil {
		return nil, err
	}
	if err := addAuth(conn, cfg); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ZooKeeper authentication: %w", err)
	}
	return conn, nil
}

// credentials are the digest identities cfg adds: Auth, then ExtraAuth.
func (c Config) credentials() []string {
	var out []string
	for _, a := range append([]string{c.Auth}, c.ExtraAuth...) {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

// addAuth adds every identity of cfg to conn.
func addAuth(conn *zk.Conn, cfg Config) error {
	for _, a := range cfg.credentials() {
		if err := conn.AddAuth("digest", []byte(a)); err != nil {
			return err
		}
	}
	return nil
}

// connect opens the connection (TLS checked first), without credentials.
func connect(cfg Config, callback func(zk.Event)) (*zk.Conn, error) {
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := options(
		zk.WithEventCallback(callback),
		zk.WithLogger(slogPrintf{log}),
		zk.WithLogInfo(false),
	)
	if cfg.LazyResolve {
		opts = append(opts, zk.WithHostProvider(&lazyHosts{}))
	}
	if cfg.TLS == nil {
		// TLS buffers its records itself.
		opts = append(opts, zk.WithDialer(dialBuffered))
	} else {
		tcfg := cfg.TLS
		names := serverNames(cfg.Servers)
		// A wrong CA or server name would otherwise show only as a client
		// retrying forever; one handshake up front turns it into an error.
		if err := probeTLS(cfg.Servers, tcfg, names); err != nil {
			return nil, err
		}
		opts = append(opts, zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			c := tcfg.Clone()
			// The default host provider resolves names to IPs once, so the
			// address dialled is an IP: verify against the configured name
			// (or the host the operator wrote), never the IP.
			if c.ServerName == "" {
				c.ServerName = names[address]
				if c.ServerName == "" {
					c.ServerName, _, _ = net.SplitHostPort(address)
				}
			}
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
		}))
	}
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %s: %w", strings.Join(cfg.Servers, ","), err)
	}
	return conn, nil
}

// options collects client options in a slice; the client's option type is
// unexported, so it can only be named through inference.
func options[T any](v ...T) []T { return v }

type slogPrintf struct{ l *slog.Logger }

func (p slogPrintf) Printf(format string, args ...interface{}) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "zk-client")
}

// Status is a point-in-time view of a session.
type Status struct {
	// State is the client's last reported state.
	State zk.State
	// Connected is true while the client has a live session.
	Connected bool
	// Epoch counts sessions gained (StateHasSession events, including
	// reconnects within one session): a reader that saw Epoch e and now
	// sees e' > e knows it was disconnected in between and must resync.
	Epoch uint64
	// Expiries counts session expiries seen.
	Expiries uint64
	// Since is when State was entered.
	Since time.Time
	// HandshakeFailures counts the connections, since the last session,
	// that reached a server (StateConnected) and were closed before a
	// session was established (see Refused). 0 while a session exists.
	HandshakeFailures uint64
	// FailingSince is when the first of those failures happened (zero when
	// HandshakeFailures is 0).
	FailingSince time.Time
	// Replaced counts the connections a Client replaced by a fresh one
	// (each is also counted in Expiries: the old session is gone).
	Replaced uint64
	// Attempts counts the connection attempts since the last session (the
	// client's StateConnecting events: it tries the next server after
	// each failure); 0 while a session exists. Attempts above the number
	// of servers mean every server was tried and none gave a session.
	Attempts uint64
}

// Refused reports whether the servers look like they refuse this client's
// session: at least minFailures handshake failures in a row, the first at
// least bound ago, and no session since. A ZooKeeper server whose data is
// older than the zxid the client has seen (a server wiped or rebuilt, or
// one left behind by its ensemble) logs "Refusing session request for
// client ... as it has seen zxid ..." and closes the socket: the
// go-zookeeper client then reconnects with the same last zxid forever,
// showing only StateConnecting, StateConnected, StateDisconnected, round
// after round. Only a fresh client (last zxid 0) gets a session.
//
// A server without quorum, or still starting, closes the socket in the same
// way; bound keeps such a pause from looking like a refusal, and a false
// positive only costs a fresh client: a new session (ephemeral nodes
// re-created, a full resync).
func (st Status) Refused(minFailures int, bound time.Duration) bool {
	// HandshakeFailures only grows from 0: compare in int64, which holds
	// any count a process reaches.
	return !st.Connected && int64(st.HandshakeFailures) >= int64(max(minFailures, 1)) && // #nosec G115 -- a count of failed handshakes
		!st.FailingSince.IsZero() && time.Since(st.FailingSince) >= bound
}

// Session tracks a connection's state from the client's event callback. It
// never blocks the callback and never calls the connection.
type Session struct {
	mu      sync.Mutex
	st      Status
	tcpUp   bool              // StateConnected seen, no session yet: a handshake is running
	changed chan struct{}     // closed and replaced on every change
	wake    []chan<- struct{} // Notify's channels, sent to on every change
}

// NewSession returns a tracker; pass its Callback to zk.WithEventCallback.
// DialConn does that; applications dialling themselves can do the same.
func NewSession() *Session {
	return &Session{st: Status{State: zk.StateDisconnected, Since: time.Now()}, changed: make(chan struct{})}
}

// Callback records session events. It is safe to pass to
// zk.WithEventCallback: it does not block and does not call the connection.
func (s *Session) Callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		s.st.Connected = true
		s.st.Epoch++
		s.st.HandshakeFailures, s.st.FailingSince, s.tcpUp = 0, time.Time{}, false
		s.st.Attempts = 0
	case zk.StateExpired:
		// The server answered the handshake (with "no such session"): not
		// a refusal.
		s.st.Connected = false
		s.st.Expiries++
		s.tcpUp = false
	case zk.StateDisconnected, zk.StateConnecting, zk.StateAuthFailed:
		s.st.Connected = false
		if ev.State == zk.StateConnecting {
			s.st.Attempts++
		}
		if s.tcpUp {
			// The socket closed during the handshake.
			s.tcpUp = false
			s.st.HandshakeFailures++
			if s.st.FailingSince.IsZero() {
				s.st.FailingSince = time.Now()
			}
		}
	case zk.StateConnected:
		// TCP only; a session is not there yet.
		s.tcpUp = true
	default:
	}
	s.st.State = ev.State
	s.st.Since = time.Now()
	s.signal()
}

// signal reports a change (s.mu held): the channel Changed returned is
// closed, and every channel Notify registered is sent to.
func (s *Session) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
	for _, ch := range s.wake {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// Notify has every change of the status (every close of a channel
// Changed returned) also send on ch, without blocking, until stop is
// called: with a one-slot ch, a wake-up is pending from the first change
// until it is received. A loop that waits for several reasons on a
// channel of its own (the cache's sync loop: Close, Adopt, its timer)
// can then wait for the session's changes on the same channel instead
// of also selecting on Changed, and take Status after each wake-up. A
// select's cost grows with its channels, and a process with a thousand
// caches waits once per publish in each.
func (s *Session) Notify(ch chan<- struct{}) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake = append(s.wake, ch)
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if i := slices.Index(s.wake, ch); i >= 0 {
				s.wake = slices.Delete(s.wake, i, i+1)
			}
		})
	}
}

// replaced records that a Client swapped the connection for a fresh one:
// the old session is gone for the Session's readers (an expiry: watches
// lost, ephemeral nodes to re-create), and the failure count starts over.
func (s *Session) replaced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Connected = false
	s.st.Expiries++
	s.st.Replaced++
	s.st.HandshakeFailures, s.st.FailingSince, s.tcpUp = 0, time.Time{}, false
	s.st.Attempts = 0
	s.st.State = zk.StateExpired
	s.st.Since = time.Now()
	s.signal()
}

// Status returns the current status.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Changed returns a channel that is closed at the next state change.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// WaitConnected waits until the connection has a session.
func (s *Session) WaitConnected(ctx context.Context) (Status, error) {
	for {
		s.mu.Lock()
		st, ch := s.st, s.changed
		s.mu.Unlock()
		if st.Connected {
			return st, nil
		}
		if st.State == zk.StateAuthFailed {
			return st, ErrAuthFailed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, fmt.Errorf("waiting for a ZooKeeper session (state %v): %w", st.State, ctx.Err())
		}
	}
}

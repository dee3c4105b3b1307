package zkclient

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// minRedialAfter is the smallest refusal bound a Client uses: a server that
// is starting, or an ensemble electing a leader, closes handshakes for a
// moment too.
const minRedialAfter = 2 * time.Second

// Client owns a ZooKeeper connection and replaces it with a fresh one when
// the servers refuse its session (Status.Refused). Its Session is stable
// across replacements: it follows the current connection only, and counts a
// replacement as an expiry (the old session, its watches and its ephemeral
// nodes are gone), so every reader of the Session resyncs and re-registers
// as it does after an expiry. Callers take the connection from Conn for
// every unit of work and never keep it across a Session change.
//
// Why: a ZooKeeper server refuses a client that has seen a newer zxid than
// its own (a server wiped or rebuilt on the same address), and the
// go-zookeeper client retries forever with that zxid; it only resets it
// after the server answers "session expired", which a refusing server
// never does. A fresh client starts from zxid 0.
//
// Detection: every connection since the last session reached a server and
// was closed during the handshake, at least once per configured server,
// for longer than the bound (Config.RedialAfter, by default the session
// timeout: by then the old session has expired on any ensemble with a
// quorum, so replacing the client loses nothing that was not lost already).
// An ensemble without quorum also accepts connections and closes them; a
// replacement then costs a new session when the quorum is back (its
// ephemeral status node is re-created; the old one goes when the old
// session expires). Never-backwards does not depend on the connection:
// readers still refuse older generations.
type Client struct {
	cfg   Config
	log   *slog.Logger
	sess  *Session
	bound time.Duration
	min   int

	gen atomic.Uint64 // the connection whose events the Session follows

	// authMu guards the credentials gate: while the first connection's
	// credentials are not yet in place (ZooKeeper was unreachable when
	// Dial added them), its session events are held back from the
	// Session, whose readers therefore send nothing that would go out
	// without them; held is the latest one.
	authMu      sync.Mutex
	authPending bool
	held        *zk.Event

	mu     sync.Mutex
	conn   *zk.Conn
	closed bool

	stop    chan struct{}
	done    chan struct{}
	closing sync.WaitGroup // replaced connections being closed
}

// Dial dials like DialConn and returns a Client that replaces the
// connection when the servers refuse its session. Close it when done.
// Unlike DialConn it does not fail when no server answers the credentials
// (cfg.Auth): it adds them as soon as one does, and its Session reports no
// session until they are in place, so that readers that wait for one (the
// cache, the agent's status node) never send a request without them.
func Dial(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	bound := cfg.RedialAfter
	if bound <= 0 {
		bound = cfg.SessionTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: log, sess: NewSession(), bound: max(bound, minRedialAfter),
		min: max(2, len(cfg.Servers)), stop: make(chan struct{}), done: make(chan struct{})}
	c.authPending = len(cfg.credentials()) > 0
	conn, err := connect(cfg, c.callback(0))
	if err != nil {
		return nil, err
	}
	c.conn = conn
	if c.authPending {
		err := addAuth(conn, cfg)
		switch {
		case err == nil:
			c.openAuthGate()
		case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrConnectionClosed):
			// No server answered: the credentials go in as soon as one
			// does, before the Session reports a session to anyone. A
			// host booting while ZooKeeper is down renders its last good
			// config meanwhile.
			log.Warn("ZooKeeper unreachable: the credentials are added when a server answers", "error", err)
			c.closing.Add(1)
			go c.authenticate(conn)
		default:
			conn.Close()
			return nil, fmt.Errorf("ZooKeeper authentication: %w", err)
		}
	}
	go c.run()
	return c, nil
}

// authenticate adds the credentials to the first connection until a server
// answers, then lets its session events through.
func (c *Client) authenticate(conn *zk.Conn) {
	defer c.closing.Done()
	for {
		err := addAuth(conn, c.cfg)
		if err == nil {
			c.openAuthGate()
			return
		}
		if errors.Is(err, zk.ErrClosing) {
			return
		}
		c.log.Debug("ZooKeeper credentials not added yet", "error", err)
		select {
		case <-c.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// openAuthGate lets the connection's session events through, the latest
// one held back first.
func (c *Client) openAuthGate() {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	c.authPending = false
	if c.held != nil {
		c.sess.Callback(*c.held)
		c.held = nil
	}
}

// Fixed wraps a connection the application owns, with its tracker, as a
// Client that never replaces it: it reports a refusal (Refused) and leaves
// the redial to the owner.
func Fixed(conn *zk.Conn, sess *Session) *Client {
	c := &Client{conn: conn, sess: sess, stop: make(chan struct{}), done: make(chan struct{})}
	close(c.done)
	return c
}

// Conn returns the current connection.
func (c *Client) Conn() *zk.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

// Session returns the tracker of the current connection (the same value
// for the Client's whole life).
func (c *Client) Session() *Session { return c.sess }

// Redials reports whether the Client replaces a refused connection itself
// (false for Fixed).
func (c *Client) Redials() bool { return c.cfg.Servers != nil }

// Closed reports whether Close was called.
func (c *Client) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close closes the current connection and stops replacing it. A Fixed
// client's connection is the application's: Close leaves it open.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	conn := c.conn
	c.mu.Unlock()
	if !c.Redials() {
		return
	}
	close(c.stop)
	<-c.done
	conn.Close()
	c.closing.Wait()
}

func (c *Client) callback(gen uint64) func(zk.Event) {
	return func(ev zk.Event) {
		if c.gen.Load() != gen {
			return
		}
		c.authMu.Lock()
		defer c.authMu.Unlock()
		if c.authPending && gen == 0 && ev.Type == zk.EventSession {
			c.held = &ev
			return
		}
		c.sess.Callback(ev)
	}
}

// run replaces the connection whenever the Session says it is refused.
func (c *Client) run() {
	defer close(c.done)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		changed := c.sess.Changed()
		st := c.sess.Status()
		var wake <-chan time.Time
		if st.Refused(c.min, c.bound) {
			c.redial(st)
			continue
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if st.HandshakeFailures > 0 && !st.Connected {
			timer = time.NewTimer(max(c.bound-time.Since(st.FailingSince), 10*time.Millisecond))
			wake = timer.C
		}
		select {
		case <-c.stop:
			return
		case <-changed:
		case <-wake:
		}
	}
}

// redial swaps in a fresh connection. The Session stops following the old
// one first, so its closing events are not mistaken for the new one's.
func (c *Client) redial(st Status) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	gen := c.gen.Add(1)
	// Before dialling: with credentials, dial waits for the new session,
	// whose StateHasSession must land after the replacement.
	c.sess.replaced()
	conn, err := dial(c.cfg, c.callback(gen))
	if err != nil {
		c.gen.Add(^uint64(0)) // keep following the old connection
		c.mu.Unlock()
		c.log.Warn("ZooKeeper refuses this client's session and a fresh client could not be dialled; retrying", "error", err)
		select {
		case <-c.stop:
		case <-time.After(c.bound):
		}
		return
	}
	old := c.conn
	c.conn = conn
	c.mu.Unlock()
	c.log.Warn("ZooKeeper closed every session handshake of this client: a server whose data is older than what this client has seen (wiped or rebuilt) refuses it; replaced it with a fresh client (new session)",
		"failures", st.HandshakeFailures, "failing_for", time.Since(st.FailingSince).Round(time.Second), "last_server", old.Server())
	c.closing.Add(1)
	go func() {
		defer c.closing.Done()
		old.Close() // up to a second: it tries to say goodbye
	}()
}

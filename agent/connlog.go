package agent

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// connProbeTimeout bounds one probe of a lost server; connProbeWindow is
// how long a server that still accepts connections is probed again (a
// server stopping gracefully closes its clients' connections before its
// listening socket), every connProbeEvery.
const (
	connProbeTimeout = 3 * time.Second
	connProbeWindow  = 5 * time.Second
	connProbeEvery   = 250 * time.Millisecond
)

// logConnection logs the loss of the ZooKeeper connection at WARN, naming
// the server that held the session and the cause, and its return at INFO,
// until ctx ends. It returns a function that stops it and waits.
//
// The cause comes from a probe: the client library only says that a
// connection ended (its socket's error is not reported for an EOF), while a
// TCP dial to the lost server tells "connection refused" (the server is
// down), a DNS or routing failure, or a timeout (a network fault); a dial
// that succeeds means the server is up but dropped the session's
// connection (restarting, without quorum, or a fault on the path). The
// server is remembered while the session is up: once it is lost, the
// client already dials the next one.
func (d *Daemon) logConnection(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sess := d.zk.Session()
		var (
			up       bool
			server   string
			epoch    uint64
			expiries = sess.Status().Expiries
			lostAt   time.Time
		)
		for {
			changed := sess.Changed()
			st := sess.Status()
			switch {
			case st.Connected && up && st.Epoch != epoch:
				// Lost and back between two looks.
				d.log.Warn("lost the ZooKeeper connection", "server", server, "cause", "the connection closed and the client reconnected at once")
				fallthrough
			case st.Connected && !up:
				up, epoch = true, st.Epoch
				server = d.zk.Conn().Server()
				if !lostAt.IsZero() {
					d.log.Info("ZooKeeper connection restored", "server", server, "down_for", time.Since(lostAt))
				}
				lostAt = time.Time{}
			case !st.Connected && up:
				up, lostAt = false, time.Now()
				cause := d.lossCause(ctx, server)
				if st.Expiries != expiries {
					cause = "session expired; " + cause
				}
				d.log.Warn("lost the ZooKeeper connection", "server", server, "cause", cause)
			}
			expiries = st.Expiries
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// lossCause probes server until it refuses (or fails otherwise), the
// session is back, or connProbeWindow has passed, and returns the last
// probe's answer.
func (d *Daemon) lossCause(ctx context.Context, server string) string {
	deadline := time.Now().Add(connProbeWindow)
	for {
		cause, reached := probeServer(ctx, server)
		if !reached || time.Now().After(deadline) || d.zk.Session().Status().Connected {
			return cause
		}
		select {
		case <-ctx.Done():
			return cause
		case <-time.After(connProbeEvery):
		}
	}
}

// probeServer dials server once and says what that tells about a lost
// connection; reached is true when the dial succeeded.
func probeServer(ctx context.Context, server string) (cause string, reached bool) {
	if server == "" {
		return "unknown (no server recorded)", false
	}
	ctx, cancel := context.WithTimeout(ctx, connProbeTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", server)
	if err == nil {
		_ = c.Close() // a probe: only whether it connected matters
		return "the server accepts connections but closed this one (restarting, without quorum, or a network fault)", true
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "not probed (stopping)", false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) {
		// A listening socket being torn down (a process dying) resets
		// connections before it refuses them: probe again.
		return "the server reset the connection (stopping or restarting)", true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		// "connect: connection refused", "i/o timeout", a DNS error: the
		// server's address is logged beside it already.
		return op.Err.Error(), false
	}
	return err.Error(), false
}

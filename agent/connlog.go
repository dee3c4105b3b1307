package agent

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/zkclient"
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

// unreachableFirst is how long the agent goes without a session before it
// diagnoses every server even though the client has not tried each one
// yet (a blackholed server costs the client a connect timeout per
// attempt); diagnoseTimeout bounds one diagnosis; unreachableAgain spaces
// the diagnoses (and their WARN) while no server gives a session.
const (
	unreachableFirst = 5 * time.Second
	diagnoseTimeout  = 5 * time.Second
)

var unreachableAgain = backoff.Policy{Base: 10 * time.Second, Max: 5 * time.Minute}

// ErrUnreachable matches the error Once and Plan return when no ZooKeeper
// server gave a session although every one was tried: the error names
// each server and its cause (connection refused, a DNS error, a TLS
// error, refused credentials).
var ErrUnreachable = errors.New("cannot reach ZooKeeper")

// watchConnection follows the ZooKeeper session from NewDaemon to Close
// and says what happens to it, since the client library only ever reports
// "connecting":
//
//   - a lost connection is logged at WARN, naming the server that held
//     the session and the cause (lossCause), and its return at INFO;
//   - while there is no session and every server was tried (or for
//     unreachableFirst), every server is diagnosed (zkclient.Diagnose:
//     name lookup, TCP connect, TLS handshake) and a WARN "cannot reach
//     ZooKeeper" names each one's cause, again with backoff for as long as
//     it lasts. The last diagnosis is what /readyz, /status (zk_unreachable)
//     and Once report, until a session is established.
//
// It returns a function that stops it and waits.
func (d *Daemon) watchConnection() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	zcfg := d.opts.ZK
	go func() {
		defer close(done)
		sess := d.zk.Session()
		var (
			up        bool
			server    string
			epoch     uint64
			expiries  = sess.Status().Expiries
			lostAt    time.Time
			downSince = time.Now()
			diagnosed int       // diagnoses since the session was lost (or since start)
			nextDiag  time.Time // when the next one is due, once there was one
			timer     *time.Timer
		)
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		servers := len(zcfg.Servers)
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
				switch {
				case !lostAt.IsZero():
					d.log.Info("ZooKeeper connection restored", "server", server, "down_for", time.Since(lostAt))
				case diagnosed > 0:
					d.log.Info("connected to ZooKeeper", "server", server, "after", time.Since(downSince))
				}
				lostAt, diagnosed = time.Time{}, 0
				d.setUnreachable("")
			case !st.Connected && up:
				up, lostAt, downSince, diagnosed = false, time.Now(), time.Now(), 0
				cause := d.lossCause(ctx, server)
				if st.Expiries != expiries {
					cause = "session expired; " + cause
				}
				d.log.Warn("lost the ZooKeeper connection", "server", server, "cause", cause)
			}
			expiries = st.Expiries
			if timer != nil {
				timer.Stop()
				timer = nil
			}
			var wake <-chan time.Time
			if !up {
				due := time.Now().After(nextDiag)
				if diagnosed == 0 {
					// Every server tried (the client pauses after a round),
					// refused credentials, or long enough.
					due = st.Attempts > uint64(servers) || st.State == zk.StateAuthFailed || time.Since(downSince) >= unreachableFirst // #nosec G115 -- a count of servers
					nextDiag = downSince.Add(unreachableFirst)
				}
				if due {
					diagnosed++
					d.diagnose(ctx, zcfg, diagnosed, downSince)
					// The deadline is kept across the session's events (an
					// attempt per second): only a diagnosis moves it.
					nextDiag = time.Now().Add(unreachableAgain.Delay(diagnosed))
					continue // the session may have come meanwhile
				}
				timer = time.NewTimer(max(time.Until(nextDiag), time.Millisecond))
				wake = timer.C
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-wake:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// diagnose probes every server, records the result for /readyz, /status
// and Once, and logs it, unless a session came meanwhile.
func (d *Daemon) diagnose(ctx context.Context, zcfg zkclient.Config, n int, since time.Time) {
	pctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	causes := zkclient.Diagnose(pctx, zcfg)
	st := d.zk.Session().Status()
	if ctx.Err() != nil || st.Connected {
		return
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = c.Error()
	}
	why := strings.Join(parts, "; ")
	if st.State == zk.StateAuthFailed {
		why = "the servers refused the credentials (zookeeper.auth_file, $ZKCONF_AUTH); " + why
	}
	d.setUnreachable(why)
	d.log.Warn("cannot reach ZooKeeper", "servers", why, "for", time.Since(since), "next_check_within", unreachableAgain.Ceiling(n))
}

// setUnreachable records the last diagnosis ("" once a session is up) and
// wakes whoever waits on connChanged.
func (d *Daemon) setUnreachable(why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unreachable == why {
		return
	}
	d.unreachable = why
	close(d.connWake)
	d.connWake = make(chan struct{})
}

// unreachableNow returns the last diagnosis of an unreachable ZooKeeper
// ("" while a session is up or before the first diagnosis) and a channel
// closed at its next change.
func (d *Daemon) unreachableNow() (string, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unreachable, d.connWake
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

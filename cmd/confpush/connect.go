package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// defaultConnectTimeout bounds the wait for a first session: long enough
// for a leader election, short enough that an operator is not left staring
// at a silent terminal.
const defaultConnectTimeout = 10 * time.Second

// connectingNotice is how long a terminal stays silent before confpush says
// whom it is trying to reach.
const connectingNotice = time.Second

// unreachableError is ZooKeeper not giving a session within the connect
// timeout, with each server's cause (exit 1).
type unreachableError struct {
	timeout time.Duration // waited for a session; 0 when the dial itself failed
	servers []*zkclient.ServerError
	cause   error
}

func (e unreachableError) Error() string {
	causes := make([]string, len(e.servers))
	for i, s := range e.servers {
		causes[i] = s.Error()
	}
	if e.timeout == 0 {
		return "cannot reach ZooKeeper: " + strings.Join(causes, "; ")
	}
	return fmt.Sprintf("cannot reach ZooKeeper within %v: %s", e.timeout, strings.Join(causes, "; "))
}

func (e unreachableError) Unwrap() []error {
	errs := []error{e.cause}
	for _, s := range e.servers {
		errs = append(errs, s)
	}
	return errs
}

// dialWith connects with cfg and waits, at most the connect timeout, for a
// session. Without one it probes every server and names each one's cause:
// the client library only ever says "connecting". The client keeps that one
// connection (a command fails rather than carry on in a fresh session
// behind the operator's back); close it with cl.Conn().Close().
func (a *app) dialWith(ctx context.Context, cfg zkclient.Config) (*zkclient.Client, error) {
	conn, sess, err := a.openConn(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return a.awaitSession(ctx, cfg, conn, sess)
}

// openConn is dialWith's first half: the connection, whose session may
// not be established yet (zkclient.DialConn: the credentials, when there
// are some, are added before it returns, so a request queued on conn
// after it goes out after them).
func (a *app) openConn(ctx context.Context, cfg zkclient.Config) (*zk.Conn, *zkclient.Session, error) {
	conn, sess, err := zkclient.DialConn(cfg)
	if err != nil {
		if errors.Is(err, zkclient.ErrTLS) {
			return nil, nil, fmt.Errorf("cannot reach ZooKeeper at %s: %w", strings.Join(cfg.Servers, ","), err)
		}
		// A name that does not resolve fails the dial itself, and names
		// only the first such server: probe them all.
		return nil, nil, a.unreachable(ctx, cfg, 0, err)
	}
	return conn, sess, nil
}

// awaitSession is dialWith's second half: it waits for conn's session
// and closes conn when none comes.
func (a *app) awaitSession(ctx context.Context, cfg zkclient.Config, conn *zk.Conn, sess *zkclient.Session) (*zkclient.Client, error) {
	timeout := a.v.GetDuration("connect-timeout")
	servers := strings.Join(cfg.Servers, ",")
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := a.announce(a.stderr, servers)
	_, err := sess.WaitConnected(cctx)
	stop()
	if err == nil {
		return zkclient.Fixed(conn, sess), nil
	}
	conn.Close()
	if errors.Is(err, zkclient.ErrAuthFailed) {
		return nil, fmt.Errorf("ZooKeeper at %s refused the credentials (--auth-file, $ZKCONF_AUTH): %w", servers, err)
	}
	if ctx.Err() != nil {
		// The command's own deadline or an interrupt, not the servers.
		return nil, fmt.Errorf("cannot reach ZooKeeper at %s: %w", servers, err)
	}
	return nil, a.unreachable(ctx, cfg, timeout, err)
}

// unreachable probes every server, for at most 5 seconds beyond the
// connect timeout already spent (not less with a short connect timeout: a
// loaded server takes seconds to answer the TLS probe).
func (a *app) unreachable(ctx context.Context, cfg zkclient.Config, waited time.Duration, cause error) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return unreachableError{timeout: waited, servers: zkclient.Diagnose(pctx, cfg), cause: cause}
}

// announce prints "connecting to ..." on a terminal when no session came
// within a second, and returns the function that stops it.
func (a *app) announce(w io.Writer, servers string) func() {
	if a.json() || !isTerminal(w) {
		return func() {}
	}
	t := time.AfterFunc(connectingNotice, func() {
		fmt.Fprintf(w, "connecting to %s …\n", servers)
	})
	return func() { t.Stop() }
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTTY(f)
}

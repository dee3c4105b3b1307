package main

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/zkclient"
)

// earlyDial is a session being established while the command still reads
// and checks its input (startDial): creating a session is a server write
// (a transaction-log fsync) and the input is local work, so the two
// overlap instead of following each other. Nothing is read or written
// through the session before the input passed its checks: connect takes
// it over (the access probe, the publish's reads) only then, and a
// command whose input fails closes it unused (abandon).
//
// The connection is handed out before its session is established
// (opening), for reads queued right behind the session's creation
// (session).
type earlyDial struct {
	ctx    context.Context
	cancel context.CancelFunc
	// opened is closed once the connection is open (conn, sess), or
	// failed to open (conn nil: take reports why).
	opened chan struct{}
	conn   *zk.Conn
	sess   *zkclient.Session
	// done is closed once the dial ended: cl established, or err (and
	// the connection closed).
	done chan struct{}
	cl   *zkclient.Client
	err  error
}

// startDial starts dialing for cmd (its deadline, a.context) in the
// background; session uses the result.
func (a *app) startDial(cmd *cobra.Command) {
	ctx, cancel := a.context(cmd)
	cfg := a.zkConfig()
	d := &earlyDial{ctx: ctx, cancel: cancel, opened: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		conn, sess, err := a.openConn(ctx, cfg)
		d.conn, d.sess = conn, sess
		close(d.opened)
		if err != nil {
			d.err = err
			return
		}
		d.cl, d.err = a.awaitSession(ctx, cfg, conn, sess)
	}()
	a.early = d
}

// opening returns the connection once it is open, its session perhaps
// not yet established; nil when it could not be opened.
func (d *earlyDial) opening() (*zk.Conn, *zkclient.Session) {
	<-d.opened
	return d.conn, d.sess
}

// abandon ends a dial the command will not use (its input failed): the
// dial is cancelled, and a session it established is closed, before the
// command returns.
func (d *earlyDial) abandon() {
	if d == nil {
		return
	}
	d.cancel()
	<-d.done
	if d.cl != nil {
		d.cl.Conn().Close()
	}
}

// take returns the dial's context and its result, waiting for it.
func (d *earlyDial) take() (context.Context, context.CancelFunc, *zkclient.Client, error) {
	<-d.done
	return d.ctx, d.cancel, d.cl, d.err
}

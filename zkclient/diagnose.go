package zkclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// ErrNoSession is a server that accepts connections but established no
// session: an ensemble without quorum, a server refusing this client, or a
// port that is not a ZooKeeper client port.
var ErrNoSession = errors.New("accepts connections but gave no session (no quorum, a server refusing this client, or not a ZooKeeper client port)")

// ServerError is why one server could not be reached.
type ServerError struct {
	// Server is the host:port as configured.
	Server string
	// Err is the cause: a DNS, connection or TLS error, or ErrNoSession.
	Err error
}

func (e *ServerError) Error() string { return e.Server + ": " + e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// Diagnose tells why a connection got no session. The go-zookeeper client
// retries every server forever and reports only its state, never the
// cause; Diagnose dials each server the way the client does (name lookup,
// TCP connect, with cfg.TLS the TLS handshake) and returns one ServerError
// per server, in the configured order. A server that takes the connection
// is reported as ErrNoSession, unless it answers a TLS handshake a plain
// client cannot speak. Each probe ends with ctx.
func Diagnose(ctx context.Context, cfg Config) []*ServerError {
	out := make([]*ServerError, len(cfg.Servers))
	var wg sync.WaitGroup
	for i, s := range cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = &ServerError{Server: s, Err: probe(ctx, s, cfg.TLS)}
		}()
	}
	wg.Wait()
	return out
}

// probe dials one server and returns the cause (ErrNoSession when the
// transport works).
func probe(ctx context.Context, server string, tcfg *tls.Config) error {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return err
	}
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return conciseNetError(err)
	}
	var last error
	for _, ip := range addrs {
		addr := net.JoinHostPort(ip, port)
		if tcfg != nil {
			c := tcfg.Clone()
			if c.ServerName == "" {
				c.ServerName = host
			}
			last = handshakeContext(ctx, addr, c)
			if last != nil {
				last = fmt.Errorf("%w: %v", ErrTLS, conciseNetError(last))
			}
		} else {
			last = plainProbe(ctx, addr)
		}
		if last == nil {
			return ErrNoSession
		}
	}
	return last
}

// plainProbe connects over TCP and checks that the port does not expect
// TLS: a secureClientPort closes on the client's first bytes, which the
// go-zookeeper client shows only as an endless reconnect.
func plainProbe(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return conciseNetError(err)
	}
	_ = conn.Close()
	conn, err = d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil // it took one connection: what follows is not a TLS question
	}
	defer conn.Close()
	// The caller's deadline bounds the handshake, not a shorter one of its
	// own: a loaded server takes seconds to answer a TLS handshake, and a
	// probe that gives up first calls a TLS port a plain one.
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	// #nosec G402 -- only learns whether the port speaks TLS; nothing is sent over it.
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	if tc.HandshakeContext(ctx) == nil {
		return fmt.Errorf("%w: the server expects TLS (a secureClientPort) and this client connects without it (set the TLS CA file)", ErrTLS)
	}
	return nil
}

// handshakeContext is handshake bounded by ctx.
func handshakeContext(ctx context.Context, addr string, cfg *tls.Config) error {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	// TLS 1.3: a refused client certificate shows only on the first read.
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return err
	}
	var b [16]byte
	if _, err := conn.Read(b[:]); err != nil && !errors.Is(err, io.EOF) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // the session was accepted and the server is silent
		}
		return err
	}
	return nil
}

// conciseNetError keeps what an operator acts on: "connection refused"
// rather than "dial tcp 10.0.0.1:2181: connect: connection refused" (the
// server is named by ServerError), the DNS error as the resolver gave it,
// and "timed out" for a dial that did not complete.
func conciseNetError(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errors.New("timed out (no answer)")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timed out (no answer)")
	}
	return err
}

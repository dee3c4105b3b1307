package zkclient_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// waitFor waits until the session's status satisfies ok.
func waitFor(t *testing.T, s *zkclient.Session, what string, ok func(zkclient.Status) bool) zkclient.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ch := s.Changed()
		if st := s.Status(); ok(st) {
			return st
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("session never %s (status %+v)", what, s.Status())
		}
	}
}

func TestSessionTracksReconnectAndExpiry(t *testing.T) {
	c := zktest.Start(t)
	p := faultproxy.Start(t, c.Addrs()[0])
	// 3s: long enough that a reconnect after a cut on a loaded machine
	// keeps the session, short enough for the expiry phase.
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: []string{p.Addr()}, SessionTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := sess.WaitConnected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Epoch != 1 || st.Expiries != 0 {
		t.Fatalf("first session: %+v", st)
	}

	p.Cut()
	st = waitFor(t, sess, "reconnected", func(s zkclient.Status) bool { return s.Connected && s.Epoch >= 2 })
	if st.Expiries != 0 {
		t.Fatalf("a cut counted an expiry: %+v", st)
	}

	p.Blackhole(true)
	waitFor(t, sess, "disconnected", func(s zkclient.Status) bool { return !s.Connected })
	// Hold the partition past the session timeout (server side), then lift.
	expireOnServer(t, c, conn.SessionID())
	p.Blackhole(false)
	st = waitFor(t, sess, "expired and back", func(s zkclient.Status) bool { return s.Expiries == 1 && s.Connected })
	if st.State != zk.StateHasSession {
		t.Fatalf("state after expiry = %v", st.State)
	}
}

// expireOnServer waits until the server no longer lists the session.
func expireOnServer(t *testing.T, c *zktest.Cluster, id int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, err := zktest.FourLetter(c.Addrs()[0], "dump", time.Second)
		if err == nil && !containsSession(out, id) {
			return
		}
		time.Sleep(100 * time.Millisecond) // the server has no expiry event for outsiders
	}
	t.Fatalf("session %x not expired on the server within 60s", id)
}

func containsSession(dump string, id int64) bool {
	return strings.Contains(dump, fmt.Sprintf("0x%x", id))
}

// TestSessionNotify checks that every change of the status sends on the
// channels Notify registered, without blocking on a full one, and that
// stop ends it (once, whatever it is called).
func TestSessionNotify(t *testing.T) {
	s := zkclient.NewSession()
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	stopA := s.Notify(a)
	stopB := s.Notify(b)
	pending := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if pending(a) || pending(b) {
		t.Fatal("a wake-up before any change")
	}
	changed := s.Changed()
	s.Callback(zk.Event{Type: zk.EventSession, State: zk.StateConnecting})
	s.Callback(zk.Event{Type: zk.EventSession, State: zk.StateHasSession}) // a's slot is full: no block
	select {
	case <-changed:
	default:
		t.Fatal("Changed's channel not closed")
	}
	if !pending(a) || !pending(b) {
		t.Fatal("a change did not wake every registered channel")
	}
	if pending(a) {
		t.Fatal("two changes left more than the one-slot channel holds")
	}
	s.Callback(zk.Event{Type: zk.EventNodeDataChanged, Path: "/x"}) // not a session event: no change
	if pending(a) || pending(b) {
		t.Fatal("a watch event woke a session reader")
	}
	stopA()
	stopA()
	s.Callback(zk.Event{Type: zk.EventSession, State: zk.StateDisconnected})
	if pending(a) {
		t.Fatal("a stopped channel was woken")
	}
	if !pending(b) {
		t.Fatal("stopping one channel stopped another")
	}
	stopB()
	s.Callback(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	if pending(b) {
		t.Fatal("a stopped channel was woken")
	}
	if st := s.Status(); !st.Connected || st.Epoch != 2 {
		t.Fatalf("status %+v, want connected in epoch 2", st)
	}
}

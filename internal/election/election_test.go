package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/election"
	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

func dial(t *testing.T, addr string, timeout time.Duration) *election.Candidate {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: []string{addr}, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return election.New(zkclient.Fixed(conn, sess), "/zkconf/election", nil, nil)
}

type result struct {
	l   election.Leadership
	err error
}

func campaign(ctx context.Context, c *election.Candidate) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := c.Campaign(ctx)
		ch <- result{l, err}
	}()
	return ch
}

func TestOneLeaderThenSuccessor(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := dial(t, zkc.Addrs()[0], 4*time.Second), dial(t, zkc.Addrs()[0], 4*time.Second)
	la, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chB := campaign(ctx, b)
	select {
	case r := <-chB:
		t.Fatalf("second candidate led while the first holds leadership: %+v", r)
	case <-time.After(500 * time.Millisecond):
		// No event can prove a negative; half a second of the second
		// candidate waiting on its watch is the observation.
	}
	if err := a.Resign(la); err != nil {
		t.Fatal(err)
	}
	r := <-chB
	if r.err != nil || r.l.Node == la.Node {
		t.Fatalf("successor = %+v", r)
	}
}

// TestLeaderSessionExpiryHandsOver: a leader whose session expires loses
// its node, and the next candidate leads.
func TestLeaderSessionExpiryHandsOver(t *testing.T) {
	zkc := zktest.Start(t)
	p := faultproxy.Start(t, zkc.Addrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := dial(t, p.Addr(), time.Second)
	if _, err := a.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	b := dial(t, zkc.Addrs()[0], 4*time.Second)
	chB := campaign(ctx, b)
	p.Blackhole(true)
	r := <-chB
	if r.err != nil {
		t.Fatalf("successor after the leader's expiry: %v", r.err)
	}
	p.Blackhole(false)
}

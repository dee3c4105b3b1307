package faultproxy_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
)

// dial connects through the proxy and returns the connection and a channel
// of every session state the client reported, in order.
func dial(t *testing.T, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.State) {
	t.Helper()
	states := make(chan zk.State, 1000)
	conn, _, err := zk.Connect([]string{addr}, timeout,
		zk.WithLogInfo(false),
		zk.WithLogger(quiet{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				select {
				case states <- ev.State:
				default:
					t.Errorf("state channel full")
				}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	await(t, states, zk.StateHasSession, 60*time.Second)
	return conn, states
}

// await consumes states until want arrives.
func await(t *testing.T, states <-chan zk.State, want zk.State, within time.Duration) []zk.State {
	t.Helper()
	var seen []zk.State
	timeout := time.After(within)
	for {
		select {
		case s := <-states:
			seen = append(seen, s)
			if s == want {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %v within %v; saw %v", want, within, seen)
		}
	}
}

func TestCutKeepsSession(t *testing.T) {
	c := zktest.Start(t)
	p := faultproxy.Start(t, c.Addrs()[0])
	conn, states := dial(t, p.Addr(), 4*time.Second)
	id := conn.SessionID()

	p.Cut()
	await(t, states, zk.StateDisconnected, 60*time.Second)
	seen := await(t, states, zk.StateHasSession, 60*time.Second)
	for _, s := range seen {
		if s == zk.StateExpired {
			t.Fatalf("a cut expired the session: %v", seen)
		}
	}
	if got := conn.SessionID(); got != id {
		t.Fatalf("session id changed across a cut: %x -> %x", id, got)
	}
	if _, _, err := conn.Get("/"); err != nil {
		t.Fatalf("get after cut: %v", err)
	}
}

func TestBlackholeExpiresSession(t *testing.T) {
	c := zktest.Start(t)
	p := faultproxy.Start(t, c.Addrs()[0])
	const timeout = time.Second
	conn, states := dial(t, p.Addr(), timeout)
	id := conn.SessionID()
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	p.Blackhole(true)
	await(t, states, zk.StateDisconnected, 60*time.Second)
	// The server expires the session after its timeout; we learn it only
	// when we get through again. Watch the server, not the client, to know
	// when to lift the blackhole: the ephemeral node disappears.
	other := c.Connect(t, 4*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, _, err := other.Exists("/eph")
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("session not expired on the server within 60s")
		}
		_, _, ev, err := other.ExistsW("/eph")
		if err == nil {
			select {
			case <-ev:
			case <-time.After(time.Until(deadline)):
			}
		}
	}
	p.Blackhole(false)
	await(t, states, zk.StateExpired, 60*time.Second)
	await(t, states, zk.StateHasSession, 60*time.Second)
	if got := conn.SessionID(); got == id || got == 0 {
		t.Fatalf("session id after expiry = %x, want a new one (old %x)", got, id)
	}
}

func TestDelayAddsLatency(t *testing.T) {
	c := zktest.Start(t)
	p := faultproxy.Start(t, c.Addrs()[0])
	conn, _ := dial(t, p.Addr(), 4*time.Second)
	const d = 150 * time.Millisecond
	p.Delay(d)
	start := time.Now()
	if _, _, err := conn.Get("/"); err != nil {
		t.Fatal(err)
	}
	// Request and response are each delayed.
	if el := time.Since(start); el < 2*d {
		t.Fatalf("get took %v with %v delay each way", el, d)
	}
	p.Delay(0)
}

type quiet struct{}

func (quiet) Printf(string, ...interface{}) {}

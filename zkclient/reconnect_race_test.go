package zkclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestReconnectWithWatchesHeld cuts a connection that holds several watches
// (data, children, exists) reconnectRounds times, through a proxy to a real
// server, changes the watched nodes while the client is disconnected, and
// checks after every reconnect that the reads issued meanwhile completed
// and that each watch fired: the client re-sent its watches (SetWatches)
// relative to the last zxid it had seen, so the server reported the
// changes it missed.
//
// Under -race it is the test of third_party/go-zookeeper-zk: go-zookeeper
// v1.0.4's connection loop reads lastZxid in sendSetWatches right after it
// starts the new connection's recvLoop, which writes lastZxid on every
// response, with nothing ordering the two (upstream go-zookeeper/zk#35).
// The race detector sees it when a response to a request sent before the
// SetWatches request is read before the SetWatches request is written: the
// reads queued during the reconnect supply the first, writes that take a
// few milliseconds (a congested link, or a starved client on a busy
// machine) the second. With the unpatched module (go.mod's replace
// removed) the test fails with "race detected" on the first reconnect.
func TestReconnectWithWatchesHeld(t *testing.T) {
	c := zktest.Start(t)
	p := faultproxy.Start(t, c.Addrs()[0])
	sess := zkclient.NewSession()
	// 4s, the longest the test servers allow: a reconnect after a cut on a
	// loaded machine keeps the session, and with it the watches.
	conn, _, err := zk.Connect([]string{p.Addr()}, 4*time.Second, zk.WithEventCallback(sess.Callback),
		zk.WithDialer(slowWrites(5*time.Millisecond)), zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before conn.Close: readers stop retrying
	// The writer does not go through the proxy: its changes fire the
	// watcher's watches whatever the watcher's connection does.
	writer := c.Connect(t, 4*time.Second)
	for _, path := range []string{"/race", "/race/a", "/race/b"} {
		if _, err := writer.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	st := waitFor(t, sess, "connected", func(s zkclient.Status) bool { return s.Connected })

	type watch struct {
		name string
		ch   <-chan zk.Event
		want zk.EventType
	}
	for round := range reconnectRounds {
		created := fmt.Sprintf("/race/new-%d", round)
		var watches []watch
		for _, path := range []string{"/race/a", "/race/b"} {
			_, _, ch, err := conn.GetW(path)
			if err != nil {
				t.Fatalf("round %d: get %s: %v", round, path, err)
			}
			watches = append(watches, watch{"data " + path, ch, zk.EventNodeDataChanged})
		}
		_, _, ch, err := conn.ChildrenW("/race")
		if err != nil {
			t.Fatalf("round %d: children /race: %v", round, err)
		}
		watches = append(watches, watch{"children /race", ch, zk.EventNodeChildrenChanged})
		found, _, ch, err := conn.ExistsW(created)
		if err != nil || found {
			t.Fatalf("round %d: exists %s: %v, %v", round, created, found, err)
		}
		watches = append(watches, watch{"exists " + created, ch, zk.EventNodeCreated})

		p.Cut()
		epoch := st.Epoch
		waitFor(t, sess, "disconnected", func(s zkclient.Status) bool { return !s.Connected })
		// Changes while the client is away (it pauses a second before it
		// dials again): the next connection's SetWatches request, relative
		// to the last zxid the client saw, makes the server fire these
		// watches at once. Were the client back already, they fire the
		// ordinary way.
		for _, path := range []string{"/race/a", "/race/b"} {
			if _, err := writer.Set(path, []byte(created), -1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := writer.Create(created, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		// Reads issued across the reconnect, as a busy agent or cache
		// issues them: those queued while the client pauses between
		// connection attempts go out on the new connection before its
		// SetWatches request.
		reads := make(chan error, readers)
		for range readers {
			go func() { reads <- readAcrossReconnect(ctx, conn, "/race/a") }()
		}
		st = waitFor(t, sess, "reconnected", func(s zkclient.Status) bool { return s.Connected && s.Epoch > epoch })
		if st.Expiries != 0 {
			t.Fatalf("round %d: the session expired (the test is about reconnects within a session): %+v", round, st)
		}
		for range readers {
			if err := <-reads; err != nil {
				t.Fatalf("round %d: a read across the reconnect: %v", round, err)
			}
		}
		for _, w := range watches {
			select {
			case ev := <-w.ch:
				if ev.Type != w.want || ev.Err != nil {
					t.Fatalf("round %d: %s watch: got %+v, want %v", round, w.name, ev, w.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: the %s watch never reported the change made while disconnected", round, w.name)
			}
		}
	}
}

// reconnectRounds is how many times TestReconnectWithWatchesHeld cuts the
// connection. The unpatched client's race shows on the first; the rounds
// give a fix that only narrows the window, or a race on another field the
// reconnect path touches, many chances to show.
const reconnectRounds = 30

// readers is how many reads each round issues across the reconnect.
const readers = 4

// readAcrossReconnect reads path until a read succeeds. A read queued while
// the client pauses between connection attempts is sent on the new
// connection; one the client fails (ErrNoServer before the pause,
// ErrConnectionClosed or the write's network error on the cut connection)
// is issued again, until ctx ends (a closed client fails every read at
// once).
func readAcrossReconnect(ctx context.Context, conn *zk.Conn, path string) error {
	for {
		_, _, err := conn.Get(path)
		var netErr net.Error
		if !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed) && !errors.As(err, &netErr) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last read: %w)", ctx.Err(), err)
		}
	}
}

// slowWrites is a dialer whose connections take d to accept each write:
// a congested link, or a client starved of CPU, on which the response to
// one request arrives while the client is still writing the next. The
// delay is the fault injected, not a wait for an event.
func slowWrites(d time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return slowConn{c, d}, nil
	}
}

type slowConn struct {
	net.Conn
	delay time.Duration
}

func (c slowConn) Write(b []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(b)
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

package zkclient_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// raiseZxid makes a few writes so that the client has seen a zxid the
// wiped server will not reach before the test's own probe.
func raiseZxid(t *testing.T, conn *zk.Conn, n int) {
	t.Helper()
	for i := range n {
		if _, err := conn.Create(fmt.Sprintf("/w%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
}

// A server wiped and restarted on the same address refuses the session of
// a client that has seen a newer zxid; the plain client retries forever
// (handshakes closed, counted by the Session) and the Client replaces it
// with a fresh one that gets a session on the wiped server.
func TestClientReplacesRefusedConnection(t *testing.T) {
	c := zktest.Start(t)
	cl, err := zkclient.Dial(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	plain, psess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	raiseZxid(t, cl.Conn(), 30)
	if _, err := plain.Sync("/"); err != nil { // the plain client sees the same zxid
		t.Fatal(err)
	}

	c.Wipe(0)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The wiped server is empty: a successful Exists of / that finds /w0
	// missing proves a session on the new server.
	for {
		ok, _, err := cl.Conn().Exists("/w0")
		if err == nil && !ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Client never got a session on the wiped server (last error %v, status %+v)", err, cl.Session().Status())
		case <-cl.Session().Changed():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if st := cl.Session().Status(); st.Replaced == 0 || st.Expiries == 0 {
		t.Fatalf("status %+v: the replacement must count as an expiry", st)
	}
	// The plain client, meanwhile, is refused: handshakes counted.
	st := waitFor(t, psess, "refused", func(st zkclient.Status) bool { return st.Refused(2, 0) })
	if st.Connected {
		t.Fatalf("plain client connected to the wiped server: %+v", st)
	}
}

// TestDialWithCredentialsWhileUnreachable: a Client with credentials dials
// while no server answers (a host booting with ZooKeeper down): Dial
// succeeds, the Session reports no session until the credentials are in
// place, and once the server is back a read only those credentials may
// make succeeds. On the old code Dial failed ("ZooKeeper authentication:
// zk: could not connect to a server") and confagent exited at start.
func TestDialWithCredentialsWhileUnreachable(t *testing.T) {
	c := zktest.Start(t)
	admin := c.Connect(t, 4*time.Second)
	const creds = "reader:reader-Secret-Pw-01"
	if _, err := admin.Create("/private", []byte("ok"), 0, zk.DigestACL(zk.PermRead, "reader", "reader-Secret-Pw-01")); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	cl, err := zkclient.Dial(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second, Auth: creds})
	if err != nil {
		t.Fatalf("Dial with credentials while ZooKeeper is down: %v", err)
	}
	t.Cleanup(cl.Close)
	if st := cl.Session().Status(); st.Connected {
		t.Fatalf("session reported before any server answered: %+v", st)
	}
	c.StartServer(0)
	c.WaitServing(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cl.Session().WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	b, _, err := cl.Conn().Get("/private")
	if err != nil || string(b) != "ok" {
		t.Fatalf("read with the credentials after the server came back: %q, %v", b, err)
	}
}

package zkclient

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestLargePackets: requests and responses far larger than the
// connection's first buffers (64 KiB, third_party/go-zookeeper-zk: they
// grow to the largest packet) go through whole, a request above the
// client's 1.5 MiB send limit still fails as it did with fixed buffers,
// and the connection keeps working after it.
func TestLargePackets(t *testing.T) {
	conn := dialFresh(t, sharedZooKeeper.For(t).Addrs())
	defer conn.Close()
	// The server's default jute.maxbuffer is 1 MiB - 1 per packet.
	big := bytes.Repeat([]byte("0123456789abcdef"), (1<<20-4096)/16)
	if _, err := conn.Create("/big", big, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create with %d bytes: %v", len(big), err)
	}
	got, _, err := conn.Get("/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get: %d bytes, %v; want the %d written", len(got), err, len(big))
	}
	// A Multi of several items above the first buffer's size.
	mid := bytes.Repeat([]byte{'m'}, 200<<10)
	ops := []any{
		&zk.CreateRequest{Path: "/m1", Data: mid, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: "/m2", Data: mid, Acl: zk.WorldACL(zk.PermAll)},
		&zk.SetDataRequest{Path: "/big", Data: mid, Version: -1},
	}
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatalf("multi of %d bytes: %v", 3*len(mid), err)
	}
	for _, p := range []string{"/m1", "/m2", "/big"} {
		if got, _, err := conn.Get(p); err != nil || !bytes.Equal(got, mid) {
			t.Fatalf("get %s: %d bytes, %v", p, len(got), err)
		}
	}
	// Above the client's own limit: refused before it is sent.
	huge := make([]byte, 2<<20)
	if _, err := conn.Create("/huge", huge, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrShortBuffer) {
		t.Fatalf("create with %d bytes: %v, want %v", len(huge), err, zk.ErrShortBuffer)
	}
	if _, _, err := conn.Get("/m1"); err != nil {
		t.Fatalf("get after the refused request: %v", err)
	}
}

// TestRequestsEndingAtBufferEdge: a request whose encoding runs out of the
// send buffer at any byte — inside a length, a string or a boolean —
// makes the buffer grow and goes through whole. The first buffer is 64
// KiB; a Multi of one SetData whose data size puts the buffer's end right
// after a multi header's type makes the encoder write that header's
// boolean one past the end: an index, not a slice, out of range, which
// the encoder turned into a panic of the sending goroutine instead of
// ErrShortBuffer. Each size gets a new connection (a buffer that grew
// once never meets the edge again), and the sizes put the edge at every
// byte of the request's last 40.
func TestRequestsEndingAtBufferEdge(t *testing.T) {
	addrs := sharedZooKeeper.For(t).Addrs()
	setup := dialFresh(t, addrs)
	defer setup.Close()
	if _, err := setup.Create("/p", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for n := 64<<10 - 60; n <= 64<<10-20; n++ {
		conn := dialFresh(t, addrs)
		data := bytes.Repeat([]byte{'d'}, n)
		_, err := conn.Multi(&zk.SetDataRequest{Path: "/p", Data: data, Version: -1})
		conn.Close()
		if err != nil {
			t.Fatalf("multi with %d bytes of data: %v", n, err)
		}
		if got, _, err := setup.Get("/p"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get after a multi of %d bytes: %d bytes, %v", n, len(got), err)
		}
	}
}

// dialFresh dials a connection of its own to servers: its buffers are at
// their first size.
func dialFresh(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, _, err := DialConn(Config{Servers: servers, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

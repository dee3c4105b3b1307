package zkclient

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the reads that reach a connection.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// readPackets reads n packets the way the client library does: the 4-byte
// length, then the body.
func readPackets(t *testing.T, r io.Reader, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

// frame returns the packets with their length prefixes, in one buffer.
func frame(bodies ...[]byte) []byte {
	var b []byte
	for _, body := range bodies {
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b
}

// TestBufConnReadsPacketsTogether: packets that arrived together (a
// response with its length prefix; the answers to gets sent together) are
// read from the socket once, where the library's own reads on the bare
// connection take two per packet.
func TestBufConnReadsPacketsTogether(t *testing.T) {
	bodies := [][]byte{bytes.Repeat([]byte("a"), 1100), []byte("watch event"), bytes.Repeat([]byte("c"), 300)}
	// One write of under 2 KiB on loopback arrives as one segment: what
	// a read finds does not depend on how the kernel splits it.
	wire := frame(bodies...)
	for _, buffered := range []bool{false, true} {
		client, server := tcpPair(t)
		cc := &countingConn{Conn: client}
		var r io.Reader = cc
		if buffered {
			r = newBufConn(cc)
		}
		if _, err := server.Write(wire); err != nil {
			t.Fatal(err)
		}
		got := readPackets(t, r, len(bodies))
		for i := range bodies {
			if !bytes.Equal(got[i], bodies[i]) {
				t.Fatalf("buffered=%v: packet %d differs", buffered, i)
			}
		}
		reads := cc.reads.Load()
		if buffered && reads != 1 {
			t.Errorf("buffered: %d reads reached the socket for %d packets, want 1", reads, len(bodies))
		}
		if !buffered && reads != 2*int64(len(bodies)) {
			t.Errorf("bare: %d reads for %d packets, want %d", reads, len(bodies), 2*len(bodies))
		}
	}
}

// TestBufConnLargePacket: a packet larger than the buffer is read whole,
// and the one after it too; writes and deadlines reach the connection.
func TestBufConnLargePacket(t *testing.T) {
	client, server := tcpPair(t)
	c := newBufConn(client)
	big := bytes.Repeat([]byte("0123456789"), 3*readBufferSize/10+7)
	small := []byte("after")
	go func() { _, _ = server.Write(frame(big, small)) }()
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got := readPackets(t, c, 2)
	if !bytes.Equal(got[0], big) || !bytes.Equal(got[1], small) {
		t.Fatal("packets differ")
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	var back [4]byte
	if _, err := io.ReadFull(server, back[:]); err != nil || string(back[:]) != "ping" {
		t.Fatalf("write did not reach the server: %q %v", back, err)
	}
	// A deadline in the past fails the next read that reaches the socket.
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	if _, err := c.Read(one[:]); !isTimeout(err) {
		t.Fatalf("read after the deadline: %v, want a timeout", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

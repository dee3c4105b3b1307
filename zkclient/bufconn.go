package zkclient

import (
	"bufio"
	"net"
	"time"
)

// readBufferSize is the read buffer of a plain TCP connection to a
// server: a response of a few KiB (a 1 KiB item's read, a watch event, a
// set's answer) arrives in one read with its length prefix.
const readBufferSize = 4 << 10

// bufConn is a connection to a server whose reads go through a buffer.
// The client library reads every packet with two reads, its 4-byte length
// and then its body, and a third that finds nothing and parks on the
// poller: three system calls per response. Buffered, the first read
// takes the whole packet (and any that arrived with it: the answers to
// gets sent together), and the library's second read is a copy. Writes,
// deadlines and Close go to the connection itself; a read deadline
// bounds the reads that reach it, and a packet already buffered is
// returned without waiting, as the kernel's socket buffer would.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func newBufConn(c net.Conn) *bufConn {
	return &bufConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize)}
}

// Read reads through the buffer.
func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialBuffered dials a server over plain TCP (the client library's own
// dial) and buffers the connection's reads.
func dialBuffered(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return newBufConn(c), nil
}

package zktest

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
)

// Request types of ZooKeeper's protocol a test may count (Counter.Count).
const (
	OpGetData   = 4
	OpMultiRead = opMultiRead
)

// Counter is a proxy in front of a real server that counts the requests
// it forwards, by type (CountRequests).
type Counter struct {
	addr string
	mu   sync.Mutex
	ops  map[int32]int
}

// Addr is the proxy's address, a connection string of one server.
func (c *Counter) Addr() string { return c.addr }

// Count is the number of requests of type op forwarded so far.
func (c *Counter) Count(op int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.ops)
}

// CountRequests starts a TCP proxy to target (the first server of a
// connection string) that forwards everything both ways and counts the
// client's requests by type (the connect request, each connection's
// first frame, is not one). The proxy stops with the test.
func CountRequests(t TB, target string) *Counter {
	t.Helper()
	c := &Counter{ops: map[int32]int{}}
	c.addr = Relay(t, target, 0, func(in, out net.Conn) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(in, out)
			in.Close()
		}()
		defer func() { out.Close(); <-done }()
		for n := 0; ; n++ {
			frame, err := readFrame(in)
			if err != nil {
				return
			}
			if n > 0 && len(frame) >= 12 {
				c.mu.Lock()
				c.ops[int32(binary.BigEndian.Uint32(frame[8:12]))]++
				c.mu.Unlock()
			}
			if _, err := out.Write(frame); err != nil {
				return
			}
		}
	})
	return c
}

package zktest

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// Request types of ZooKeeper's protocol a test may count (Counter.Count).
const (
	OpExists       = 3
	OpGetData      = 4
	OpGetACL       = 6
	OpGetChildren  = 8
	OpGetChildren2 = 12
	OpMultiRead    = opMultiRead
)

// Counter is a proxy in front of a real server that counts the requests
// it forwards, by type, and the most of one type outstanding at once
// (CountRequests).
type Counter struct {
	addr string
	mu   sync.Mutex
	ops  map[int32]int
	// most is the largest number of requests of each type sent and not
	// yet answered on one connection.
	most map[int32]int
	// conns is the number of connections the proxy has accepted.
	conns int
	hold  *hold
}

// hold is Counter.Hold's state: the server's answers are withheld from
// the first request of type op on a connection numbered fromConn or later
// until more than limit of them are outstanding or wait has passed since
// that request; then released for good.
type hold struct {
	fromConn int
	op       int32
	limit    int
	wait     time.Duration
	armed    bool
	released chan struct{}
}

// Addr is the proxy's address, a connection string of one server.
func (c *Counter) Addr() string { return c.addr }

// Count is the number of requests of type op forwarded so far.
func (c *Counter) Count(op int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// MaxOutstanding is the most requests of type op the client had sent on
// one connection and the server had not answered yet, at any moment so
// far: a bound on the requests of that type the client keeps in flight
// is visible here, the more so with Hold.
func (c *Counter) MaxOutstanding(op int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most[op]
}

// Hold makes the proxy withhold every answer of the server, from the
// moment it forwards the first request of type op on a connection the
// client opens after the call (the requests of a session that lost its
// connection, say), until more than limit
// requests of that type are outstanding or wait has passed; then it
// forwards what it held and holds nothing again. A client that keeps at
// most limit requests of the type in flight meets the wait (its other
// requests and pings wait with them: keep wait well under the session's
// read timeout); one that sends more is released as soon as it does, and
// MaxOutstanding shows how many it had sent.
func (c *Counter) Hold(op int32, limit int, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = &hold{fromConn: c.conns, op: op, limit: limit, wait: wait, released: make(chan struct{})}
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.ops)
	clear(c.most)
}

// sent notes a request of type op with xid forwarded on connection conn,
// whose outstanding requests are pending (xid → type).
func (c *Counter) sent(conn int, pending map[int32]int32, xid, op int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops[op]++
	pending[xid] = op
	n := 0
	for _, o := range pending {
		if o == op {
			n++
		}
	}
	c.most[op] = max(c.most[op], n)
	if h := c.hold; h != nil && h.op == op && conn >= h.fromConn {
		if !h.armed {
			h.armed = true
			time.AfterFunc(h.wait, func() { c.release(h) })
		}
		if n > h.limit {
			c.releaseLocked(h)
		}
	}
}

// answered notes the server's answer to xid.
func (c *Counter) answered(pending map[int32]int32, xid int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(pending, xid)
}

// held returns the channel an answer waits on before it is forwarded, or
// nil when nothing is held.
func (c *Counter) held() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.hold; h != nil && h.armed {
		return h.released
	}
	return nil
}

func (c *Counter) release(h *hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(h)
}

func (c *Counter) releaseLocked(h *hold) {
	if c.hold == h {
		close(h.released)
		c.hold = nil
	}
}

// CountRequests starts a TCP proxy to target (the first server of a
// connection string) that forwards everything both ways, counts the
// client's requests by type (the connect request, each connection's
// first frame, is not one) and, matching the server's answers to them by
// xid, the most of each type outstanding at once. The proxy stops with
// the test.
func CountRequests(t TB, target string) *Counter {
	t.Helper()
	c := &Counter{ops: map[int32]int{}, most: map[int32]int{}}
	c.addr = Relay(t, target, 0, func(in, out net.Conn) {
		pending := map[int32]int32{} // guarded by c.mu
		c.mu.Lock()
		conn := c.conns
		c.conns++
		c.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer in.Close()
			for n := 0; ; n++ {
				frame, err := readFrame(out)
				if err != nil {
					return
				}
				if n > 0 && len(frame) >= 8 { // not the connect answer
					if ch := c.held(); ch != nil {
						<-ch
					}
					c.answered(pending, int32(binary.BigEndian.Uint32(frame[4:8])))
				}
				if _, err := in.Write(frame); err != nil {
					return
				}
			}
		}()
		defer func() { out.Close(); <-done }()
		for n := 0; ; n++ {
			frame, err := readFrame(in)
			if err != nil {
				return
			}
			if n > 0 && len(frame) >= 12 {
				c.sent(conn, pending, int32(binary.BigEndian.Uint32(frame[4:8])), int32(binary.BigEndian.Uint32(frame[8:12])))
			}
			if _, err := out.Write(frame); err != nil {
				return
			}
		}
	})
	return c
}

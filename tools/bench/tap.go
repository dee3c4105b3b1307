package bench

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ZooKeeper opcodes the tap tells apart (jute protocol).
const (
	opGetData  = 4
	opSync     = 9
	opPing     = 11
	opMulti    = 14
	opClose    = -11
	xidPing    = -2
	maxOpIndex = 128
)

// wireCounts counts the packets a set of client connections sent to
// ZooKeeper, read off the wire by a tap on each connection (go-zookeeper
// writes exactly one packet per Write call). Independent of what the code
// under test says it sent, they are compared with the server's
// packets_received.
type wireCounts struct {
	connects atomic.Int64 // session handshakes (the first packet of a TCP connection)
	pings    atomic.Int64
	closes   atomic.Int64
	requests atomic.Int64 // everything else: reads, writes, syncs, multis...
	framing  atomic.Int64 // writes that were not exactly one packet (must stay 0)
	ops      [maxOpIndex]atomic.Int64
}

// total is every packet counted.
func (w *wireCounts) total() int64 {
	return w.connects.Load() + w.pings.Load() + w.closes.Load() + w.requests.Load() + w.framing.Load()
}

// op returns how many requests with opcode op were sent.
func (w *wireCounts) op(op int) int64 {
	if op < 0 || op >= maxOpIndex {
		return 0
	}
	return w.ops[op].Load()
}

// commitClock times one commit on a publisher's connection: when the
// commit's Multi leaves the client, and when its reply arrives. That is
// "commit start" and "commit acknowledged" without touching package
// publish: the tap sees its transaction on the wire.
//
// With root empty, the commit is the first Multi sent after arm. With
// root set, it is the last Multi after arm whose first operation is a
// SetData of root (a Create on the root's first generation): a multi-mode publish sends one (the commit), a
// marker-mode publish two (6c, the root's data rewritten unchanged with
// the marker's creation, then 6e, the commit), and neither GC (a Check of
// the root first) nor the blob stores (Creates) start with one.
type commitClock struct {
	root string

	mu    sync.Mutex
	armed bool
	xid   int32
	sent  int64 // unix ns, 0: not yet
	acked int64
}

// arm makes the clock catch the next commit.
func (c *commitClock) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.xid, c.sent, c.acked = true, 0, 0, 0
}

// times returns the send and acknowledgement times of the caught Multi (0
// when none).
func (c *commitClock) times() (sent, acked int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.acked
}

// Opcodes of the operations a commit starts with (also a Multi
// operation's type).
const (
	opCreate  = 1
	opSetData = 5
)

// multiSetsData reports whether body (a Multi request after its header:
// the first operation's header, then its request) starts with a SetData
// (or, for a root's first generation, a Create) of path. A Multi
// operation's header is its type (int32), done (one byte) and err
// (int32); both requests start with their path (int32 length, then the
// bytes).
func multiSetsData(body []byte, path string) bool {
	const head = 4 + 1 + 4
	if len(body) < head+4 {
		return false
	}
	if t := int32(binary.BigEndian.Uint32(body)); t != opSetData && t != opCreate {
		return false
	}
	n := int(binary.BigEndian.Uint32(body[head:]))
	return n == len(path) && len(body) >= head+4+n && string(body[head+4:head+4+n]) == path
}

// onSend sees a request leave: body is what follows its opcode.
func (c *commitClock) onSend(xid int32, op int32, body []byte, now int64) {
	if op != opMulti {
		return
	}
	commit := c.root == "" || multiSetsData(body, c.root)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed || !commit || (c.root == "" && c.sent != 0) {
		return
	}
	c.xid, c.sent, c.acked = xid, now, 0
}

func (c *commitClock) onReply(xid int32, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed && c.sent != 0 && c.acked == 0 && xid == c.xid {
		c.acked = now
		if c.root == "" {
			c.armed = false
		}
	}
}

// tapConn wraps a client's TCP connection to count and time its packets.
type tapConn struct {
	net.Conn
	counts  *wireCounts
	clock   *commitClock // nil: no timing (followers)
	written bool         // the connect request has gone
	replies frameParser
}

func newTapConn(c net.Conn, counts *wireCounts, clock *commitClock) *tapConn {
	t := &tapConn{Conn: c, counts: counts, clock: clock}
	if clock != nil {
		t.replies.onFrame = func(xid int32) { clock.onReply(xid, time.Now().UnixNano()) }
	}
	return t
}

// Write counts one packet: [length][xid][opcode]... for requests, the
// connect request being the first packet of a connection.
func (t *tapConn) Write(p []byte) (int, error) {
	now := time.Now().UnixNano()
	switch {
	case len(p) < 4 || int(binary.BigEndian.Uint32(p))+4 != len(p):
		t.counts.framing.Add(1)
	case !t.written:
		t.counts.connects.Add(1)
	case len(p) >= 12:
		xid := int32(binary.BigEndian.Uint32(p[4:]))
		op := int32(binary.BigEndian.Uint32(p[8:]))
		switch {
		case xid == xidPing || op == opPing:
			t.counts.pings.Add(1)
		case op == opClose:
			t.counts.closes.Add(1)
		default:
			t.counts.requests.Add(1)
			if op >= 0 && op < maxOpIndex {
				t.counts.ops[op].Add(1)
			}
			if t.clock != nil {
				t.clock.onSend(xid, op, p[12:], now)
			}
		}
	default:
		t.counts.framing.Add(1)
	}
	t.written = true
	return t.Conn.Write(p)
}

// Read passes replies through, parsing their framing when timing commits.
func (t *tapConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if t.clock != nil && n > 0 {
		t.replies.feed(p[:n])
	}
	return n, err
}

// frameParser follows the server's reply stream ([length][xid][zxid]...)
// across arbitrary read boundaries and reports each reply's xid. The first
// frame (the connect response) has no xid and is skipped.
type frameParser struct {
	lenBuf   [4]byte
	lenHave  int
	remain   int
	head     [4]byte
	headHave int
	frames   int
	onFrame  func(xid int32)
}

func (f *frameParser) feed(b []byte) {
	for len(b) > 0 {
		if f.remain == 0 {
			k := copy(f.lenBuf[f.lenHave:], b)
			f.lenHave += k
			b = b[k:]
			if f.lenHave < 4 {
				return
			}
			f.lenHave, f.headHave = 0, 0
			f.remain = int(binary.BigEndian.Uint32(f.lenBuf[:]))
			if f.remain == 0 {
				f.frames++
			}
			continue
		}
		if f.headHave < 4 {
			k := min(4-f.headHave, len(b), f.remain)
			copy(f.head[f.headHave:], b[:k])
			f.headHave += k
			f.remain -= k
			b = b[k:]
			if f.headHave == 4 && f.frames > 0 && f.onFrame != nil {
				f.onFrame(int32(binary.BigEndian.Uint32(f.head[:])))
			}
			if f.remain == 0 {
				f.frames++
			}
			continue
		}
		k := min(f.remain, len(b))
		f.remain -= k
		b = b[k:]
		if f.remain == 0 {
			f.frames++
		}
	}
}

package zktest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// opMultiRead is ZooKeeper's request type of a multiRead (3.6+).
const opMultiRead = 22

// errUnimplemented is ZooKeeper's error code UNIMPLEMENTED.
const errUnimplemented int32 = -6

// OldServer is a proxy in front of a real server that answers as a
// ZooKeeper older than 3.6 does to a multiRead (NoMultiRead).
type OldServer struct {
	addr    string
	refused atomic.Int64
}

// Addr is the proxy's address, a connection string of one server.
func (o *OldServer) Addr() string { return o.addr }

// Refused is the number of multiReads refused so far.
func (o *OldServer) Refused() int { return int(o.refused.Load()) }

// NoMultiRead starts a TCP proxy to target (the first server of a
// connection string) that forwards everything but a multiRead request:
// that it answers as ZooKeeper 3.5 does (ZooKeeperServer.submitRequest
// hands a request of an unknown type to UnimplementedRequestProcessor,
// which replies UNIMPLEMENTED and closes the connection, the session
// living on), so a client's fallback can be tested where only a newer
// server is installed. The answers to requests sent before the multiRead
// that the server had not yet given are lost with the connection, as
// they can be with 3.5. The proxy stops with the test.
func NoMultiRead(t TB, target string) *OldServer {
	t.Helper()
	o := &OldServer{}
	o.addr = Relay(t, target, 0, func(in, out net.Conn) {
		p := &oldConn{o: o, in: in, out: out}
		done := make(chan struct{})
		go func() { defer close(done); p.requests() }()
		p.answers()
		<-done
	})
	return o
}

// oldConn is one client connection through an OldServer: in is the
// client's side, out the server's.
type oldConn struct {
	o       *OldServer
	in, out net.Conn
	wmu     sync.Mutex // one frame at a time to the client
}

func (p *oldConn) close() {
	p.in.Close()
	p.out.Close()
}

// requests forwards the client's frames to the server, the first (the
// connect request) as it is; a multiRead is answered UNIMPLEMENTED and
// ends the connection.
func (p *oldConn) requests() {
	defer p.close()
	for n := 0; ; n++ {
		frame, err := readFrame(p.in)
		if err != nil {
			return
		}
		if n > 0 && len(frame) >= 12 && int32(binary.BigEndian.Uint32(frame[8:12])) == opMultiRead {
			p.o.refused.Add(1)
			// The reply header: xid, zxid (-1: none), err.
			reply := make([]byte, 4+16)
			binary.BigEndian.PutUint32(reply[0:4], 16)
			copy(reply[4:8], frame[4:8])
			binary.BigEndian.PutUint64(reply[8:16], ^uint64(0))
			code := errUnimplemented
			binary.BigEndian.PutUint32(reply[16:20], uint32(code))
			p.wmu.Lock()
			_, _ = p.in.Write(reply)
			p.wmu.Unlock()
			return
		}
		if _, err := p.out.Write(frame); err != nil {
			return
		}
	}
}

// answers forwards the server's frames to the client.
func (p *oldConn) answers() {
	defer p.close()
	for {
		frame, err := readFrame(p.out)
		if err != nil {
			return
		}
		p.wmu.Lock()
		_, err = p.in.Write(frame)
		p.wmu.Unlock()
		if err != nil {
			return
		}
	}
}

// readFrame reads one length-prefixed frame of ZooKeeper's protocol,
// its length included.
func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > 64<<20 {
		return nil, errors.New("zktest: frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, l[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

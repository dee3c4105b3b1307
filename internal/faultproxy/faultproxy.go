// Package faultproxy is a TCP proxy for tests that sits between a ZooKeeper
// client and a server and injects the network faults zkconf must survive:
//
//   - Cut drops every live connection. The client sees a recoverable
//     ConnectionLoss, reconnects and keeps its session.
//   - Blackhole accepts connections but forwards nothing, in either
//     direction. Held longer than the session timeout, the server expires the
//     session and the client, once it gets through again, is told so (and the
//     go-zookeeper client silently opens a new session).
//   - Delay adds latency to every chunk forwarded.
//
// The proxy listens on a free loopback port; it never binds a fixed one.
package faultproxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	conns     map[*pair]struct{}
	blackhole bool
	delay     time.Duration
	unblock   chan struct{} // closed when the blackhole is lifted
	closed    bool
	wg        sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	once           sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		p.client.Close()
		p.server.Close()
	})
}

// Start starts a proxy to target and closes it in t.Cleanup.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// New starts a proxy to target on a free loopback port.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}, unblock: make(chan struct{})}
	close(p.unblock)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes where new connections go (for a server restarted on
// another port); live connections are not touched.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Cut closes every live connection; new ones are accepted as usual.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
		delete(p.conns, c)
	}
}

// Blackhole turns the blackhole on or off. While on, bytes from both sides
// are held back (not dropped, not delivered) and new connections are accepted
// but not forwarded, so neither side sees a closed connection: the client's
// session times out exactly as behind a dead network. When turned off, the
// connections that were held are cut, as a real network partition's would be
// by then, and new connections are forwarded again.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.blackhole {
		return
	}
	p.blackhole = on
	if on {
		p.unblock = make(chan struct{})
		return
	}
	close(p.unblock)
	for c := range p.conns {
		c.close()
		delete(p.conns, c)
	}
}

// Delay adds d to every chunk forwarded, in both directions (0 removes it).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.blackhole {
		p.blackhole = false
		close(p.unblock)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// state returns what forwarding must respect right now.
func (p *Proxy) state() (blocked <-chan struct{}, delay time.Duration, target string, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unblock, p.delay, p.target, p.closed
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	unblock, _, target, closed := p.state()
	if closed {
		client.Close()
		return
	}
	// A connection made during a blackhole hangs until it is lifted, then
	// is dropped: the client retries and gets through.
	select {
	case <-unblock:
	default:
		p.hold(client, unblock)
		return
	}
	server, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	pr := &pair{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pr.close()
		return
	}
	p.conns[pr] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(pr, server, client) }()
	go func() { defer wg.Done(); p.pipe(pr, client, server) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

// hold keeps a connection open but silent until the blackhole is lifted.
func (p *Proxy) hold(c net.Conn, unblock <-chan struct{}) {
	pr := &pair{client: c, server: nopConn{}}
	p.mu.Lock()
	p.conns[pr] = struct{}{}
	p.mu.Unlock()
	// Drain what the client sends so its writes do not fail; deliver nothing.
	go func() { _, _ = io.Copy(io.Discard, c) }()
	<-unblock
	pr.close()
}

// pipe copies src to dst chunk by chunk, holding chunks while a blackhole is
// on and delaying them when asked.
func (p *Proxy) pipe(pr *pair, dst, src net.Conn) {
	defer pr.close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			unblock, delay, _, _ := p.state()
			select {
			case <-unblock:
			default:
				// Held, never delivered: the connection is cut when the
				// blackhole is lifted.
				<-unblock
				return
			}
			if delay > 0 {
				time.Sleep(delay) // the injected latency itself
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// nopConn stands in for the server side of a held connection.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

package zkclient

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestLazyResolveKeepsUnresolvableServer: by default one name that does not
// resolve fails the dial (go-zookeeper resolves every name once, at
// Connect); with LazyResolve the dial succeeds and the client gets its
// session from the server whose name does resolve, the other staying in
// the list (its name is looked up again at every attempt).
func TestLazyResolveKeepsUnresolvableServer(t *testing.T) {
	c := sharedZooKeeper.For(t)
	servers := []string{"zk-nonexistent.invalid:2181", c.Addrs()[0]}
	if cl, err := Dial(Config{Servers: servers, SessionTimeout: 4 * time.Second}); err == nil {
		cl.Close()
		t.Fatal("the default dial accepted a name that does not resolve; the LazyResolve test proves nothing")
	}
	cl, err := Dial(Config{Servers: servers, SessionTimeout: 4 * time.Second, LazyResolve: true})
	if err != nil {
		t.Fatalf("LazyResolve: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cl.Session().WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.Conn().Get("/"); err != nil {
		t.Fatalf("read on the lazily resolved connection: %v", err)
	}
}

// TestSessionCountsAttempts: without a session every connection attempt
// (every server tried) is counted, so a reader can tell that every server
// was tried and failed; a session resets the count.
func TestSessionCountsAttempts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	_ = l.Close()
	cl, err := Dial(Config{Servers: []string{refused}, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := cl.Session()
	deadline := time.After(60 * time.Second)
	for {
		ch := s.Changed()
		if st := s.Status(); st.Attempts >= 3 {
			if st.Connected {
				t.Fatalf("connected to a closed port: %+v", st)
			}
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("attempts never counted: %+v", s.Status())
		}
	}
	c := sharedZooKeeper.For(t)
	cl2, err := Dial(Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := cl2.Session().WaitConnected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 0 {
		t.Fatalf("a session holds Attempts %d, want 0", st.Attempts)
	}
}

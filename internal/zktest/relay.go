package zktest

import (
	"io"
	"net"
	"strings"
	"sync"
)

// Relay starts a TCP proxy on a random loopback port in front of target
// (the first server of a connection string) and returns its address. It
// closes the first drop connections it accepts at once; for each later one
// it dials the server and calls serve, on a goroutine of its own, with the
// client's side in and the server's side out. Both are closed when serve
// returns and when the test ends, and the test's end waits for every serve
// (and the proxy's own goroutine): nothing the proxy started outlives the
// test.
func Relay(t TB, target string, drop int, serve func(in, out net.Conn)) string {
	t.Helper()
	if i := strings.IndexByte(target, ','); i >= 0 {
		target = target[:i]
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy listen: %v", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			in, err := l.Accept()
			if err != nil {
				return
			}
			if n < drop {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer out.Close()
				defer in.Close()
				serve(in, out)
			}()
		}
	}()
	return l.Addr().String()
}

// Pipe copies in both directions between a and b until either side ends,
// then closes both: Relay's plain forwarding.
func Pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(a, b)
		a.Close()
		b.Close()
	}()
	_, _ = io.Copy(b, a)
	a.Close()
	b.Close()
	<-done
}

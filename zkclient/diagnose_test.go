package zkclient

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDiagnoseNamesEachServersCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	_ = l.Close()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go func() {
		for {
			c, err := open.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := Diagnose(ctx, Config{Servers: []string{refused, "zk2.invalid:2181", open.Addr().String()}})
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3", len(got))
	}
	if got[0].Server != refused || !errors.Is(got[0], syscall.ECONNREFUSED) || got[0].Error() != refused+": connection refused" {
		t.Errorf("closed port: %v", got[0])
	}
	var dnsErr *net.DNSError
	if !errors.As(got[1], &dnsErr) || !strings.HasPrefix(got[1].Error(), "zk2.invalid:2181: lookup zk2.invalid") {
		t.Errorf("unresolvable name: %v", got[1])
	}
	if !errors.Is(got[2], ErrNoSession) {
		t.Errorf("listening port: %v, want ErrNoSession", got[2])
	}
}

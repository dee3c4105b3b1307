package zkclient_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

func TestTLS(t *testing.T) {
	c := zktest.StartWith(t, zktest.Options{Size: 1, SecureClient: true, SecureOnly: true})
	// Dial by name: the certificate is checked against "localhost", not the
	// IP the client resolves it to.
	byName := []string{net.JoinHostPort("localhost", strconv.Itoa(c.Servers[0].SecurePort))}
	good := zkclient.TLSFiles{CAFile: c.CA.CertFile}
	cfg, err := good.Load()
	if err != nil {
		t.Fatal(err)
	}
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: byName, SessionTimeout: 4 * time.Second, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Get("/zookeeper"); err != nil {
		t.Fatal(err)
	}

	t.Run("wrong CA", func(t *testing.T) {
		other, err := zktest.NewCA(t.TempDir(), "other")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := zkclient.TLSFiles{CAFile: other.CertFile}.Load()
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = zkclient.DialConn(zkclient.Config{Servers: byName, TLS: cfg})
		if !errors.Is(err, zkclient.ErrTLS) || !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("dial with a wrong CA = %v", err)
		}
	})
	t.Run("wrong server name", func(t *testing.T) {
		cfg, err := zkclient.TLSFiles{CAFile: c.CA.CertFile, ServerName: "zk.example.com"}.Load()
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = zkclient.DialConn(zkclient.Config{Servers: byName, TLS: cfg})
		if !errors.Is(err, zkclient.ErrTLS) || !strings.Contains(err.Error(), "zk.example.com") {
			t.Fatalf("dial with a wrong server name = %v", err)
		}
	})
	t.Run("bad files", func(t *testing.T) {
		_, err := zkclient.TLSFiles{CAFile: "/nonexistent", CertFile: "x"}.Load()
		if err == nil || !strings.Contains(err.Error(), "CA file") || !strings.Contains(err.Error(), "together") {
			t.Fatalf("bad files = %v", err)
		}
	})
}

func TestMutualTLS(t *testing.T) {
	c := zktest.StartWith(t, zktest.Options{Size: 1, SecureClient: true, SecureOnly: true, ClientAuth: "need"})
	addrs := c.SecureAddrs()
	noCert, err := c.CA.ClientTLS("localhost", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := zkclient.DialConn(zkclient.Config{Servers: addrs, TLS: noCert}); !errors.Is(err, zkclient.ErrTLS) {
		t.Fatalf("dial without a client certificate to a server that needs one = %v", err)
	}
	withCert, err := c.CA.ClientTLS("localhost", true)
	if err != nil {
		t.Fatal(err)
	}
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: addrs, SessionTimeout: 4 * time.Second, TLS: withCert})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
}

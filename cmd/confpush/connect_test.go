package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// runBounded runs confpush and fails the test when it does not return
// within a generous bound: the command's own --timeout is 120s, so only
// the connect timeout can end it in time.
func runBounded(t *testing.T, args ...string) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(append([]string{"--timeout", "120s", "--connect-timeout", "3s"}, args...), &out, &errb)
		done <- outcome{code, out.String(), errb.String()}
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(60 * time.Second):
		t.Fatalf("confpush %v did not give up within 60s with --connect-timeout 3s", args)
		return outcome{}
	}
}

// TestCLIUnreachableNamesEachServer: with no session in the connect
// timeout, every command names each server and its cause.
func TestCLIUnreachableNamesEachServer(t *testing.T) {
	refused := closedPort(t)
	runBounded(t, "--zk", refused, "history").
		want(t, exitError, "cannot reach ZooKeeper within 3s", refused+": connection refused")
	runBounded(t, "--zk", "zk1.invalid:2181,"+refused, "status").
		want(t, exitError, "cannot reach ZooKeeper", "zk1.invalid:2181: lookup zk1.invalid", refused+": connection refused")
	dir := writeFiles(t, t.TempDir(), map[string]string{"a": "a"})
	o := runBounded(t, "--zk", refused, "--json", "publish", dir)
	o.want(t, exitError, `"kind": "error"`, refused+": connection refused")
}

// TestCLIPlainClientOnTLSPort: a plain client against a secureClientPort
// is told the server expects TLS, instead of retrying in silence.
func TestCLIPlainClientOnTLSPort(t *testing.T) {
	srv := zktest.StartWith(t, zktest.Options{Size: 1, SecureClient: true, MaxSessionTimeout: 30 * time.Second})
	addr := srv.SecureAddrs()[0]
	runBounded(t, "--zk", addr, "get", "a").
		want(t, exitError, "cannot reach ZooKeeper within 3s", addr+": ZooKeeper TLS handshake failed", "expects TLS")
	// The plain port of the same server still works: the probe blamed the
	// port, not the server.
	runBounded(t, "--zk", srv.ConnString(), "history").want(t, 0)
}

// TestCLIConnectingNoticeOnTerminal: on a terminal, a command without a
// session after a second says whom it is connecting to; off a terminal it
// prints only the final error.
func TestCLIConnectingNoticeOnTerminal(t *testing.T) {
	refused := closedPort(t)
	ctl, term := openPTY(t)
	seen := make(chan string, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			all = append(all, buf[:n]...)
			if strings.Contains(string(all), "cannot reach ZooKeeper") || err != nil {
				seen <- string(all)
				return
			}
		}
	}()
	var out bytes.Buffer
	code := runIO([]string{"--zk", refused, "--connect-timeout", "3s", "history"}, strings.NewReader(""), &out, term)
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	select {
	case got := <-seen:
		if !strings.Contains(got, "connecting to "+refused+" …") {
			t.Fatalf("no connecting notice on the terminal:\n%q", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("nothing read from the terminal")
	}
	o := runBounded(t, "--zk", refused, "history")
	if strings.Contains(o.stderr, "connecting to") {
		t.Fatalf("connecting notice off a terminal:\n%s", o.stderr)
	}
}

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestCLIBadInputAbandonsEarlySession: publish dials while it reads its
// input (startDial); input that fails its checks ends that dial: against a
// server the session it may have opened is closed before run returns
// (the server's live connections come back to what they were) and no
// write request reached it, and
// against an unreachable server the error is the input's, at once, not
// after the connect timeout.
func TestCLIBadInputAbandonsEarlySession(t *testing.T) {
	srv := startZK(t)
	bad := writeFiles(t, t.TempDir(), map[string]string{"a.json": "{not json"})
	alive := func() int {
		t.Helper()
		m, err := srv.Mntr(0)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(m["zk_num_alive_connections"])
		if err != nil {
			t.Fatalf("mntr zk_num_alive_connections: %v", err)
		}
		return n
	}
	before := alive()
	// Through a proxy counting the requests: refused input sends no
	// write (nothing goes through the session before the input passed).
	counter := zktest.CountRequests(t, srv.Addrs()[0])
	c := cli{t: t, zk: counter.Addr(), root: "/cli/earlydial"}
	for range 3 {
		c.run("publish", bad).want(t, exitUsage, `item "a.json": invalid JSON`)
	}
	// ZooKeeper's write requests: create, delete, setData, setACL,
	// multi, create2, createContainer, createTTL.
	for _, op := range []int32{1, 2, 5, 7, 14, 15, 19, 21} {
		if n := counter.Count(op); n != 0 {
			t.Fatalf("refused input sent %d write requests of type %d", n, op)
		}
	}
	// The server drops a closed session's connection after it answered
	// the close: poll (no event to await), bounded generously. A session
	// left open would keep its connection (and ping) for ever.
	deadline := time.Now().Add(30 * time.Second)
	for n := alive(); n > before; n = alive() {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections alive after three refused publishes, %d before: a dial was not abandoned", n, before)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Unreachable: the connect timeout (10 minutes here) is not waited
	// for, and the error names the input, not the servers.
	refused := closedPort(t)
	done := make(chan outcome, 1)
	go func() {
		done <- runArgs("--zk", refused, "--timeout", "20m", "--connect-timeout", "10m", "publish", bad)
	}()
	select {
	case o := <-done:
		o.want(t, exitUsage, `item "a.json": invalid JSON`)
		if strings.Contains(o.stderr, "ZooKeeper") {
			t.Fatalf("refused input reported the servers:\n%s", o.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("publish of refused input waited for the connect timeout")
	}
}

// TestCLIPublishChecksSurviveRefusedAttempts: publish queues its first
// reads (the access probe, the open-root check, the prefetch) on the
// connection before its session is established; a connection attempt
// that fails meanwhile answers them with a lost connection (the client
// gives back the requests it holds when it goes round its server list).
// Behind a proxy that drops the first two connections, publish must still
// take the session that comes, check it, warn about the open root and
// publish: an answer from a failed attempt is not the probe's verdict.
func TestCLIPublishChecksSurviveRefusedAttempts(t *testing.T) {
	srv := startZK(t)
	proxy := flakyProxy(t, srv.ConnString(), 2)
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n", "b.conf": "two\n"})
	c := cli{t: t, zk: proxy, root: "/cli/earlyreads"}
	c.run("publish", dir).want(t, exitOK, "published generation 1", "root /cli/earlyreads does not exist yet")
	direct := cli{t: t, zk: srv.ConnString(), root: "/cli/earlyreads"}
	direct.run("get", "b.conf").want(t, exitOK, "two")
}

// flakyProxy forwards TCP connections to target, closing the first drop
// of them at once, and returns its address; it stops with the test.
func flakyProxy(t *testing.T, target string, drop int) string {
	t.Helper()
	return zktest.Relay(t, target, drop, zktest.Pipe)
}

// TestCLIPublishOnServerWithoutMultiRead: publish reads the live items
// with one multiRead, in flight with the access probe and the open-root
// check; a ZooKeeper older than 3.6 refuses it and closes the connection,
// and every read then in flight is answered with a lost connection.
// Through a proxy that answers multiRead as 3.5 does (only 3.8 is
// installed here), each publish must still pass its probe, warn about
// the open root, say why it reconnected, and publish; each run pays one
// refusal (a one-shot process remembers nothing), never two.
func TestCLIPublishOnServerWithoutMultiRead(t *testing.T) {
	srv := startZK(t)
	files := map[string]string{"a.conf": "one\n", "b.conf": "two\n", "c.conf": "three\n"}
	dir := writeFiles(t, t.TempDir(), files)
	direct := cli{t: t, zk: srv.ConnString(), root: "/cli/oldserver"}
	direct.run("publish", "--allow-open", dir).want(t, exitOK, "published generation 1")

	old := zktest.NoMultiRead(t, srv.ConnString())
	c := cli{t: t, zk: old.Addr(), root: "/cli/oldserver"}
	for gen := 2; gen <= 3; gen++ {
		files["b.conf"] = "two, generation " + strconv.Itoa(gen) + "\n"
		writeFiles(t, dir, files)
		// --log-level info: the refusal's answer is a warning, but it can
		// be lost with the connection the server closes right after it
		// (the client then logs the lost multiRead at info).
		c.run("--log-level", "info", "publish", dir).want(t, exitOK, "published generation "+strconv.Itoa(gen),
			"root /cli/oldserver has no access control", "multiRead")
		if got := old.Refused(); got != gen-1 {
			t.Fatalf("after publish of generation %d: %d multiReads refused, want %d", gen, got, gen-1)
		}
		direct.run("get", "b.conf").want(t, exitOK, files["b.conf"])
	}
}

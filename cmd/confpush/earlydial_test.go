package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCLIBadInputAbandonsEarlySession: publish dials while it reads its
// input (startDial); input that fails its checks ends that dial: against a
// server the session it may have opened is closed before run returns
// (the server's live connections come back to what they were), and
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
	c := cli{t: t, zk: srv.ConnString(), root: "/cli/earlydial"}
	for range 3 {
		c.run("publish", bad).want(t, exitUsage, `item "a.json": invalid JSON`)
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

package zktest_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
)

func TestStandaloneServes(t *testing.T) {
	c := zktest.Start(t)
	if m, err := c.Mode(0); err != nil || m != "standalone" {
		t.Fatalf("mode = %q, %v; want standalone", m, err)
	}
	conn := c.Connect(t, 4*time.Second)
	if _, err := conn.Create("/x", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	b, _, err := conn.Get("/x")
	if err != nil || string(b) != "v" {
		t.Fatalf("get = %q, %v", b, err)
	}
}

// TestServersEnforceQuotas: test servers refuse a write past a hard
// quota, as production servers must (docs/install.md), standalone and in
// an ensemble (the leader checks). Without zookeeper.enforceQuota=true
// the writes land and the server only logs.
func TestServersEnforceQuotas(t *testing.T) {
	for _, size := range []int{1, 3} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			c := zktest.StartEnsemble(t, size)
			// Through the leader: it checks a write against the quota's
			// counts as its own data tree has applied them, and a
			// follower may answer the create of /q before the leader
			// applied it (then /q/over passed the check, under load).
			// The leader answers only once it applied the create.
			conn := c.Connect(t, 4*time.Second, c.Addrs()[c.Leader()])
			open := zk.WorldACL(zk.PermAll)
			if _, err := conn.Create("/zookeeper/quota/q", nil, 0, open); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Multi(
				&zk.CreateRequest{Path: "/zookeeper/quota/q/zookeeper_limits", Data: []byte("count=-1,bytes=-1,countHardLimit=1,byteHardLimit=-1"), Acl: open},
				&zk.CreateRequest{Path: "/zookeeper/quota/q/zookeeper_stats", Data: []byte("count=0,bytes=0"), Acl: open},
			); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Create("/q", nil, 0, open); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Create("/q/over", nil, 0, open); err == nil || err.Error() != "unknown error: -125" {
				t.Fatalf("create past a hard quota: %v; want QuotaExceeded (unknown error: -125)", err)
			}
		})
	}
}

// TestEnsembleLeaderKill kills the leader of a 3-node ensemble and shows that
// a client reconnects and reads and writes through the new leader.
func TestEnsembleLeaderKill(t *testing.T) {
	c := zktest.StartEnsemble(t, 3)
	conn := c.Connect(t, 4*time.Second)
	if _, err := conn.Create("/before", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	old := c.Leader()
	c.Kill(old)
	nl := c.Leader()
	if nl == old {
		t.Fatalf("leader still %d after kill", old)
	}
	// The client's next requests go through the new quorum; the first may
	// fail with a connection error while it reconnects, which is the
	// recoverable class: retry idempotent reads, and a create that may have
	// landed is checked, not blindly re-sent.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := conn.Create("/after", []byte("2"), 0, zk.WorldACL(zk.PermAll))
		if err == nil || err == zk.ErrNodeExists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through the new leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range []string{"/before", "/after"} {
		if _, _, err := conn.Get(p); err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
	}
	c.Restart(old)
	if m, err := c.Mode(old); err != nil || m != "follower" {
		t.Fatalf("restarted server mode = %q, %v; want follower", m, err)
	}
}

func TestFiveNodeEnsemble(t *testing.T) {
	c := zktest.StartEnsemble(t, 5)
	leaders := 0
	for i := range c.Servers {
		if m, _ := c.Mode(i); m == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders in a 5-node ensemble", leaders)
	}
	conn := c.Connect(t, 4*time.Second)
	if _, err := conn.Create("/five", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// TestNoServerOutlivesCrash runs this test binary again as a child that
// starts a server and then kills itself (so no t.Cleanup runs), and checks that the
// child's java process dies with it.
func TestNoServerOutlivesCrash(t *testing.T) {
	if os.Getenv("ZKTEST_CRASH_CHILD") == "1" {
		c := zktest.Start(t)
		fmt.Printf("JAVA_PID=%d\n", c.Servers[0].PID())
		// SIGKILL to itself: no deferred call, no t.Cleanup runs, as when
		// a test binary is killed by the go test timeout or the OOM killer.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoServerOutlivesCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZKTEST_CRASH_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child did not crash:\n%s", out)
	}
	var pid int
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "JAVA_PID="); ok {
			pid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if pid == 0 {
		t.Fatalf("child printed no server pid:\n%s", out)
	}
	// PR_SET_PDEATHSIG delivers SIGKILL when the child exits; the kernel may
	// take a moment to reap. Nothing signals us when an unrelated pid goes
	// away, so poll /proc with a generous bound.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("java process %d outlived its crashed test binary", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zombie reports whether pid exists only as an unreaped zombie (its parent,
// the crashed child, is gone and init has not reaped it yet).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestTLSServer starts a TLS-only server and connects through TLS.
func TestTLSServer(t *testing.T) {
	c := zktest.StartWith(t, zktest.Options{Size: 1, SecureClient: true, SecureOnly: true})
	cfg, err := c.CA.ClientTLS("localhost", false)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect(c.SecureAddrs(), 4*time.Second, zk.WithLogInfo(false),
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ok, _, err := conn.Exists("/zookeeper"); err != nil || !ok {
		t.Fatalf("exists over TLS = %v, %v", ok, err)
	}
}

// TestWipe: a wiped server comes back on the same address with no data.
func TestWipe(t *testing.T) {
	c := zktest.Start(t)
	addr := c.Addrs()[0]
	conn := c.Connect(t, 4*time.Second)
	if _, err := conn.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Wipe(0)
	if c.Addrs()[0] != addr {
		t.Fatalf("address changed: %s -> %s", addr, c.Addrs()[0])
	}
	ok, _, err := c.Connect(t, 4*time.Second).Exists("/x")
	if err != nil || ok {
		t.Fatalf("after the wipe /x exists=%v (%v), want gone", ok, err)
	}
}

// TestShared: a Shared server starts on the first Addrs, serves the same
// address to every later call, and is gone after Stop; Launch reports a
// server that cannot start as an error (no exit, no panic) and removes
// what it made.
func TestShared(t *testing.T) {
	var s zktest.Shared
	defer s.Stop()
	addrs := s.Addrs()
	if out, err := zktest.FourLetter(addrs[0], "srvr", 5*time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want a standalone server", out, err)
	}
	if again := s.Addrs(); fmt.Sprint(again) != fmt.Sprint(addrs) {
		t.Fatalf("second Addrs = %v; want the same server %v", again, addrs)
	}
	s.Stop()
	if out, err := zktest.FourLetter(addrs[0], "srvr", 5*time.Second); err == nil && out != "" {
		t.Fatalf("server still answers after Stop: %q", out)
	}

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Launch makes its directories
	c, stop, err := zktest.Launch(zktest.Options{Config: map[string]string{"tickTime": "not-a-number"}})
	if err == nil || c != nil || stop != nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Fatalf("Launch with a broken zoo.cfg = %v, %v, %v; want an error naming the exit", c, stop != nil, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Launch left %d entries in %s", len(left), tmp)
	}
}

// TestObserverEnsemble starts 3 voters and 1 observer: the observer serves
// clients in mode "observer", every server's config names it as one, and a
// write through a voter reaches a watcher connected to the observer alone.
func TestObserverEnsemble(t *testing.T) {
	c := zktest.StartWith(t, zktest.Options{Size: 3, Observers: 1})
	if len(c.Servers) != 4 || !c.Servers[3].Observer || c.Servers[0].Observer {
		t.Fatalf("servers: want 3 voters then 1 observer, got %d", len(c.Servers))
	}
	if m, err := c.Mode(3); err != nil || m != "observer" {
		t.Fatalf("server 4 mode = %q, %v; want observer", m, err)
	}
	for i := range 3 {
		if m, err := c.Mode(i); err != nil || (m != "leader" && m != "follower") {
			t.Fatalf("server %d mode = %q, %v; want a voter", i+1, m, err)
		}
	}
	if got := c.ObserverAddrs(); len(got) != 1 || got[0] != c.Servers[3].Addr() {
		t.Fatalf("ObserverAddrs = %v", got)
	}
	if got := c.VoterAddrs(); len(got) != 3 {
		t.Fatalf("VoterAddrs = %v", got)
	}
	voter := c.Connect(t, 4*time.Second, c.VoterAddrs()...)
	obs := c.Connect(t, 4*time.Second, c.ObserverAddrs()...)
	if _, err := voter.Create("/cfg", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// The observer's session may not have seen the create yet: Sync first.
	if _, err := obs.Sync("/cfg"); err != nil {
		t.Fatal(err)
	}
	b, _, ch, err := obs.GetW("/cfg")
	if err != nil || string(b) != "1" {
		t.Fatalf("observer read = %q, %v; want 1", b, err)
	}
	if _, err := voter.Set("/cfg", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("observer watch: %v", ev)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the observer's watch did not fire within 60s")
	}
	if b, _, err := obs.Get("/cfg"); err != nil || string(b) != "2" {
		t.Fatalf("observer read after the change = %q, %v; want 2", b, err)
	}
	if srv := obs.Server(); srv != c.Servers[3].Addr() {
		t.Fatalf("the observer's client is connected to %s, want the observer %s", srv, c.Servers[3].Addr())
	}
	for _, s := range c.Servers {
		cfg, err := os.ReadFile(s.Dir + "/zoo.cfg")
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("server.4=127.0.0.1:%d:%d:observer", c.Servers[3].PeerPort, c.Servers[3].ElectionPort)
		if !strings.Contains(string(cfg), line) {
			t.Fatalf("server %d config lacks %q", s.ID, line)
		}
		if got := strings.Contains(string(cfg), "peerType=observer"); got != s.Observer {
			t.Fatalf("server %d: peerType=observer present %v, want %v", s.ID, got, s.Observer)
		}
	}
}

// TestSharedFor: two tests given the same Shared server by For see the
// same server, but the second finds none of the first's nodes, not even
// one under an ACL that locks everyone else out, nor its quota, and the
// nodes that stay as a fresh server has them (ACL, data); a test
// that tries to kill, restart or wipe the shared server fails instead;
// and the server is gone after Stop.
func TestSharedFor(t *testing.T) {
	s := zktest.Shared{Options: zktest.Options{MaxSessionTimeout: 30 * time.Second}}
	defer s.Stop()
	var addr string
	t.Run("writes", func(t *testing.T) {
		c := s.For(t)
		addr = c.Addrs()[0]
		if cfg, err := os.ReadFile(c.Servers[0].Dir + "/zoo.cfg"); err != nil || !strings.Contains(string(cfg), "maxSessionTimeout=30000\n") {
			t.Fatalf("zoo.cfg lacks the Options' maxSessionTimeout=30000 (%v):\n%s", err, cfg)
		}
		conn := c.Connect(t, 20*time.Second)
		if err := conn.AddAuth("digest", []byte("owner:pw")); err != nil {
			t.Fatal(err)
		}
		locked := zk.DigestACL(zk.PermAll, "owner", "pw")
		for _, p := range []string{"/app", "/app/locked", "/app/locked/child", "/zookeeper/quota/app"} {
			if _, err := conn.Create(p, nil, 0, locked); err != nil {
				t.Fatalf("create %s: %v", p, err)
			}
		}
		if _, err := conn.Create("/app/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		// What a locked-down deployment does to the nodes that stay.
		if _, err := conn.SetACL("/zookeeper/quota", locked, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Set("/", []byte("marked"), -1); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("finds it empty", func(t *testing.T) {
		c := s.For(t)
		if c.Addrs()[0] != addr {
			t.Fatalf("second test got server %s, want the shared %s", c.Addrs()[0], addr)
		}
		conn := c.Connect(t, 4*time.Second)
		for parent, want := range map[string]string{"/": "[zookeeper]", "/zookeeper/quota": "[]"} {
			kids, _, err := conn.Children(parent)
			if err != nil || fmt.Sprint(kids) != want {
				t.Fatalf("children of %s = %v, %v; want %s", parent, kids, err, want)
			}
		}
		if acl, _, err := conn.GetACL("/zookeeper/quota"); err != nil || fmt.Sprint(acl) != fmt.Sprint(zk.WorldACL(zk.PermAll)) {
			t.Fatalf("ACL of /zookeeper/quota = %v, %v; want a fresh server's world cdrwa", acl, err)
		}
		if data, _, err := conn.Get("/"); err != nil || len(data) != 0 {
			t.Fatalf("data of / = %q, %v; want a fresh server's none", data, err)
		}
	})
	t.Run("may not kill it", func(t *testing.T) {
		tb := &recordingTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.For(tb).Kill(0)
		}()
		<-done
		if !strings.Contains(tb.fatal, "shared server is never stopped") {
			t.Fatalf("Kill on a shared server: Fatalf %q, want the refusal", tb.fatal)
		}
		if out, err := zktest.FourLetter(addr, "srvr", 5*time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
			t.Fatalf("after the refused Kill srvr = %q, %v; want the server still serving", out, err)
		}
	})
	s.Stop()
	if out, err := zktest.FourLetter(addr, "srvr", 5*time.Second); err == nil && out != "" {
		t.Fatalf("server still answers after Stop: %q", out)
	}
}

// recordingTB records Fatalf and ends the goroutine, as testing.T does,
// without failing the real test.
type recordingTB struct {
	testing.TB
	fatal string
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

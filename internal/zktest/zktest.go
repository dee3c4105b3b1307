// Package zktest starts real Apache ZooKeeper servers for tests: a standalone
// server or an ensemble of N, on free loopback ports, with throw-away data
// directories and a small tickTime so that session expiry takes seconds.
// Every server enforces quotas (EnforceQuota), as in production.
//
// Every server is a child java process started with PR_SET_PDEATHSIG=SIGKILL
// and in its own process group, and is killed in t.Cleanup: no server outlives
// the test that started it, nor the test binary if it panics or times out.
// Code without a testing.TB (a TestMain, examples, make demo's zkdev) starts
// servers with Launch, or shares one with Shared, and stops them itself.
// Tests that need only "a ZooKeeper" share one per test binary too
// (Shared.For, which empties it for each test): a JVM start costs more
// CPU than most such tests, and the suite runs on a busy machine.
//
// The server is found through $ZOOKEEPER_CLASSPATH, or else the Debian
// package's /usr/share/java/zookeeper.jar (with /etc/zookeeper/conf after
// the jars), which scripts/ensure-zookeeper.sh installs. A missing server
// is a test failure, never a skip.
//
// A JVM start is mostly class loading, so servers start from an AppCDS
// archive of the leading jars of the classpath: the first start with no
// archive runs a training server (-XX:ArchiveClassesAtExit, a session
// through the requests tests make, SIGTERM) under a flock and renames the
// archive into place once the JVM has exited by itself; later servers map
// it (-XX:SharedArchiveFile). Its SHA-256, kept beside it, is checked
// before each cluster starts (a few ms, where the JVM's own
// -XX:+VerifySharedSpaces costs a tenth of a second per server). It lives
// in the user's cache directory (or a private directory under $TMPDIR)
// under a name hashed from the java binary, the JDK's files, the flags
// and the jars (with those their manifests name), so a new JDK or
// ZooKeeper gets a new one. A start never waits for another binary's
// training, and never fails because of the archive: missing, damaged or
// being made means a plain start, and an archived start that dies before
// serving is retried plainly and the archive marked failed (a cut archive
// crashes the JVM rather than being refused). With the archive, one
// compiler thread and no perf-data file, a server costs about a third less
// CPU to start (0.6-0.7 s instead of 0.9-1.1 s on the 2-core test machine).
package zktest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultTickTime is the tickTime of test servers. Sessions may last between
// 2 and 20 ticks, so 200ms allows session timeouts from 400ms to 4s and a
// forced expiry takes a few seconds.
const DefaultTickTime = 200 * time.Millisecond

// EnforceQuota is the server property every test server runs with, as
// docs/install.md tells operators to: ZooKeeper (3.7+) then refuses a
// write past a hard quota ("confpush init" sets them) instead of only
// logging it.
const EnforceQuota = "zookeeper.enforceQuota=true"

// startTimeout bounds how long a server may take to start serving. A JVM on a
// loaded 2-core machine can be slow; a healthy one serves in 1-2 s.
const startTimeout = 60 * time.Second

// TB is the part of testing.TB the harness uses; testing.TB satisfies it,
// and so can a small program that wants a throw-away server (make demo).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Options configures a test cluster.
type Options struct {
	// Size is the number of voting servers; 1 starts a standalone server
	// (unless Observers is set).
	Size int
	// Observers adds this many observers (peerType=observer) after the Size
	// voters: they serve clients and forward writes but do not vote, which
	// is how a fleet of thousands of followers is spread without slowing
	// the quorum. Their Servers come last, with Server.Observer set.
	Observers int
	// TickTime is ZooKeeper's tickTime; DefaultTickTime when zero.
	TickTime time.Duration
	// MaxSessionTimeout overrides the server's maximum session timeout
	// (default 20 ticks).
	MaxSessionTimeout time.Duration
	// Config adds or overrides lines of every server's zoo.cfg.
	Config map[string]string
	// JVMFlags are extra java flags (system properties for TLS, say).
	// They follow the test defaults (C1 only, one compiler thread), so a
	// later flag wins; a caller that turns C2 back on
	// (-XX:TieredStopAtLevel=4) must also give -XX:CICompilerCount=2,
	// or the JVM refuses to start.
	JVMFlags []string
	// SecureClient makes each server also listen on a secureClientPort,
	// reported by Server.SecurePort, with a certificate for localhost and
	// 127.0.0.1 issued by Cluster.CA (a throw-away CA made for the cluster).
	SecureClient bool
	// ClientAuth is ZooKeeper's ssl.clientAuth with SecureClient: "none"
	// (default), "want" or "need" (mutual TLS).
	ClientAuth string
	// SecureOnly, with SecureClient, disables the plain client port.
	SecureOnly bool
}

// Server is one ZooKeeper server of a Cluster.
type Server struct {
	ID           int
	ClientPort   int
	SecurePort   int
	PeerPort     int
	ElectionPort int
	Dir          string
	// Observer is set on the observers of Options.Observers.
	Observer bool

	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	logFile *os.File
}

// PID is the server's java process id, or 0 when it is not running.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Addr is the server's client address, "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ClientPort)) }

// SecureAddr is the server's TLS client address, when SecureClient was set.
func (s *Server) SecureAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.SecurePort))
}

// Cluster is a running set of ZooKeeper servers owned by one test.
type Cluster struct {
	t    TB
	opts Options
	// CA issued the servers' certificates when Options.SecureClient is set.
	CA *CA
	// adminTLS is how the harness itself talks to TLS-only servers.
	adminTLS *tls.Config
	// shared marks a test's view of a Shared server, which the test may
	// not stop, restart or wipe.
	shared bool
	// fresh holds a shared server's top nodes as it started.
	fresh map[string]node
	// java is how the servers start (classpath, class archive).
	java    serverJava
	mu      sync.Mutex
	Servers []*Server
}

// Start starts a standalone server and waits until it serves.
func Start(t TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{Size: 1})
}

// StartEnsemble starts an ensemble of n servers and waits until all serve.
func StartEnsemble(t TB, n int) *Cluster {
	t.Helper()
	return StartWith(t, Options{Size: n})
}

// StartWith starts a cluster as opts say and waits until every server serves.
// It fails the test, with the server's own output, when one does not start.
func StartWith(t TB, opts Options) *Cluster {
	t.Helper()
	return startWith(t, opts, classArchive())
}

func startWith(t TB, opts Options, java serverJava) *Cluster {
	t.Helper()
	if opts.Size < 1 {
		opts.Size = 1
	}
	if opts.TickTime == 0 {
		opts.TickTime = DefaultTickTime
	}
	c := &Cluster{t: t, opts: opts, java: java}
	t.Cleanup(c.killAll)

	// A port picked by listening on :0 may be taken by someone else before the
	// server binds it; when that happens the whole cluster is retried on new
	// ports rather than failing the test.
	var lastErr, archiveErr error
start:
	for attempt := 0; attempt < 3; attempt++ {
		if err := c.layout(); err != nil {
			t.Fatalf("zktest: %v", err)
		}
		for _, s := range c.Servers {
			if err := c.spawn(s); err != nil {
				t.Fatalf("zktest: %v", err)
			}
		}
		lastErr = c.waitAll()
		if lastErr == nil {
			if archiveErr != nil {
				// The plain start worked where the archived one did not:
				// no later start uses that archive.
				markArchiveFailed(java.archive, archiveErr)
			}
			return c
		}
		switch {
		case strings.Contains(lastErr.Error(), "Address already in use"):
		case c.java.archive != "" && errors.Is(lastErr, errExited):
			// A server that dies before serving from the class archive
			// (a damaged file the JVM cannot reject) is started again
			// without it.
			archiveErr = lastErr
			c.java = serverJava{classpath: Classpath()}
		default:
			break start
		}
		c.killAll()
	}
	t.Fatalf("zktest: %v", lastErr)
	return nil
}

func (c *Cluster) layout() error {
	base := c.t.TempDir()
	if c.opts.SecureClient && c.CA == nil {
		ca, err := NewCA(base, "zktest")
		if err != nil {
			return fmt.Errorf("test CA: %w", err)
		}
		c.CA = ca
		if c.adminTLS, err = ca.ClientTLS("localhost", true); err != nil {
			return fmt.Errorf("test CA: %w", err)
		}
	}
	total := c.opts.Size + c.opts.Observers
	ports, err := FreePorts(4 * total)
	if err != nil {
		return err
	}
	c.Servers = make([]*Server, total)
	for i := range c.Servers {
		s := &Server{
			ID:           i + 1,
			Observer:     i >= c.opts.Size,
			ClientPort:   ports[4*i],
			SecurePort:   ports[4*i+1],
			PeerPort:     ports[4*i+2],
			ElectionPort: ports[4*i+3],
			Dir:          filepath.Join(base, fmt.Sprintf("zk%d", i+1)),
		}
		if err := os.MkdirAll(filepath.Join(s.Dir, "data"), 0o755); err != nil {
			return err
		}
		c.Servers[i] = s
	}
	for _, s := range c.Servers {
		if err := c.writeConfig(s); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeConfig(s *Server) error {
	tick := int(c.opts.TickTime / time.Millisecond)
	cfg := map[string]string{
		"tickTime":                strconv.Itoa(tick),
		"initLimit":               "50",
		"syncLimit":               "25",
		"dataDir":                 filepath.Join(s.Dir, "data"),
		"clientPort":              strconv.Itoa(s.ClientPort),
		"clientPortAddress":       "127.0.0.1",
		"maxClientCnxns":          "0",
		"4lw.commands.whitelist":  "*",
		"admin.enableServer":      "false",
		"autopurge.purgeInterval": "0",
		"preAllocSize":            "4096",
		"snapCount":               "100000",
		"maxSessionTimeout":       strconv.Itoa(20 * tick),
	}
	if c.opts.MaxSessionTimeout > 0 {
		cfg["maxSessionTimeout"] = strconv.Itoa(int(c.opts.MaxSessionTimeout / time.Millisecond))
	}
	if c.opts.SecureClient {
		cfg["secureClientPort"] = strconv.Itoa(s.SecurePort)
		cfg["secureClientPortAddress"] = "127.0.0.1"
		auth := c.opts.ClientAuth
		if auth == "" {
			auth = "none"
		}
		tlsCfg, err := c.CA.serverConfig(fmt.Sprintf("server%d", s.ID), auth)
		if err != nil {
			return err
		}
		maps.Copy(cfg, tlsCfg)
		if c.opts.SecureOnly {
			delete(cfg, "clientPort")
			delete(cfg, "clientPortAddress")
		}
	}
	if s.Observer {
		cfg["peerType"] = "observer"
	}
	for k, v := range c.opts.Config {
		cfg[k] = v
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		fmt.Fprintf(&b, "%s=%s\n", k, cfg[k])
	}
	if len(c.Servers) > 1 {
		for _, o := range c.Servers {
			role := ""
			if o.Observer {
				role = ":observer"
			}
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d%s\n", o.ID, o.PeerPort, o.ElectionPort, role)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "data", "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(b.String()), 0o644)
}

// Classpath is the java classpath of the ZooKeeper server.
func Classpath() string {
	if cp := os.Getenv("ZOOKEEPER_CLASSPATH"); cp != "" {
		return cp
	}
	cp := "/usr/share/java/zookeeper.jar"
	// Without an SLF4J binding the server prints nothing; slf4j-simple sends
	// its log to stderr, which we keep in the server's log file. The
	// Debian jar's manifest also leaves out netty-codec, which the Netty
	// connection factory (the only one that speaks TLS) needs.
	for _, jar := range []string{"slf4j-simple.jar", "netty-codec.jar", "netty-resolver.jar"} {
		if _, err := os.Stat("/usr/share/java/" + jar); err == nil {
			cp += ":/usr/share/java/" + jar
		}
	}
	// The conf directory (whose log4j.properties slf4j-simple ignores)
	// comes after the jars: a class archive holds only the jars before
	// the first directory.
	return cp + ":/etc/zookeeper/conf"
}

func (c *Cluster) spawn(s *Server) error {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil && os.Getenv("ZOOKEEPER_CLASSPATH") == "" {
		return errors.New("ZooKeeper is not installed: run scripts/ensure-zookeeper.sh (make test does)")
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(baseJVMFlags(), c.java.flags...)
	args = append(args,
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dzookeeper.jmx.log4j.disable=true",
		// The production setting (docs/install.md): hard quotas refuse
		// writes instead of only logging them.
		"-D"+EnforceQuota,
	)
	args = append(args, c.opts.JVMFlags...)
	args = append(args, "-cp", c.java.classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.Dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = s.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = ChildAttr(true)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start server %d: %w", s.ID, err)
	}
	s.cmd, s.logFile, s.done = cmd, logf, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.done)
	return nil
}

// errExited is a server that exited before it served.
var errExited = errors.New("exited before serving")

func (c *Cluster) waitAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for i := range c.Servers {
		if err := c.waitServing(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// WaitServing waits until server i answers `srvr` with a Mode, i.e. it has
// joined a quorum (or runs standalone) and accepts sessions.
func (c *Cluster) WaitServing(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.waitServing(ctx, i); err != nil {
		c.t.Fatalf("zktest: %v", err)
	}
}

func (c *Cluster) waitServing(ctx context.Context, i int) error {
	s := c.Servers[i]
	for {
		out, err := c.fourLetter(i, "srvr", time.Second)
		if err == nil && strings.Contains(out, "Mode:") {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("server %d %w:\n%s", s.ID, errExited, s.tail())
		case <-ctx.Done():
			return fmt.Errorf("server %d did not serve within %v (last: %v %q):\n%s", s.ID, startTimeout, err, out, s.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail returns the end of the server's log, for failure messages.
func (s *Server) tail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// Log returns server i's output so far.
func (c *Cluster) Log(i int) string {
	b, _ := os.ReadFile(filepath.Join(c.Servers[i].Dir, "server.log"))
	return string(b)
}

// ConnString is the comma-separated list of client addresses.
func (c *Cluster) ConnString() string { return strings.Join(c.Addrs(), ",") }

// Addrs lists every server's client address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr()
	}
	return out
}

// VoterAddrs lists the client addresses of the voting servers (every
// server without Observers): where a publisher connects.
func (c *Cluster) VoterAddrs() []string {
	var out []string
	for _, s := range c.Servers {
		if !s.Observer {
			out = append(out, s.Addr())
		}
	}
	return out
}

// ObserverAddrs lists the client addresses of the observers: where a
// fleet's followers connect.
func (c *Cluster) ObserverAddrs() []string {
	var out []string
	for _, s := range c.Servers {
		if s.Observer {
			out = append(out, s.Addr())
		}
	}
	return out
}

// Stop stops server i with SIGTERM and waits for it to exit.
func (c *Cluster) Stop(i int) { c.t.Helper(); c.signal(i, syscall.SIGTERM) }

// Kill kills server i with SIGKILL and waits for it to exit.
func (c *Cluster) Kill(i int) { c.t.Helper(); c.signal(i, syscall.SIGKILL) }

func (c *Cluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	c.refuseShared()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.Servers[i]
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
	if s.logFile != nil {
		s.logFile.Close()
		s.logFile = nil
	}
}

// Restart starts server i again (after Stop or Kill; it kills it first if it
// still runs), on the same ports and data, and waits until it serves.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.Kill(i)
	c.StartServer(i)
	c.WaitServing(i)
}

// Wipe kills server i, deletes its data (snapshots and transaction logs:
// everything under its data directory but its myid), and starts it again on
// the same ports, waiting until it serves when it can alone (standalone). It
// is a server rebuilt or wiped on the same address: its zxids start over,
// so it refuses a client that has seen a newer one. In an ensemble the
// wiped server resyncs from the leader (wipe a majority, or all, to lose
// the data).
func (c *Cluster) Wipe(i int) {
	c.t.Helper()
	c.Kill(i)
	dir := filepath.Join(c.Servers[i].Dir, "data")
	entries, err := os.ReadDir(dir)
	if err != nil {
		c.t.Fatalf("zktest: wipe: %v", err)
	}
	for _, e := range entries {
		if e.Name() == "myid" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			c.t.Fatalf("zktest: wipe: %v", err)
		}
	}
	c.StartServer(i)
	if len(c.Servers) == 1 {
		c.WaitServing(i)
	}
}

// StartServer starts server i again without waiting for it to serve (useful
// when it cannot serve until a quorum is back).
func (c *Cluster) StartServer(i int) {
	c.t.Helper()
	c.refuseShared()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Servers[i].cmd != nil {
		return
	}
	if err := c.spawn(c.Servers[i]); err != nil {
		c.t.Fatalf("zktest: %v", err)
	}
}

// refuseShared fails the test that tries to stop, restart or wipe the
// server other tests share.
func (c *Cluster) refuseShared() {
	c.t.Helper()
	if c.shared {
		c.t.Fatalf("zktest: a shared server is never stopped, restarted or wiped by a test: start the test's own with zktest.Start")
	}
}

// PID is server i's java process id, or 0 when it is not running; unlike
// Server.PID it may be called while another goroutine restarts the server.
func (c *Cluster) PID(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Servers[i].PID()
}

// Running reports whether server i's process is running.
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Servers[i].cmd != nil
}

// Mode returns server i's mode as `srvr` reports it ("leader", "follower",
// "standalone"), or an error when it does not answer.
func (c *Cluster) Mode(i int) (string, error) {
	out, err := c.fourLetter(i, "srvr", time.Second)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("server %d: no Mode in srvr output %q", c.Servers[i].ID, out)
}

// Leader returns the index of the current leader (or the standalone server),
// waiting up to 30 s for an election to finish.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for i := range c.Servers {
			if !c.Running(i) {
				continue
			}
			if m, err := c.Mode(i); err == nil && (m == "leader" || m == "standalone") {
				return i
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("zktest: no leader within 30s")
		}
		time.Sleep(50 * time.Millisecond) // polling a server that has no event to await
	}
}

// Mntr returns server i's `mntr` counters as a map.
func (c *Cluster) Mntr(i int) (map[string]string, error) {
	out, err := c.fourLetter(i, "mntr", 2*time.Second)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// BumpZxid runs at least n transactions on the cluster (a node /bump,
// set n times), so that what a test publishes next, and the zxid its
// clients have seen, stay above what the server reaches once wiped: as in
// production, where the old ensemble had a long history. A request whose
// connection was lost is sent again (on a loaded machine a session can
// lose its connection during 200 requests): a repeated Set only adds a
// transaction, and a Create that had committed answers "node exists".
func (c *Cluster) BumpZxid(t TB, n int) {
	t.Helper()
	conn := c.Connect(t, 15*time.Second)
	retry := func(what string, op func() error) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			err := op()
			if err == nil {
				return
			}
			if !errors.Is(err, zk.ErrConnectionClosed) || time.Now().After(deadline) {
				t.Fatalf("zktest: bump zxid: %s: %v", what, err)
			}
			time.Sleep(50 * time.Millisecond) // a back-off while the client reconnects, not a wait for an event
		}
	}
	retry("create /bump", func() error {
		_, err := conn.Create("/bump", nil, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	for range n {
		retry("set /bump", func() error {
			_, err := conn.Set("/bump", nil, -1)
			return err
		})
	}
}

// Connect opens a client session to the whole cluster (or to addrs, when
// given), waits until it has a session and closes it in t.Cleanup.
func (c *Cluster) Connect(t TB, sessionTimeout time.Duration, addrs ...string) *zk.Conn {
	t.Helper()
	if len(addrs) == 0 {
		addrs = c.Addrs()
	}
	conn, events, err := zk.Connect(addrs, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		t.Fatalf("zktest: connect: %v", err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatalf("zktest: no session within 30s (state %v)", conn.State())
		}
	}
}

type discard struct{}

func (discard) Printf(string, ...interface{}) {}

func (c *Cluster) killAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.Servers {
		if s == nil || s.cmd == nil {
			continue
		}
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.cmd = nil
		if s.logFile != nil {
			s.logFile.Close()
			s.logFile = nil
		}
	}
}

// fourLetter asks server i, over TLS when it has no plain port.
func (c *Cluster) fourLetter(i int, cmd string, timeout time.Duration) (string, error) {
	if !c.opts.SecureOnly {
		return FourLetter(c.Servers[i].Addr(), cmd, timeout)
	}
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", c.Servers[i].SecureAddr(), c.adminTLS)
	if err != nil {
		return "", err
	}
	return ask(conn, cmd, timeout)
}

// SecureAddrs lists every server's TLS client address (with SecureClient).
func (c *Cluster) SecureAddrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.SecureAddr()
	}
	return out
}

// FourLetter sends a four-letter-word command to addr and returns the answer.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	return ask(conn, cmd, timeout)
}

func ask(conn net.Conn, cmd string, timeout time.Duration) (string, error) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(conn)
	return buf.String(), err
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. They are free
// when returned; a caller must cope with losing one to a race.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

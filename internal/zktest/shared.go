package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Launch starts a cluster as opts say for code that has no testing.TB (a
// TestMain, an example, a program) and returns it with the function that
// kills its servers and removes their directories. A server that does not
// start is an error, never an exit: the caller decides. The servers die
// with the process too (PR_SET_PDEATHSIG), but stop should be called.
func Launch(opts Options) (c *Cluster, stop func(), err error) {
	p := &process{}
	if c, err = launch(p, opts, classArchive()); err != nil {
		return nil, nil, err
	}
	return c, p.stop, nil
}

// launch starts a cluster for p, as Launch does, the way java says.
func launch(p *process, opts Options, java serverJava) (c *Cluster, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(launchFailure)
		if !ok {
			panic(r)
		}
		p.stop()
		c, err = nil, fmt.Errorf("zktest: %s", f.msg)
	}()
	return startWith(p, opts, java), nil
}

// Shared is one standalone server for a test binary: the tests that only
// need "a ZooKeeper" (they never stop, restart or wipe it, put a fault
// proxy in front of its only address, nor count its server-wide requests,
// sessions or watches) take it with For, and the examples, which get no
// *testing.T, with Addrs. It starts on first use and stays up for the
// binary's other tests; TestMain stops it after m.Run (Main does):
//
//	var zooKeeper zktest.Shared
//
//	func TestMain(m *testing.M) { zooKeeper.Main(m) }
//
// A binary whose run selects no test that uses it starts no server. One
// JVM per binary instead of one per test is most of the suite's CPU.
type Shared struct {
	// Options configures the server; Size and Observers are ignored (it
	// is always one standalone server).
	Options Options

	mu   sync.Mutex
	c    *Cluster
	stop func()
}

// topNodes are the nodes a fresh server has that a test may change but
// not delete (confpush's access policy locks /zookeeper/quota, say): For
// puts back their data and ACLs as the fresh server had them.
var topNodes = []string{"/", "/zookeeper", "/zookeeper/quota"}

// node is a top node's data and ACL.
type node struct {
	data []byte
	acl  []zk.ACL
}

// The shared server knows this digest identity as its super user, which
// passes every ACL: a test's restrictive ACLs cannot keep its nodes from
// being removed before the next test. superDigest is ZooKeeper's digest
// of it, base64(sha1(user:password)).
const (
	superUser, superPassword = "zktest-super", "zktest-super"
	superDigest              = "rIjE7B4TqvNfBNcf+XFJ3WYySjM="
)

// Addrs returns the server's client addresses, starting it on the first
// call. It panics when the server does not start: an example has no other
// way to fail.
func (s *Shared) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startLocked(); err != nil {
		panic(err)
	}
	return s.c.Addrs()
}

// For hands test t the shared server, starting it on first use, as a
// Cluster of its own that holds nothing but /zookeeper: the tests before
// it left no node and no quota behind, and /, /zookeeper and
// /zookeeper/quota have the data and ACLs of a fresh server. The server's nodes are removed
// again in t.Cleanup (after the test's own cleanups, which close its
// sessions), so a test sees only what it wrote itself as long as the
// binary's tests run one at a time (none of them calls t.Parallel).
// Stop, Kill, Restart, Wipe and StartServer fail t: a test that needs
// any of them starts its own server. A server that died fails t with its
// log.
func (s *Shared) For(t TB) *Cluster {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startLocked(); err != nil {
		t.Fatalf("zktest: shared server: %v", err)
	}
	srv := s.c.Servers[0]
	select {
	case <-srv.done:
		t.Fatalf("zktest: the shared server has exited:\n%s", srv.tail())
	default:
	}
	c := &Cluster{t: t, opts: s.c.opts, CA: s.c.CA, adminTLS: s.c.adminTLS, Servers: s.c.Servers, shared: true, fresh: s.c.fresh}
	if err := c.removeAll(); err != nil {
		t.Fatalf("zktest: shared server: %v", err)
	}
	t.Cleanup(func() {
		if err := c.removeAll(); err != nil {
			t.Fatalf("zktest: shared server after the test: %v", err)
		}
	})
	return c
}

func (s *Shared) startLocked() error {
	if s.c != nil {
		return nil
	}
	opts := s.Options
	opts.Size, opts.Observers = 1, 0
	opts.JVMFlags = append(slices.Clip(opts.JVMFlags),
		"-Dzookeeper.DigestAuthenticationProvider.superDigest="+superUser+":"+superDigest)
	c, stop, err := Launch(opts)
	if err != nil {
		return err
	}
	err = c.session(func(conn *zk.Conn) error {
		c.fresh = map[string]node{}
		for _, p := range topNodes {
			data, _, err := conn.Get(p)
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			acl, _, err := conn.GetACL(p)
			if err != nil {
				return fmt.Errorf("read the ACL of %s: %w", p, err)
			}
			c.fresh[p] = node{data: data, acl: acl}
		}
		return nil
	})
	if err != nil {
		stop()
		return err
	}
	s.c, s.stop = c, stop
	return nil
}

// Main runs a test binary's tests (m is its *testing.M), stops the
// server and exits with the tests' code: a TestMain that needs nothing
// else is
//
//	func TestMain(m *testing.M) { zooKeeper.Main(m) }
func (s *Shared) Main(m interface{ Run() int }) {
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// Stop kills the server, if it was started, and removes its data.
func (s *Shared) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	s.c, s.stop = nil, nil
}

// removeAll deletes every node but /zookeeper, and every quota under
// /zookeeper/quota, and puts back the top nodes' data and ACLs, as the
// shared server's super user.
func (c *Cluster) removeAll() error {
	return c.session(func(conn *zk.Conn) error {
		for _, parent := range []string{"/", "/zookeeper/quota"} {
			kids, _, err := conn.Children(parent)
			if err != nil {
				return fmt.Errorf("list %s: %w", parent, err)
			}
			for _, k := range kids {
				if parent == "/" && k == "zookeeper" {
					continue
				}
				if err := deleteTree(conn, path.Join(parent, k)); err != nil {
					return err
				}
			}
		}
		for _, p := range topNodes {
			fresh := c.fresh[p]
			data, _, err := conn.Get(p)
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			if !bytes.Equal(data, fresh.data) {
				if _, err := conn.Set(p, fresh.data, -1); err != nil {
					return fmt.Errorf("restore %s: %w", p, err)
				}
			}
			acl, _, err := conn.GetACL(p)
			if err != nil {
				return fmt.Errorf("read the ACL of %s: %w", p, err)
			}
			if !slices.Equal(acl, fresh.acl) {
				if _, err := conn.SetACL(p, fresh.acl, -1); err != nil {
					return fmt.Errorf("restore the ACL of %s: %w", p, err)
				}
			}
		}
		return nil
	})
}

// session runs f with a session to the server as its super user.
func (c *Cluster) session(f func(*zk.Conn) error) error {
	conn, events, err := zk.Connect(c.Addrs(), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	timeout := time.After(30 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-timeout:
			return fmt.Errorf("no session within 30s (state %v)", conn.State())
		}
	}
	if err := conn.AddAuth("digest", []byte(superUser+":"+superPassword)); err != nil {
		return fmt.Errorf("authenticate: %w", err)
	}
	return f(conn)
}

// deleteTree deletes p and everything under it; nodes already gone (an
// ephemeral whose session just ended) are no error.
func deleteTree(conn *zk.Conn, p string) error {
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", p, err)
	}
	for _, k := range kids {
		if err := deleteTree(conn, path.Join(p, k)); err != nil {
			return err
		}
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// process implements TB outside a test: Fatalf unwinds to Launch, which
// turns it into an error; Cleanup and TempDir are undone by stop.
type process struct {
	mu       sync.Mutex
	cleanups []func()
	dirs     []string
}

// launchFailure is what process.Fatalf panics with.
type launchFailure struct{ msg string }

func (p *process) Helper() {}

func (p *process) Fatalf(format string, args ...any) {
	panic(launchFailure{msg: fmt.Sprintf(format, args...)})
}

func (p *process) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}

func (p *process) TempDir() string {
	d, err := os.MkdirTemp("", "zktest")
	if err != nil {
		p.Fatalf("temp dir: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dirs = append(p.dirs, d)
	return d
}

// stop runs the cleanups (killing the servers) in reverse order, then
// removes the directories. It may be called more than once.
func (p *process) stop() {
	p.mu.Lock()
	cleanups, dirs := p.cleanups, p.dirs
	p.cleanups, p.dirs = nil, nil
	p.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

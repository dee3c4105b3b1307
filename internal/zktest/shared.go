package zktest

import (
	"fmt"
	"os"
	"sync"
)

// Launch starts a cluster as opts say for code that has no testing.TB (a
// TestMain, an example, a program) and returns it with the function that
// kills its servers and removes their directories. A server that does not
// start is an error, never an exit: the caller decides. The servers die
// with the process too (PR_SET_PDEATHSIG), but stop should be called.
func Launch(opts Options) (c *Cluster, stop func(), err error) {
	p := &process{}
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
		c, stop, err = nil, nil, fmt.Errorf("zktest: %s", f.msg)
	}()
	c = StartWith(p, opts)
	return c, p.stop, nil
}

// Shared is one standalone server for the examples of a test binary,
// which get no *testing.T: it starts on the first Addrs and stays up for
// the binary's other examples; TestMain stops it after m.Run:
//
//	var zooKeeper zktest.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		zooKeeper.Stop()
//		os.Exit(code)
//	}
//
// A binary whose run selects no example starts no server.
type Shared struct {
	mu   sync.Mutex
	c    *Cluster
	stop func()
}

// Addrs returns the server's client addresses, starting it on the first
// call. It panics when the server does not start: an example has no other
// way to fail.
func (s *Shared) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		c, stop, err := Launch(Options{Size: 1})
		if err != nil {
			panic(err)
		}
		s.c, s.stop = c, stop
	}
	return s.c.Addrs()
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

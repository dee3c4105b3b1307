package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// server is the ZooKeeper the benchmark talks to: its own (standalone or an
// ensemble, started with zktest) or one given with --zk.
type server struct {
	addrs []string // every server
	// voters are where publishers connect and followers where followers
	// do: the observers when the ensemble has some, else every server.
	voters, followers []string
	cluster           *zktest.Cluster // nil with --zk
	stop              func()          // kills an own cluster and removes its directories
	own               bool
	// fourLetters counts the four-letter commands this process sent: the
	// server counts each as a received packet.
	fourLetters atomic.Int64
}

// startServer starts size voters and observers observers, or uses addrs
// when given. heap is each server's -Xmx.
func startServer(addrs []string, size, observers int, heap string) (s *server, err error) {
	if len(addrs) > 0 {
		return &server{addrs: addrs, voters: addrs, followers: addrs}, nil
	}
	c, stop, err := zktest.Launch(zktest.Options{
		Size: size, Observers: observers,
		// Sessions of up to 60 s keep 1,000s of idle sessions quiet (one
		// ping every timeout/3) and never expire under a loaded JVM.
		TickTime:          500 * time.Millisecond,
		MaxSessionTimeout: 60 * time.Second,
		// The test defaults (C1 only, 256 MiB) favour start-up time; a
		// benchmark wants the steady-state server. C2 needs a second
		// compiler thread (the test defaults give one); two is what the
		// JVM picks by itself on this 2-core machine.
		JVMFlags: []string{"-Xmx" + heap, "-XX:TieredStopAtLevel=4", "-XX:CICompilerCount=2"},
	})
	if err != nil {
		return nil, err
	}
	s = &server{addrs: c.Addrs(), voters: c.VoterAddrs(), followers: c.Addrs(), cluster: c, stop: stop, own: true}
	if observers > 0 {
		s.followers = c.ObserverAddrs()
	}
	return s, nil
}

// cpuEach returns the CPU time each own server used so far, in the
// cluster's order (ok is false without own servers or when one is down).
func (s *server) cpuEach() (d []time.Duration, ok bool) {
	if s.cluster == nil {
		return nil, false
	}
	for i := range s.cluster.Servers {
		pid := s.cluster.PID(i)
		if pid == 0 {
			return nil, false
		}
		st, err := readProcStat(pid)
		if err != nil {
			return nil, false
		}
		d = append(d, st.cpu)
	}
	return d, true
}

// roles names each own server: its id and its mode ("1 follower",
// "4 observer").
func (s *server) roles() []string {
	if s.cluster == nil {
		return nil
	}
	out := make([]string, len(s.cluster.Servers))
	for i, sv := range s.cluster.Servers {
		m, err := s.cluster.Mode(i)
		if err != nil {
			m = "?"
		}
		s.fourLetters.Add(1)
		out[i] = fmt.Sprintf("%d %s", sv.ID, m)
	}
	return out
}

func (s *server) close() {
	if s.stop != nil {
		s.stop()
	}
}

// mntr returns the sum over every server of the numeric mntr counters.
func (s *server) mntr() (map[string]int64, error) {
	sum := map[string]int64{}
	for _, a := range s.addrs {
		s.fourLetters.Add(1)
		out, err := zktest.FourLetter(a, "mntr", 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("mntr %s: %w", a, err)
		}
		if !strings.Contains(out, "zk_packets_received") {
			return nil, fmt.Errorf("mntr %s: no zk_packets_received (is mntr whitelisted?): %.100q", a, out)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "\t")
			if !ok {
				continue
			}
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				sum[k] += n
			}
		}
	}
	return sum, nil
}

// packets returns the packets every server received from clients, less
// the four-letter commands this process sent (mntr included): differences
// of it count client packets only.
func (s *server) packets() (int64, error) {
	m, err := s.mntr()
	if err != nil {
		return 0, err
	}
	return m["zk_packets_received"] - s.fourLetters.Load(), nil
}

// cpu returns the CPU time the server processes used so far (own servers
// only; ok is false otherwise).
func (s *server) cpu() (d time.Duration, ok bool) {
	if s.cluster == nil {
		return 0, false
	}
	for _, sv := range s.cluster.Servers {
		if sv.PID() == 0 {
			return 0, false
		}
		st, err := readProcStat(sv.PID())
		if err != nil {
			return 0, false
		}
		d += st.cpu
	}
	return d, true
}

// version returns the first server's version line from srvr.
func (s *server) version() string {
	s.fourLetters.Add(1)
	out, err := zktest.FourLetter(s.addrs[0], "srvr", 5*time.Second)
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
			v, _, _ = strings.Cut(v, ",")
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// slogPrintf routes the client library's messages to slog at debug level.
type slogPrintf struct{ l *slog.Logger }

func (p slogPrintf) Printf(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "zk-client")
}

// dialOptions says how to dial one benchmark connection.
type dialOptions struct {
	servers        []string
	sessionTimeout time.Duration
	counts         *wireCounts  // packets are counted here
	clock          *commitClock // optional: commit timing
	// recvBuffer and sendBuffer, when positive, replace go-zookeeper's
	// 1.5 MiB per-connection buffers: 3,000 sessions in one process would
	// otherwise allocate 9 GiB of buffers. They are sized for the largest
	// packet the benchmark reads or sends.
	recvBuffer, sendBuffer int
	log                    *slog.Logger
}

// sessionWait bounds the wait for one session.
const sessionWait = 30 * time.Second

// client is one ZooKeeper session of the benchmark.
type client struct {
	conn *zk.Conn
	sess *zkclient.Session
}

// dial opens a session through a counting tap and waits for it.
func dial(ctx context.Context, o dialOptions) (*client, error) {
	sess := zkclient.NewSession()
	counts, clock := o.counts, o.clock
	opts := zkOptions(
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return newTapConn(c, counts, clock), nil
		}),
		zk.WithEventCallback(sess.Callback),
		zk.WithLogger(slogPrintf{o.log}),
		zk.WithLogInfo(false),
	)
	if o.recvBuffer > 0 {
		opts = append(opts, zk.WithMaxBufferSize(o.recvBuffer))
	}
	if o.sendBuffer > 0 {
		opts = append(opts, zk.WithMaxConnBufferSize(o.sendBuffer))
	}
	conn, _, err := zk.Connect(o.servers, o.sessionTimeout, opts...)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, sessionWait)
	defer cancel()
	if _, err := sess.WaitConnected(wctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w (a server given with --zk must allow this many connections from one address: maxClientCnxns=0)", err)
	}
	return &client{conn: conn, sess: sess}, nil
}

// zkOptions collects client options; their type is unexported.
func zkOptions[T any](v ...T) []T { return v }

// dialMany opens n sessions, a few at a time (each is a transaction on the
// server), and closes them all if one fails.
func dialMany(ctx context.Context, n int, o dialOptions) ([]*client, error) {
	out := make([]*client, n)
	err := work.Parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		c, err := dial(ctx, o)
		out[i] = c
		return err
	})
	if err != nil {
		closeAll(out)
		return nil, fmt.Errorf("open %d sessions: %w", n, err)
	}
	return out, nil
}

// closeAll closes sessions, a few at a time.
func closeAll(cs []*client) {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c *client) bool { return c == nil })
	_ = work.Parallel(context.Background(), len(cs), 64, func(_ context.Context, i int) error {
		cs[i].conn.Close()
		return nil
	})
}

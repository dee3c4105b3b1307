package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/logfilter"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// env is one benchmark invocation's shared state: the server, the znode
// prefix every root lives under, and the registry of wire counters.
type env struct {
	cfg    Config
	log    *slog.Logger
	quiet  *slog.Logger // for the code under test: warnings and errors only
	srv    *server
	prefix string // /confbench/<id>
	meta   string // the zkconf metadata path of every root
	mntrOK bool   // the server answers mntr

	mu     sync.Mutex
	counts []*wireCounts
}

func newEnv(cfg Config, srv *server) *env {
	var id [4]byte
	_, _ = rand.Read(id[:])
	prefix := "/confbench/" + hex.EncodeToString(id[:])
	log := cfg.Logger
	return &env{
		cfg: cfg, log: log, srv: srv, prefix: prefix, meta: prefix + "/meta",
		quiet: slog.New(logfilter.AtLeast(log.Handler(), slog.LevelWarn)),
	}
}

// newCounts returns a registered set of wire counters.
func (e *env) newCounts() *wireCounts {
	w := &wireCounts{}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts = append(e.counts, w)
	return w
}

// tapped is every packet every benchmark connection sent so far.
func (e *env) tapped() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, w := range e.counts {
		n += w.total()
	}
	return n
}

// framingErrors is the number of writes the taps could not read as one
// packet (0, or the counts are wrong).
func (e *env) framingErrors() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, w := range e.counts {
		n += w.framing.Load()
	}
	return n
}

// root is the znode path of a benchmark root.
func (e *env) root(name string) string { return e.prefix + "/r/" + name }

// followerDial returns the dial options of follower sessions, with buffers
// sized for the largest packet a follower reads (an item or the manifest).
func (e *env) followerDial(counts *wireCounts, items, itemSize int) dialOptions {
	biggest := max(itemSize, items*160+1024) // a manifest entry is ~130 bytes
	return dialOptions{
		servers: e.srv.followers, sessionTimeout: e.cfg.SessionTimeout, counts: counts, log: e.quiet,
		recvBuffer: biggest + 64<<10, sendBuffer: 64 << 10,
	}
}

// target is a benchmark root and its publisher.
type target struct {
	name   string
	root   string
	sched  *schedule
	cl     *client
	pub    *publish.Publisher
	counts *wireCounts
	clock  *commitClock
	gen    int64 // last generation published
	// auto publishes in manifest.ModeAuto (marker mode when the commit
	// would not fit a Multi) instead of ModeMulti; mode is the mode of the
	// last publish.
	auto bool
	mode manifest.Mode
}

// newTarget dials a publisher for a new root and publishes generation 1.
func (e *env) newTarget(ctx context.Context, name string, sched *schedule) (*target, error) {
	return e.newTargetMode(ctx, name, sched, false)
}

// newTargetMode is newTarget, publishing in manifest.ModeAuto when auto.
func (e *env) newTargetMode(ctx context.Context, name string, sched *schedule, auto bool) (*target, error) {
	t := &target{name: name, root: e.root(name), sched: sched, counts: e.newCounts(), clock: &commitClock{}, auto: auto}
	t.clock.root = t.root
	cl, err := dial(ctx, dialOptions{servers: e.srv.voters, sessionTimeout: e.cfg.SessionTimeout,
		counts: t.counts, clock: t.clock, log: e.quiet})
	if err != nil {
		return nil, fmt.Errorf("publisher of %s: %w", name, err)
	}
	t.cl = cl
	t.pub, err = publish.New(zkclient.Fixed(cl.conn, cl.sess), t.root, publish.WithMeta(e.meta),
		publish.WithLogger(e.quiet), publish.WithPublisherName("confbench"))
	if err != nil {
		cl.conn.Close()
		return nil, err
	}
	if _, err := t.publish(ctx, 1); err != nil {
		cl.conn.Close()
		return nil, err
	}
	return t, nil
}

// pubTimes are one publish's moments, unix ns.
type pubTimes struct {
	call, sent, acked, ret int64
}

// publish publishes generation g of the schedule (multi mode) and returns
// when the call started, when its commit left the client, when the commit
// was acknowledged and when the call returned.
func (t *target) publish(ctx context.Context, g int64) (pubTimes, error) {
	items := t.sched.set(g)
	t.clock.arm()
	var pt pubTimes
	pt.call = time.Now().UnixNano()
	mode := manifest.ModeMulti
	if t.auto {
		mode = manifest.ModeAuto
	}
	res, err := t.pub.Publish(ctx, publish.Request{Items: items, Mode: mode})
	pt.ret = time.Now().UnixNano()
	if err != nil {
		return pt, fmt.Errorf("publish generation %d of %s: %w", g, t.root, err)
	}
	if res.Generation != g || (!t.auto && res.Mode != manifest.ModeMulti) {
		return pt, fmt.Errorf("publish of %s: got generation %d (%s), want %d (multi)", t.root, res.Generation, res.Mode, g)
	}
	t.mode = res.Mode
	pt.sent, pt.acked = t.clock.times()
	if pt.sent == 0 || pt.acked == 0 {
		return pt, fmt.Errorf("publish of %s: the tap saw no commit", t.root)
	}
	t.gen = g
	return pt, nil
}

// versionOffset returns generation minus the root's data version: the
// raw followers' way to know the generation without decoding the manifest.
func (t *target) versionOffset() (int64, error) {
	data, st, err := t.cl.conn.Get(t.root)
	if err != nil {
		return 0, err
	}
	m, err := manifest.Decode(data)
	if err != nil {
		return 0, err
	}
	if m.Generation != t.gen {
		return 0, fmt.Errorf("%s holds generation %d, want %d", t.root, m.Generation, t.gen)
	}
	return t.gen - int64(st.Version), nil
}

func (t *target) close() { t.cl.conn.Close() }

// cleanup deletes everything under the prefix (a server given with --zk
// keeps nothing of the run).
func (e *env) cleanup(ctx context.Context) error {
	if e.srv.own {
		return nil
	}
	cl, err := dial(ctx, dialOptions{servers: e.srv.addrs, sessionTimeout: e.cfg.SessionTimeout, counts: &wireCounts{}, log: e.quiet})
	if err != nil {
		return err
	}
	defer cl.conn.Close()
	return deleteTree(cl.conn, e.prefix)
}

// deleteTree deletes p and everything below it.
func deleteTree(conn *zk.Conn, p string) error {
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(conn, path.Join(p, k)); err != nil {
			return err
		}
	}
	err = conn.Delete(p, -1)
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	if err == nil && strings.Count(p, "/") == 2 {
		// The shared parent (/confbench) goes when it is empty.
		if perr := conn.Delete(path.Dir(p), -1); perr != nil && !errors.Is(perr, zk.ErrNotEmpty) && !errors.Is(perr, zk.ErrNoNode) {
			return perr
		}
	}
	return err
}

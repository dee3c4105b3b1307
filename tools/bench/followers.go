package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/zkclient"
)

// Follower kinds.
const (
	kindProject = "zkconf" // cache.Cache, one session each
	kindFloor   = "floor"  // raw: GetW root, read only the changed items
	kindNaive   = "naive"  // raw: GetW root, read every item
)

// recorder collects the moments the members of a fleet reach the
// generation being waited for.
type recorder struct {
	mu  sync.Mutex
	n   int
	cur *arrivals
}

// arrivals is one generation's arrival times, unix ns per member.
type arrivals struct {
	gen  int64
	at   []int64
	left int
	done chan struct{}
}

func newRecorder(n int) *recorder { return &recorder{n: n} }

// expect starts waiting for generation g; call it before publishing g.
func (r *recorder) expect(g int64) *arrivals {
	a := &arrivals{gen: g, at: make([]int64, r.n), left: r.n, done: make(chan struct{})}
	if r.n == 0 {
		close(a.done)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = a
	return a
}

// want is the generation being waited for (0: none).
func (r *recorder) want() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return 0
	}
	return r.cur.gen
}

// reached records that member i holds generation g (or newer) since t.
func (r *recorder) reached(i int, g int64, t int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.cur
	if a == nil || g < a.gen || a.at[i] != 0 {
		return
	}
	a.at[i] = t
	if a.left--; a.left == 0 {
		close(a.done)
	}
}

// missing returns how many members have not arrived.
func (r *recorder) missing(a *arrivals) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return a.left
}

// wait waits until every member reached a's generation.
func (r *recorder) wait(ctx context.Context, a *arrivals, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%d of %d members did not reach generation %d within %v", r.missing(a), r.n, a.gen, timeout)
	}
}

// group is N followers of one root, one session each.
type group interface {
	// requests is the number of requests the members say they sent.
	requests() int64
	// sessionEvents counts reconnects and expiries since the start; a
	// measurement is only valid when it stays 0.
	sessionEvents() int64
	// check verifies that every member holds exactly generation g.
	check(g int64) error
	close()
}

// projectFleet is N zkconf caches.
type projectFleet struct {
	caches []*cache.Cache
	sched  *schedule
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startProject starts a cache on each client and waits until every one
// holds generation g0.
func startProject(ctx context.Context, clients []*client, root, meta string, sched *schedule, rec *recorder, g0 int64, log *slog.Logger, extra ...cache.Option) (*projectFleet, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &projectFleet{sched: sched, cancel: cancel}
	for i, cl := range clients {
		opts := append([]cache.Option{cache.WithClient(zkclient.Fixed(cl.conn, cl.sess)), cache.WithMeta(meta), cache.WithLogger(log)}, extra...)
		c, err := cache.New(ctx, root, opts...)
		if err != nil {
			f.close()
			return nil, err
		}
		f.caches = append(f.caches, c)
		f.wg.Go(func() {
			for {
				select {
				case s := <-c.Updates():
					// The moment the cache applied it (Snapshot() returns it
					// from then on), not when this goroutine woke.
					rec.reached(i, s.Generation(), c.Stats().LastApply.UnixNano())
				case <-wctx.Done():
					return
				}
			}
		})
	}
	err := work.Parallel(ctx, len(f.caches), 64, func(ctx context.Context, i int) error {
		_, err := f.caches[i].Wait(ctx, g0)
		return err
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("caches did not reach generation %d: %w", g0, err)
	}
	return f, nil
}

func (f *projectFleet) requests() int64 {
	var n int64
	for _, c := range f.caches {
		n += int64(c.Stats().Requests)
	}
	return n
}

func (f *projectFleet) sessionEvents() int64 {
	var n int64
	for _, c := range f.caches {
		st := c.Stats()
		n += int64(st.Reconnects + st.Expiries)
	}
	return n
}

func (f *projectFleet) check(g int64) error {
	want := f.sched.set(g)
	for i, c := range f.caches {
		s := c.Snapshot()
		if s == nil || s.Generation() != g {
			return fmt.Errorf("cache %d does not hold generation %d", i, g)
		}
		if s.Len() != len(want) {
			return fmt.Errorf("cache %d: %d items, want %d", i, s.Len(), len(want))
		}
		for name, b := range want {
			if got, ok := s.Get(name); !ok || !bytes.Equal(got, b) {
				return fmt.Errorf("cache %d: item %s differs from generation %d", i, name, g)
			}
		}
	}
	return nil
}

func (f *projectFleet) close() {
	f.cancel()
	f.wg.Wait()
	_ = work.Parallel(context.Background(), len(f.caches), 64, func(_ context.Context, i int) error {
		return f.caches[i].Close()
	})
}

// rawFleet is N raw go-zookeeper followers: the floor or the naive
// baseline.
type rawFleet struct {
	members []*rawFollower
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// rawFollower follows a root the cheapest way go-zookeeper allows: GetW on
// the root (one request reads the data version and re-arms the watch),
// then Get the items that changed (floor) or every item (naive), with the
// same number of reads in flight as the cache. It decodes nothing: the
// generation is the root's data version plus a fixed offset (every
// multi-mode publish sets the root once), and the schedule names the items
// each generation changed.
type rawFollower struct {
	i           int
	conn        *zk.Conn
	sess        *sessionWatch
	root        string
	naive       bool
	sched       *schedule
	offset      int64
	concurrency int
	rec         atomic.Pointer[recorder]
	log         *slog.Logger

	reqs  atomic.Int64
	errs  atomic.Int64
	held  int64             // owned by run; read after it ends
	items map[string][]byte // owned by run; read after it ends
}

// sessionWatch counts session epochs through the tracker.
type sessionWatch struct {
	cl     *client
	epoch0 uint64
	exp0   uint64
}

func (s *sessionWatch) events() int64 {
	st := s.cl.sess.Status()
	return int64(st.Epoch-s.epoch0) + int64(st.Expiries-s.exp0)
}

// startRaw starts a raw follower on each client and waits until every one
// holds generation g0. offset maps the root's data version to generations.
func startRaw(ctx context.Context, clients []*client, root string, naive bool, sched *schedule, rec *recorder, g0, offset int64, concurrency int, log *slog.Logger) (*rawFleet, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &rawFleet{cancel: cancel}
	start := newRecorder(len(clients))
	a := start.expect(g0)
	for i, cl := range clients {
		st := cl.sess.Status()
		m := &rawFollower{i: i, conn: cl.conn, sess: &sessionWatch{cl: cl, epoch0: st.Epoch, exp0: st.Expiries},
			root: root, naive: naive, sched: sched, offset: offset, concurrency: concurrency,
			log: log, items: map[string][]byte{}}
		m.rec.Store(start)
		f.members = append(f.members, m)
	}
	for _, m := range f.members {
		f.wg.Go(func() { m.run(rctx) })
	}
	if err := start.wait(ctx, a, time.Minute); err != nil {
		f.close()
		return nil, fmt.Errorf("raw followers did not reach generation %d: %w", g0, err)
	}
	// From now on arrivals go to the measurement's recorder.
	for _, m := range f.members {
		m.rec.Store(rec)
	}
	return f, nil
}

func (m *rawFollower) run(ctx context.Context) {
	for ctx.Err() == nil {
		_, stat, ch, err := m.conn.GetW(m.root)
		m.reqs.Add(1)
		if err != nil {
			m.retry(ctx, "read root", err)
			continue
		}
		if g := int64(stat.Version) + m.offset; g > m.held {
			names := m.sched.names
			if !m.naive {
				names = m.sched.changedBetween(m.held, g)
			}
			if err := m.read(ctx, names); err != nil {
				m.retry(ctx, "read items", err)
				continue
			}
			m.held = g
			m.rec.Load().reached(m.i, g, time.Now().UnixNano())
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

func (m *rawFollower) retry(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	m.errs.Add(1)
	m.log.Warn("raw follower: retrying", "member", m.i, "op", what, "err", err)
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// read reads names into m.items: one inline, several with up to
// m.concurrency in flight.
func (m *rawFollower) read(ctx context.Context, names []string) error {
	if len(names) == 1 {
		b, _, err := m.conn.Get(m.root + "/" + names[0])
		m.reqs.Add(1)
		if err != nil {
			return err
		}
		m.items[names[0]] = b
		return nil
	}
	data := make([][]byte, len(names))
	err := work.Parallel(ctx, len(names), m.concurrency, func(_ context.Context, j int) error {
		b, _, err := m.conn.Get(m.root + "/" + names[j])
		m.reqs.Add(1)
		data[j] = b
		return err
	})
	if err != nil {
		return err
	}
	for j, n := range names {
		m.items[n] = data[j]
	}
	return nil
}

func (f *rawFleet) requests() int64 {
	var n int64
	for _, m := range f.members {
		n += m.reqs.Load()
	}
	return n
}

func (f *rawFleet) sessionEvents() int64 {
	var n int64
	for _, m := range f.members {
		n += m.sess.events() + m.errs.Load()
	}
	return n
}

// check must be called after close (it reads what the members hold).
func (f *rawFleet) check(g int64) error {
	want := f.sched().set(g)
	for _, m := range f.members {
		if m.held != g {
			return fmt.Errorf("follower %d holds generation %d, want %d", m.i, m.held, g)
		}
		if len(m.items) != len(want) {
			return fmt.Errorf("follower %d: %d items, want %d", m.i, len(m.items), len(want))
		}
		for name, b := range want {
			if !bytes.Equal(m.items[name], b) {
				return fmt.Errorf("follower %d: item %s differs from generation %d", m.i, name, g)
			}
		}
	}
	return nil
}

func (f *rawFleet) sched() *schedule { return f.members[0].sched }

// close stops the members; a request in flight is answered first. The
// caller closes the sessions afterwards.
func (f *rawFleet) close() {
	f.cancel()
	f.wg.Wait()
}

package publish

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// opMulti is ZooKeeper's opcode for a multi request.
const opMultiCode = 14

// spyConn is the client's side of a rig's connection. go-zookeeper writes
// each request with one Write of the whole packet (length, xid, opcode,
// body), so a Multi can be recognised and lost on its way; and what the
// server sends can be withheld from the client (deaf), so that a response
// is lost with the connection whatever the scheduling: no latency race.
type spyConn struct {
	net.Conn
	onMulti *atomic.Pointer[func()]
	deaf    atomic.Bool
}

func (s *spyConn) Write(b []byte) (int, error) {
	if len(b) >= 12 && binary.BigEndian.Uint32(b[8:12]) == opMultiCode {
		if f := s.onMulti.Swap(nil); f != nil {
			// Lost on the way: the server never receives it.
			(*f)()
			return len(b), nil
		}
	}
	return s.Conn.Write(b)
}

func (s *spyConn) Read(b []byte) (int, error) {
	for {
		n, err := s.Conn.Read(b)
		if !s.deaf.Load() {
			return n, err
		}
		if err != nil {
			return 0, err
		}
		// Withheld: read on until the connection is cut.
	}
}

// zkOptions collects client options (their type is unexported).
func zkOptions[T any](v ...T) []T { return v }

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// rig is a publisher whose connection goes through a fault proxy, plus a
// direct connection for the test to watch the server's side.
type rig struct {
	t       *testing.T
	proxy   *faultproxy.Proxy
	conn    *zk.Conn
	sess    *zkclient.Session // nil when built without a tracker
	direct  *zk.Conn
	onMulti atomic.Pointer[func()]
	current atomic.Pointer[spyConn] // the client's newest connection
}

func newRig(t *testing.T, c *zktest.Cluster, sessionTimeout time.Duration, tracker bool) *rig {
	t.Helper()
	r := &rig{t: t, proxy: faultproxy.Start(t, c.Addrs()[0])}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		sc := &spyConn{Conn: nc, onMulti: &r.onMulti}
		r.current.Store(sc)
		return sc, nil
	}
	connected := make(chan struct{})
	var once sync.Once
	cb := func(ev zk.Event) {
		if ev.State == zk.StateHasSession {
			once.Do(func() { close(connected) })
		}
	}
	if tracker {
		r.sess = zkclient.NewSession()
		cb = func(ev zk.Event) {
			r.sess.Callback(ev)
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(connected) })
			}
		}
	}
	conn, _, err := zk.Connect([]string{r.proxy.Addr()}, sessionTimeout, zkOptions(
		zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithDialer(dialer), zk.WithEventCallback(cb))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("no session through the proxy")
	}
	r.conn = conn
	r.direct = c.Connect(t, 30*time.Second)
	return r
}

// loseMulti makes the client's next Multi get lost: it is never written to
// the socket, f (a cut) runs instead.
func (r *rig) loseMulti(f func()) { r.onMulti.Store(&f) }

// deafen withholds from the client everything the server sends on its
// current connection from now on: a response is then lost with the
// connection when the test cuts it.
func (r *rig) deafen() { r.current.Load().deaf.Store(true) }

// created returns a channel closed when path exists (watched on the direct
// connection, so the proxy's faults do not affect it).
// cutPublisher is a publisher of root on r's connection whose commit at
// stage (withBeforeCommit's) loses the connection once armed is set:
// before the server applies it (landed false), or after, its response
// withheld from the deaf client (landed true: cut with cutWhenCreated).
func (r *rig) cutPublisher(t testing.TB, root, stage string, landed bool) (*Publisher, *atomic.Bool) {
	armed := new(atomic.Bool)
	p := mustNew(t, r.conn, r.sess, root, withBeforeCommit(func(s string) {
		if s != stage || !armed.CompareAndSwap(true, false) {
			return
		}
		if landed {
			r.deafen()
		} else {
			r.loseMulti(r.proxy.Cut)
		}
	}))
	return p, armed
}

// cutWhenCreated cuts the connection once witness exists (the server
// applied the commit whose response the deaf client never gets) when
// landed; the channel closes when that is done, at once when not landed.
func (r *rig) cutWhenCreated(witness string, landed bool) <-chan struct{} {
	done := make(chan struct{})
	if !landed {
		close(done)
		return done
	}
	appeared := r.created(witness)
	go func() {
		defer close(done)
		<-appeared
		r.proxy.Cut()
	}()
	return done
}

func (r *rig) created(path string) <-chan struct{} {
	r.t.Helper()
	out := make(chan struct{})
	ok, _, ch, err := r.direct.ExistsW(path)
	if err != nil {
		r.t.Fatal(err)
	}
	if ok {
		close(out)
		return out
	}
	go func() { <-ch; close(out) }()
	return out
}

// sessionGone creates an ephemeral node on the rig's session and returns a
// channel closed when the server deletes it: the session expired there.
func (r *rig) sessionGone(path string) <-chan struct{} {
	r.t.Helper()
	if _, err := r.conn.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		r.t.Fatal(err)
	}
	out := make(chan struct{})
	ok, _, ch, err := r.direct.ExistsW(path)
	if err != nil || !ok {
		r.t.Fatalf("watch %s: %v %v", path, ok, err)
	}
	go func() { <-ch; close(out) }()
	return out
}

// await waits for ch or fails the test.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// checkOnce asserts that generation gen was applied exactly once, by
// publish id, with content want: the root's version moved by exactly one
// commit since baseVersion, history holds gen (with id) and nothing newer.
func checkOnce(t *testing.T, p *Publisher, baseVersion int32, commitsExpected int32, gen int64, id string, want map[string][]byte) {
	t.Helper()
	st, data := rootState(t, p.conn(), p.paths.Root)
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Generation != gen || m.PublishID != id {
		t.Fatalf("live generation %d publish %s, want %d %s", m.Generation, m.PublishID, gen, id)
	}
	if st.Version != baseVersion+commitsExpected {
		t.Fatalf("root version %d -> %d: want exactly %d change(s) (applied twice?)", baseVersion, st.Version, commitsExpected)
	}
	h := historyList(t, p.conn(), p.paths)
	if h[len(h)-1] != gen {
		t.Fatalf("history %v: newest should be %d", h, gen)
	}
	hm, err := p.historyManifest(testCtx(t), gen)
	if err != nil || hm.PublishID != id {
		t.Fatalf("history entry of %d: %v %v", gen, hm, err)
	}
	checkLive(t, p, gen, want)
}

// TestConnectionLossAroundCommit cuts the publisher's connection while a
// commit is in flight, on either side of the server applying it. The
// connection loss is real (the proxy drops the TCP connection; the client
// reports ErrConnectionClosed). Which side of the apply it falls on is
// decided by events, not by a latency racing the scheduler: not landed,
// the Multi is lost before it reaches the socket and the connection cut;
// landed, the client's connection is deaf from just before the Multi (the
// response never reaches it) and is cut once the server shows the commit.
func TestConnectionLossAroundCommit(t *testing.T) {
	t.Parallel()
	c := startOwnZK(t) // long sessions: a cut must never turn into an expiry

	for _, tc := range []struct {
		name   string
		mode   manifest.Mode
		stage  string
		landed bool // cut after the server applied the commit
	}{
		{"MultiNotLanded", manifest.ModeMulti, "multi", false},
		{"MultiLanded", manifest.ModeMulti, "multi", true},
		{"MarkerSetNotLanded", manifest.ModeMarker, "marker", false},
		{"MarkerSetLanded", manifest.ModeMarker, "marker", true},
		{"MarkerFinalNotLanded", manifest.ModeMarker, "final", false},
		{"MarkerFinalLanded", manifest.ModeMarker, "final", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, c, 15*time.Second, true)
			root := "/cut/" + tc.name
			p, armed := r.cutPublisher(t, root, tc.stage, tc.landed)
			base := items(5, 100, "base")
			mustPublish(t, p, Request{Items: base, Mode: tc.mode})
			st0, _ := rootState(t, r.direct, root)

			next := items(6, 100, "next")
			gen := int64(2)
			// The response is withheld from the deaf client: cut when the
			// server shows the commit applied.
			witness := p.paths.HistoryNode(gen)
			if tc.stage == "marker" {
				witness = p.paths.Marker()
			}
			cutDone := r.cutWhenCreated(witness, tc.landed)
			armed.Store(true)
			res, err := p.Publish(testCtx(t), Request{Items: next, Mode: tc.mode})
			<-cutDone
			if err != nil {
				t.Fatalf("publish after a cut: %v", err)
			}
			if armed.Load() {
				t.Fatal("the fault was never injected")
			}
			if res.Generation != gen {
				t.Fatalf("generation %d, want %d", res.Generation, gen)
			}
			commits := int32(1)
			if tc.mode == manifest.ModeMarker {
				commits = 2 // the marker Multi rewrites the root, the final sets it
			}
			checkOnce(t, p, st0.Version, commits, gen, res.PublishID, next)
			switch {
			case tc.stage == "marker":
				// The marker placement is not the commit: the result says
				// nothing about it, but exactly one placement happened
				// (checked by the root version above).
			case tc.landed && (!res.Recovered || res.CommitAttempts != 1):
				t.Fatalf("landed commit: want Recovered with 1 attempt, got %+v", res)
			case !tc.landed && (!res.Recovered || res.CommitAttempts != 2):
				t.Fatalf("lost commit: want Recovered with 2 attempts (sent again), got %+v", res)
			}
			if _, err := r.direct.Sync(root); err != nil {
				t.Fatal(err)
			}
			if kids, _, _ := r.direct.Children(p.paths.Publishing()); len(kids) != 0 {
				t.Fatalf("liveness nodes left: %v", kids)
			}
		})
	}
}

// TestSessionExpiryDuringCommit blackholes the publisher's connection while
// the commit is in flight until the server expires the session. The
// publish must never be re-sent, and must be reported as applied only if
// it was.
func TestSessionExpiryDuringCommit(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t) // sessions of at most 4 s: expiries come quickly
	const timeout = 4 * time.Second
	for _, tc := range []struct {
		name    string
		landed  bool
		tracker bool
	}{
		{"NotLanded", false, true},
		{"NotLandedWithoutTracker", false, false},
		{"Landed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, c, timeout, tc.tracker)
			root := "/expire/" + tc.name
			var armed atomic.Bool
			p := mustNew(t, r.conn, r.sess, root, withBeforeCommit(func(stage string) {
				if !armed.CompareAndSwap(true, false) {
					return
				}
				if tc.landed {
					r.deafen() // the response never reaches the client
				} else {
					r.proxy.Blackhole(true) // the Multi is held, never delivered
				}
			}))
			base := items(3, 100, "base")
			mustPublish(t, p, Request{Items: base})
			snap := treeSnapshot(t, r.direct, root, p.paths.Base())
			st0, _ := rootState(t, r.direct, root)

			gone := r.sessionGone("/expire-" + tc.name)
			lifted := make(chan struct{})
			go func() {
				defer close(lifted)
				if tc.landed {
					<-r.created(p.paths.HistoryNode(2))
					// Applied; the response is withheld from the deaf client:
					// lose it and keep the client out until its session
					// expires.
					r.proxy.Blackhole(true)
					r.proxy.Cut()
				}
				<-gone
				r.proxy.Blackhole(false)
			}()
			armed.Store(true)
			next := items(4, 100, "next")
			res, err := p.Publish(testCtx(t), Request{Items: next})
			await(t, lifted, "the blackhole to be lifted")
			if armed.Load() {
				t.Fatal("the fault was never injected")
			}
			if tc.landed {
				if err != nil {
					t.Fatalf("a commit that landed before the expiry must be reported as success: %v", err)
				}
				if !res.Recovered || res.CommitAttempts != 1 || res.Generation != 2 {
					t.Fatalf("result %+v", res)
				}
				checkOnce(t, p, st0.Version, 1, 2, res.PublishID, next)
				return
			}
			if err == nil {
				t.Fatalf("publish lost with an expired session reported success: %+v", res)
			}
			if !errors.Is(err, zkclient.ErrSessionExpired) || !strings.Contains(err.Error(), "did not land") {
				t.Fatalf("want a session-expiry error saying it did not land, got %v", err)
			}
			if after := treeSnapshot(t, r.direct, root, p.paths.Base()); !equalSnap(snap, after) {
				t.Fatalf("the publish was applied (or re-sent) after the expiry")
			}
			// The publisher works again on its new session.
			res, err = p.Publish(testCtx(t), Request{Items: next})
			if err != nil || res.Generation != 2 {
				t.Fatalf("publish on the new session: %+v %v", res, err)
			}
		})
	}
}

// TestMarkerSessionExpiryMidway expires the session of a marker-mode
// publish while it writes items: it must stop without retrying, leaving
// the marker and the old manifest, and the next publish must complete.
func TestMarkerSessionExpiryMidway(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t)
	r := newRig(t, c, 4*time.Second, true)
	root := "/expire-marker"
	var armed atomic.Bool
	p := mustNew(t, r.conn, r.sess, root, withMarkerWrite(func(n int) error {
		if n == 2 && armed.CompareAndSwap(true, false) {
			r.proxy.Blackhole(true)
		}
		return nil
	}))
	base := items(6, 1000, "base")
	mustPublish(t, p, Request{Items: base, Mode: manifest.ModeMarker})
	gone := r.sessionGone("/expire-marker-eph")
	lifted := make(chan struct{})
	go func() { defer close(lifted); <-gone; r.proxy.Blackhole(false) }()
	armed.Store(true)
	_, err := p.Publish(testCtx(t), Request{Items: items(6, 1000, "next"), Mode: manifest.ModeMarker})
	await(t, lifted, "the blackhole to be lifted")
	if !errors.Is(err, zkclient.ErrSessionExpired) || !strings.Contains(err.Error(), "marker stays") {
		t.Fatalf("want a session-expiry error leaving the marker, got %v", err)
	}
	if ok, _, _ := r.direct.Exists(p.paths.Marker()); !ok {
		t.Fatal("the marker is gone")
	}
	m, _, err := p.Current(testCtx(t))
	if err != nil || m.Generation != 1 {
		t.Fatalf("live manifest %v %v, want generation 1", m, err)
	}
	// A reader sees the old generation (verified from history and blobs).
	other := newPub(t, c, root)
	om, got, err := other.Read(testCtx(t), 0)
	if err != nil || om.Generation != 1 || !sameItems(got, base) {
		t.Fatalf("reader during a dead marker: %v %v", om, err)
	}
	final := items(6, 1000, "final")
	res := mustPublish(t, other, Request{Items: final})
	if res.Generation != 2 {
		t.Fatalf("takeover publish: %+v", res)
	}
	checkLive(t, other, 2, final)
}

package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// testSession is the session timeout of the tests' connections. A loaded
// test machine can stall a process for seconds; tests that do not inject
// session faults use servers started by startZK, which allow it.
const testSession = 10 * time.Second

// startZK hands the test the package's shared standalone server,
// emptied for it (sharedZooKeeper).
func startZK(t testing.TB) *zktest.Cluster {
	t.Helper()
	return sharedZooKeeper.For(t)
}

// startOwnZK starts a server of the test's own, as sharedZooKeeper's: for
// the tests that run in parallel (For empties the shared server under
// them) or reach the server through a fault proxy.
func startOwnZK(t testing.TB) *zktest.Cluster {
	t.Helper()
	return zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: zkMaxSession})
}

// zkMaxSession is the test servers' maximum session timeout: 30 s.
const zkMaxSession = 30 * time.Second

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper" (startZK); TestMain (example_test.go) stops it through
// StopSharedZooKeeper.
var sharedZooKeeper = zktest.Shared{Options: zktest.Options{MaxSessionTimeout: zkMaxSession}}

// StopSharedZooKeeper stops sharedZooKeeper; TestMain (package
// publish_test, which cannot name it) calls it after m.Run.
func StopSharedZooKeeper() { sharedZooKeeper.Stop() }

// testCtx is a context bounded well under the package's test budget.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test's output at debug level when
// PUBLISH_TEST_LOG is set, and nowhere otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("PUBLISH_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// dial connects through zkclient (with a session tracker) to addrs and waits
// for the session. The connection is closed in t.Cleanup.
func dial(t testing.TB, sessionTimeout time.Duration, addrs ...string) (*zk.Conn, *zkclient.Session) {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: addrs, SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatalf("wait for session: %v", err)
	}
	return conn, sess
}

// newPub dials the cluster and returns a Publisher for root.
func newPub(t testing.TB, c *zktest.Cluster, root string, opts ...Option) *Publisher {
	t.Helper()
	conn, sess := dial(t, testSession, c.Addrs()...)
	return mustNew(t, conn, sess, root, opts...)
}

func mustNew(t testing.TB, conn *zk.Conn, sess *zkclient.Session, root string, opts ...Option) *Publisher {
	t.Helper()
	opts = append([]Option{WithLogger(testLogger(t)), WithPublisherName("tester@test")}, opts...)
	p, err := New(zkclient.Fixed(conn, sess), root, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// items makes n items of size bytes each, named item-00.conf..., whose
// content depends on tag.
func items(n, size int, tag string) map[string][]byte {
	out := make(map[string][]byte, n)
	for i := range n {
		out[fmt.Sprintf("item-%02d.conf", i)] = content(size, fmt.Sprintf("%s/%d", tag, i))
	}
	return out
}

// content is size bytes of printable text derived from tag.
func content(size int, tag string) []byte {
	var b bytes.Buffer
	for b.Len() < size {
		fmt.Fprintf(&b, "%s line %d\n", tag, b.Len())
	}
	return b.Bytes()[:size]
}

func mustPublish(t testing.TB, p *Publisher, req Request) *Result {
	t.Helper()
	res, err := p.Publish(testCtx(t), req)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

// checkLive verifies that the root holds exactly want, as a manifest-
// verified read, with no marker and no stray children, at generation gen.
func checkLive(t testing.TB, p *Publisher, gen int64, want map[string][]byte) {
	t.Helper()
	ctx := testCtx(t)
	m, got, err := p.Read(ctx, 0)
	if err != nil {
		t.Fatalf("read live: %v", err)
	}
	if m.Generation != gen {
		t.Fatalf("live generation %d, want %d", m.Generation, gen)
	}
	if !sameItems(got, want) {
		t.Fatalf("live items differ from what was published: got %v, want %v", sortedNames(got), sortedNames(want))
	}
	checkNodes(t, p.conn(), p.paths.Root, want)
}

// checkNodes verifies that the nodes under root are exactly the items of
// want and their directories (docs/design.md, "Config trees"): every item
// a leaf holding its content, every directory a node with empty data and
// children, nothing else (no marker, no leftover).
func checkNodes(t testing.TB, conn *zk.Conn, root string, want map[string][]byte) {
	t.Helper()
	got := map[string]bool{}
	var walk func(rel string)
	walk = func(rel string) {
		node := root
		if rel != "" {
			node += "/" + rel
		}
		kids, _, err := conn.Children(node)
		if err != nil {
			t.Fatalf("list %s: %v", node, err)
		}
		for _, k := range kids {
			kr := k
			if rel != "" {
				kr = rel + "/" + k
			}
			got[kr] = true
			data, st, err := conn.Get(root + "/" + kr)
			if err != nil {
				t.Fatalf("read %s: %v", kr, err)
			}
			if item, ok := want[kr]; ok {
				if st.NumChildren != 0 || !bytes.Equal(data, item) {
					t.Fatalf("item node %s: %d children, %d bytes; want a leaf with its %d bytes", kr, st.NumChildren, len(data), len(item))
				}
				continue
			}
			if len(data) != 0 || st.NumChildren == 0 {
				t.Fatalf("node %s is neither an item nor a directory of the set (%d bytes, %d children)", kr, len(data), st.NumChildren)
			}
			walk(kr)
		}
	}
	walk("")
	wantNodes := map[string]bool{}
	for n := range want {
		wantNodes[n] = true
		for _, d := range manifest.Dirs(n) {
			wantNodes[d] = true
		}
	}
	if !maps.Equal(got, wantNodes) {
		t.Fatalf("nodes under %s:\n%v\nwant exactly the items and their directories:\n%v", root,
			slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantNodes)))
	}
}

func sameItems(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// rootState returns the root's stat and data (nil stat when absent).
func rootState(t testing.TB, conn *zk.Conn, root string) (*zk.Stat, []byte) {
	t.Helper()
	data, st, err := conn.Get(root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return st, data
}

// treeSnapshot returns every node under the given paths with its data
// version and data, to prove nothing was written.
func treeSnapshot(t testing.TB, conn *zk.Conn, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		data, st, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out[p] = fmt.Sprintf("v%d c%d %x", st.Version, st.Cversion, manifest.Hash(data))
		kids, _, err := conn.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		for _, k := range kids {
			walk(strings.TrimSuffix(p, "/") + "/" + k)
		}
	}
	for _, p := range paths {
		walk(p)
	}
	return out
}

// historyGens lists the generations in a root's history.
func historyList(t testing.TB, conn *zk.Conn, l layout.Paths) []int64 {
	t.Helper()
	kids, _, err := conn.Children(l.History())
	if err != nil {
		t.Fatal(err)
	}
	var gens []int64
	for _, k := range kids {
		if g, ok := layout.ParseHistoryName(k); ok {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	return gens
}

func clone(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

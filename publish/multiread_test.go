package publish

import (
	"bytes"
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestPrefetchItemsWithoutMultiRead: against a server that refuses
// multiRead as ZooKeeper 3.5 does (UNIMPLEMENTED, then the connection
// closed; zktest.NoMultiRead emulates it in front of the installed
// server), a publish whose step two reads the items with one multiRead
// falls back to one Get per item on the reconnected session, reads what
// the live items hold, commits, and sends no multiRead again from the
// same Publisher. Against the real server the multiRead is answered.
// (Only ZooKeeper 3.8 is installed here: the refusal is the proxy's, as
// 3.5's UnimplementedRequestProcessor sends it.)
func TestPrefetchItemsWithoutMultiRead(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/oldserver"
	direct := newPub(t, c, root)
	g1 := items(5, 100, "g1")
	mustPublish(t, direct, Request{Items: g1})

	// The installed server answers the multiRead (3.6+).
	direct.Prefetch(ctx, g1)
	dr := direct.takePrefetch()
	<-dr.done
	if direct.noMultiRead.Load() {
		t.Fatalf("the real server's multiRead was taken as refused")
	}
	if len(dr.items) != len(g1) {
		t.Fatalf("real server: %d items read, want %d", len(dr.items), len(g1))
	}

	old := zktest.NoMultiRead(t, c.Addrs()[0])
	conn, sess := dial(t, testSession, old.Addr())
	p := mustNew(t, conn, sess, root)

	// The first step two meets the refusal; the second reads one Get per
	// item from the start. Both read every live item.
	live := g1
	for round, tag := range []string{"g2", "g3"} {
		next := clone(live)
		next["item-01.conf"] = content(100, tag)
		p.Prefetch(ctx, next)
		r := p.takePrefetch()
		<-r.done
		if r.stErr != nil {
			t.Fatalf("round %d: state read: %v", round, r.stErr)
		}
		for name := range next {
			got, ok := r.items[name]
			if !ok || !got.exists || !bytes.Equal(got.data, live[name]) {
				t.Errorf("round %d, %s: read %q (read %v, exists %v), want the live %q", round, name, got.data, ok, got.exists, live[name])
			}
		}
		if got := old.Refused(); got != 1 {
			t.Fatalf("round %d: multiReads refused: %d, want 1", round, got)
		}
		if !p.noMultiRead.Load() {
			t.Fatalf("round %d: the refusal was not remembered", round)
		}
		res := mustPublish(t, p, Request{Items: next})
		checkLive(t, direct, res.Generation, next)
		live = next
	}
}

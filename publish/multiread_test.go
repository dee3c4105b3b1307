package publish

import (
	"bytes"
	"slices"
	"testing"
	"time"

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

// TestPrefetchACLs: the ACLs a pending Prefetch read are handed out as
// read (the root's, or none when it does not exist), only while the
// prefetch is pending, and not when the Publisher held its ACLs from an
// earlier publish (the prefetch read none).
func TestPrefetchACLs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	p := newPub(t, c, "/prefetchacls")
	set := items(2, 100, "acl")
	if _, ok := p.PrefetchACLs(ctx); ok {
		t.Fatalf("ACLs handed out with no prefetch pending")
	}
	p.Prefetch(ctx, set)
	acls, ok := p.PrefetchACLs(ctx)
	if !ok || acls.Err != nil || acls.RootExists || acls.Root != nil {
		t.Fatalf("root not yet published: %+v, ok %v; want no root, no error", acls, ok)
	}
	mustPublish(t, p, Request{Items: set})

	// A new Publisher reads them (the first one holds them now).
	q := newPub(t, c, "/prefetchacls")
	q.Prefetch(ctx, set)
	acls, ok = q.PrefetchACLs(ctx)
	want, _, err := q.conn().GetACL("/prefetchacls")
	if err != nil {
		t.Fatal(err)
	}
	if !ok || acls.Err != nil || !acls.RootExists || len(acls.Root) != len(want) || acls.Root[0] != want[0] {
		t.Fatalf("published root: %+v, ok %v; want its ACL %v", acls, ok, want)
	}
	mustPublish(t, q, Request{Items: set})
	if _, ok := q.PrefetchACLs(ctx); ok {
		t.Fatalf("ACLs handed out after the publish took the prefetch")
	}
	q.Prefetch(ctx, set)
	if _, ok := q.PrefetchACLs(ctx); ok {
		t.Fatalf("ACLs handed out by a prefetch that read none (held from the last publish)")
	}
}

// TestVerifyUnchangedMultiRead: a publish of one changed item of a
// 100-item set (larger than step 2 speculates on) checks its 99 unchanged
// items in two multiReads (64 + 35), not one Get each, and still finds
// and rewrites an unchanged item tampered with behind its back; through a
// server that refuses multiRead (3.5) it falls back to one Get per item
// and repairs the tampered item alike.
func TestVerifyUnchangedMultiRead(t *testing.T) {
	c := startZK(t)
	for _, tc := range []struct {
		name string
		old  bool
	}{{"multiRead", false}, {"refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			root := "/verifybatch-" + tc.name
			direct := newPub(t, c, root)
			set := items(100, 1024, "v1")
			mustPublish(t, direct, Request{Items: set})

			next := clone(set)
			next["item-00.conf"] = content(1024, "v2")
			if _, err := direct.conn().Set(direct.paths.Item("item-57.conf"), []byte("edited by hand"), -1); err != nil {
				t.Fatal(err)
			}

			var addr string
			var counter *zktest.Counter
			var old *zktest.OldServer
			if tc.old {
				old = zktest.NoMultiRead(t, c.Addrs()[0])
				counter = zktest.CountRequests(t, old.Addr())
			} else {
				counter = zktest.CountRequests(t, c.Addrs()[0])
			}
			addr = counter.Addr()
			conn, sess := dial(t, testSession, addr)
			p := mustNew(t, conn, sess, root)

			res := mustPublish(t, p, Request{Items: next})
			if !slices.Equal(res.Repaired, []string{"item-57.conf"}) {
				t.Fatalf("repaired %v, want [item-57.conf]", res.Repaired)
			}
			checkLive(t, direct, res.Generation, next)

			gets, multis := counter.Count(zktest.OpGetData), counter.Count(zktest.OpMultiRead)
			t.Logf("getData %d, multiRead %d", gets, multis)
			if tc.old {
				// One refusal, or two: the other batch may have checked for
				// multiRead before the first refusal was remembered, and
				// sends its own on the new connection (seen 1 in 20 with
				// four batches, TestVerifyFallbackGetsBounded).
				if r := old.Refused(); r < 1 || r > 2 || !p.noMultiRead.Load() {
					t.Fatalf("multiReads refused %d (remembered %v), want 1 or 2", r, p.noMultiRead.Load())
				}
				if gets < 99 {
					t.Fatalf("getData %d after the refusal, want one per unchanged item (99) at least", gets)
				}
				return
			}
			if multis != 3 {
				t.Fatalf("multiReads %d, want 3 (the state's, and 64 + 35 unchanged items)", multis)
			}
			if gets >= 99 {
				t.Fatalf("getData %d: the unchanged items were read one Get each", gets)
			}
		})
	}
}

// TestReadBatches: unchanged items are batched by at most 64 items and
// 256 KiB, an item larger than that alone, and one per batch without
// multiRead.
func TestReadBatches(t *testing.T) {
	sizes := func(n int, sz int64) []int64 { return slices.Repeat([]int64{sz}, n) }
	lens := func(bs [][]int) []int {
		var out []int
		next := 0
		for _, b := range bs {
			for _, i := range b {
				if i != next {
					t.Fatalf("batches %v do not cover the items in order", bs)
				}
				next++
			}
			out = append(out, len(b))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		sizes []int64
		multi bool
		want  []int
	}{
		{"99 × 1 KiB", sizes(99, 1<<10), true, []int{64, 35}},
		{"10 × 100 KiB", sizes(10, 100<<10), true, []int{2, 2, 2, 2, 2}},
		{"large alone", []int64{1 << 10, 300 << 10, 1 << 10}, true, []int{1, 1, 1}},
		{"exactly 256 KiB", sizes(4, 64<<10), true, []int{4}},
		{"no multiRead", sizes(3, 1), false, []int{1, 1, 1}},
		{"none", nil, true, nil},
	} {
		if got := lens(readBatches(tc.sizes, tc.multi)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: batches of %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestVerifyFallbackGetsBounded: when the verification's multiReads fail
// together (a 3.5 server refuses the first and closes the connection
// under all of them), the Gets they fall back to stay at most 64 in
// flight across every batch, not 64 per batch: a set of 200 unchanged
// items makes four batches, whose 199 Gets at once would be the burst the
// bound exists to prevent. The counting proxy holds the server's answers
// from the first Get on the reconnected session until more than 64 are
// outstanding or three seconds have passed, so that a client without the
// bound shows how many it sends.
func TestVerifyFallbackGetsBounded(t *testing.T) {
	c := startZK(t)
	const root = "/verifybound"
	direct := newPub(t, c, root)
	set := items(200, 512, "v1")
	mustPublish(t, direct, Request{Items: set})
	next := clone(set)
	next["item-00.conf"] = content(512, "v2")

	old := zktest.NoMultiRead(t, c.Addrs()[0])
	counter := zktest.CountRequests(t, old.Addr())
	conn, sess := dial(t, testSession, counter.Addr())
	p := mustNew(t, conn, sess, root)
	counter.Hold(zktest.OpGetData, 64, 3*time.Second)

	res := mustPublish(t, p, Request{Items: next})
	checkLive(t, direct, res.Generation, next)
	// Usually one refusal; a batch that checked for multiRead before the
	// first refusal was remembered sends its own on the new connection
	// (1 run in 20 here).
	if old.Refused() < 1 {
		t.Fatalf("no multiRead refused: the fallback was not taken")
	}
	gets, most := counter.Count(zktest.OpGetData), counter.MaxOutstanding(zktest.OpGetData)
	t.Logf("getData %d, at most %d outstanding, multiReads refused %d", gets, most, old.Refused())
	if gets < 199 {
		t.Fatalf("getData %d, want one per unchanged item (199) at least", gets)
	}
	if most > 64 {
		t.Fatalf("%d Gets outstanding at once, want at most 64", most)
	}
}

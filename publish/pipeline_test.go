package publish

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
)

// pipelineConn dials root's cluster through a counting proxy and returns
// a Publisher on that connection and the proxy; hold, when set, is armed
// before the connection is opened, so it holds the server's answers from
// the publisher's first Multi (its commit) on.
func pipelineConn(t *testing.T, c *zktest.Cluster, root string, hold bool, opts ...Option) (*Publisher, *zktest.Counter) {
	t.Helper()
	counter := zktest.CountRequests(t, c.Addrs()[0])
	if hold {
		// Until a second Multi is outstanding, or 2 s (well under the
		// session's read timeout: the pings wait too).
		counter.Hold(zktest.OpMulti, 1, 2*time.Second)
	}
	conn, sess := dial(t, testSession, counter.Addr())
	return mustNew(t, conn, sess, root, opts...), counter
}

// TestPipelinedBlobStore: a publish of 100 changed items (too many for
// step 2 to list the blob store, so its commit carries no blob) sends the
// store of its entering blobs right behind its commit, before the
// commit's answer: the proxy holds the server's answers from the commit
// on until a second Multi is outstanding, which only a store sent before
// the commit's answer makes happen (a store sent after the
// acknowledgement, as before, leaves one outstanding). The publish
// returns with every entering blob stored and no Multi after the two.
func TestPipelinedBlobStore(t *testing.T) {
	c := startZK(t)
	const root = "/pipeline"
	direct := newPub(t, c, root)
	mustPublish(t, direct, Request{Items: items(100, 1024, "v1")})
	next := items(100, 1024, "v2")

	p, counter := pipelineConn(t, c, root, true)
	res := mustPublish(t, p, Request{Items: next})
	checkLive(t, direct, res.Generation, next)
	most, multis := counter.MaxOutstanding(zktest.OpMulti), counter.Count(zktest.OpMulti)
	t.Logf("multis %d, at most %d outstanding", multis, most)
	if most < 2 {
		t.Fatalf("at most %d Multi outstanding: the blob store was not in flight before the commit's answer", most)
	}
	for n, d := range next {
		if !blobExists(t, direct, d) {
			t.Fatalf("content of %s is not stored as a blob when the publish returned", n)
		}
	}
	if multis != 2 {
		t.Fatalf("%d Multis, want 2 (the commit and the store behind it; nothing left to store after the acknowledgement)", multis)
	}
	checkInvariant(t, direct)
}

// TestPipelinedBlobStoreLostRace: another publisher commits exactly once
// between this publish's reads and its commit, so its commit loses the
// compare-and-swap, and the root stands at the very version the
// pipelined store checks (the winner's commit gave it that version). The
// publish is a conflict, and no blob of its set is left stored: the store
// that landed behind the failed commit is deleted again. The winner's
// blobs stay.
func TestPipelinedBlobStoreLostRace(t *testing.T) {
	c := startZK(t)
	const root = "/pipelinerace"
	direct := newPub(t, c, root)
	mustPublish(t, direct, Request{Items: items(100, 1024, "v1")})
	winner := items(100, 1024, "winner")
	loser := items(100, 1024, "loser")

	sends := 0
	var won *Result
	p, counter := pipelineConn(t, c, root, false, withBeforeCommit(func(string) {
		if sends++; sends == 1 {
			won = mustPublish(t, direct, Request{Items: winner})
		}
	}))
	_, err := p.Publish(testCtx(t), Request{Items: loser})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("publish behind a concurrent commit: %v, want a conflict", err)
	}
	if n := counter.Count(zktest.OpMulti); n < 2 {
		t.Fatalf("%d Multis from the losing publisher, want its commit and the store behind it at least", n)
	}
	checkLive(t, direct, won.Generation, winner)
	for n, d := range loser {
		if blobExists(t, direct, d) {
			t.Fatalf("content of %s of the set that lost is stored as a blob", n)
		}
	}
	for n, d := range winner {
		if !blobExists(t, direct, d) {
			t.Fatalf("content of %s of the winning set is not stored", n)
		}
	}
	checkInvariant(t, direct)
}

// TestPipelinedBlobStoreBlobExists: one entering content's blob exists
// already (stored by someone else), so the store pipelined behind the
// commit fails as a whole; the publish succeeds and the store after the
// acknowledgement stores every other blob.
func TestPipelinedBlobStoreBlobExists(t *testing.T) {
	c := startZK(t)
	const root = "/pipelineexists"
	direct := newPub(t, c, root)
	mustPublish(t, direct, Request{Items: items(100, 1024, "v1")})
	next := items(100, 1024, "v2")
	d := next["item-42.conf"]
	if _, err := direct.conn().Create(direct.paths.Blob(manifest.Hash(d)), d, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	p, counter := pipelineConn(t, c, root, false)
	res := mustPublish(t, p, Request{Items: next})
	checkLive(t, direct, res.Generation, next)
	if n := counter.Count(zktest.OpMulti); n < 3 {
		t.Fatalf("%d Multis, want the commit, the store behind it (failed) and the store after the acknowledgement", n)
	}
	for n, d := range next {
		if !blobExists(t, direct, d) {
			t.Fatalf("content of %s is not stored as a blob", n)
		}
	}
	checkInvariant(t, direct)
}

package publish

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
)

// TestStepTwoOneMultiRead: a new Publisher's one-item publish of a
// 20-item set sends step 2's reads as one multiRead beside the two ACL
// reads (readCombined): no getData, listing or Exists of its own, where
// they were the root's read, three listings, the candidate's Exists and a
// multiRead of the items. What that multiRead read is what the separate
// reads read: an unchanged item tampered with behind the publisher's
// back is found and rewritten, the history and the blob store are kept
// (checkInvariant), and the live set is the one published.
func TestStepTwoOneMultiRead(t *testing.T) {
	c := startZK(t)
	const root = "/steptwo-one"
	direct := newPub(t, c, root)
	set := items(20, 1024, "v1")
	mustPublish(t, direct, Request{Items: set})
	mustPublish(t, direct, Request{Items: items(20, 1024, "v2")})
	mustPublish(t, direct, Request{Items: set})
	if _, err := direct.conn().Set(direct.paths.Item("item-13.conf"), []byte("edited by hand"), -1); err != nil {
		t.Fatal(err)
	}

	counter := zktest.CountRequests(t, c.Addrs()[0])
	conn, sess := dial(t, testSession, counter.Addr())
	p := mustNew(t, conn, sess, root)
	next := clone(set)
	next["item-00.conf"] = content(1024, "v3")
	res := mustPublish(t, p, Request{Items: next})
	if !slices.Equal(res.Repaired, []string{"item-13.conf"}) {
		t.Fatalf("repaired %v, want [item-13.conf]", res.Repaired)
	}
	checkLive(t, direct, 4, next)
	checkInvariant(t, direct)

	for _, tc := range []struct {
		what string
		op   int32
		want int
	}{
		{"multiRead", zktest.OpMultiRead, 1},
		{"getACL", zktest.OpGetACL, 2},
		{"getData", zktest.OpGetData, 0},
		{"getChildren2", zktest.OpGetChildren2, 0},
		{"getChildren", zktest.OpGetChildren, 0},
		{"exists", zktest.OpExists, 0},
	} {
		if got := counter.Count(tc.op); got != tc.want {
			t.Errorf("%s: %d requests, want %d", tc.what, got, tc.want)
		}
	}
}

// TestStepTwoCombinedReads: the state, the candidate's existence and the
// blobs step 2 reads in one multiRead are those the separate reads
// report (noMultiRead: the path of a server older than 3.6), field by
// field: the root's data and stat, its children, the history and the
// history parent's stat (whose ACL version the ACLs held are checked
// against), whether each content's blob exists and whether a candidate
// exists, with and without one; and the items, existing or not.
func TestStepTwoCombinedReads(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/steptwo-same"
	direct := newPub(t, c, root)
	mustPublish(t, direct, Request{Items: items(4, 100, "g1")})
	mustPublish(t, direct, Request{Items: items(4, 100, "g2")})

	next := items(5, 100, "g2") // item-04 is new; a content no blob holds
	for _, candidate := range []bool{false, true} {
		if candidate {
			if _, err := direct.conn().Create(direct.paths.Candidate(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		var got [2]*stepTwo
		for i, old := range []bool{false, true} {
			p := newPub(t, c, root)
			p.noMultiRead.Store(old)
			sp, _ := speculate(next)
			r := p.startStepTwo(ctx, sp, nil)
			<-r.done
			if r.stErr != nil || r.aclErr != nil {
				t.Fatalf("old %v: state %v, ACLs %v", old, r.stErr, r.aclErr)
			}
			got[i] = r
		}
		a, b := got[0], got[1]
		if !slices.Equal(a.st.rootData, b.st.rootData) || *a.st.rootStat != *b.st.rootStat {
			t.Errorf("root: %+v, separately %+v", a.st.rootStat, b.st.rootStat)
		}
		if a.st.live == nil || a.st.live.Generation != 2 || !slices.Equal(a.st.children, b.st.children) {
			t.Errorf("live %v, children %v; separately %v", a.st.live, a.st.children, b.st.children)
		}
		if !slices.Equal(a.st.history, b.st.history) || len(a.st.history) != 2 || a.st.haveMeta != b.st.haveMeta {
			t.Errorf("history %v (parent %v), separately %v (%v)", a.st.history, a.st.haveMeta, b.st.history, b.st.haveMeta)
		}
		if aclVersionOf(a.st.histStat) != aclVersionOf(b.st.histStat) || a.st.histStat == nil {
			t.Errorf("history parent %+v, separately %+v", a.st.histStat, b.st.histStat)
		}
		if a.acl.MetaFrom != aclVersionOf(a.st.histStat) || a.acl.ItemFrom != aclVersionOf(a.st.rootStat) {
			t.Errorf("the ACLs read (%+v, %+v) are not those of the state read", a.acl.ItemFrom, a.acl.MetaFrom)
		}
		if a.candidate == nil || b.candidate == nil || *a.candidate != candidate || *b.candidate != candidate {
			t.Errorf("candidate %v, separately %v; want %v", a.candidate, b.candidate, candidate)
		}
		if len(a.blobs) != len(sp(next)) || len(a.blobs) != len(b.blobs) {
			t.Errorf("blobs %v, separately %v", a.blobs, b.blobs)
		}
		for sha, ok := range b.blobs {
			if a.blobs[sha] != ok {
				t.Errorf("blob %s: %v, separately %v", sha, a.blobs[sha], ok)
			}
		}
		if a.blobs[manifest.Hash(next["item-04.conf"])] {
			t.Errorf("a content never published has a blob")
		}
		if len(a.items) != len(next) || a.items["item-04.conf"].exists || !a.items["item-01.conf"].exists {
			t.Errorf("items %v", a.items)
		}
		for n, it := range b.items {
			if a.items[n].exists != it.exists || !slices.Equal(a.items[n].data, it.data) {
				t.Errorf("item %s differs from its separate read", n)
			}
		}
	}
}

// sp is the distinct contents speculate reads the blobs of.
func sp(items map[string][]byte) []string {
	s, _ := speculate(items)
	return s.shas
}

// TestStepTwoStateErrorAsSeparate: a read of step 2's multiRead that
// fails other than by NoNode (here the history parent's, whose READ the
// publisher lacks) fails the publish with the very error the separate
// read reported, the path and the permission explained; the multiRead was
// sent (and the state read again, separately, for the error).
func TestStepTwoStateErrorAsSeparate(t *testing.T) {
	c := startZK(t)
	const root = "/steptwo-denied"
	direct := newPub(t, c, root)
	set := items(3, 100, "d1")
	mustPublish(t, direct, Request{Items: set})
	// ADMIN only: the history parent can no longer be read, and its ACL
	// can be set back.
	if _, err := direct.conn().SetACL(direct.paths.History(), zk.WorldACL(zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = direct.conn().SetACL(direct.paths.History(), zk.WorldACL(zk.PermAll), -1) })

	var errs [2]string
	for i, old := range []bool{false, true} {
		counter := zktest.CountRequests(t, c.Addrs()[0])
		conn, sess := dial(t, testSession, counter.Addr())
		p := mustNew(t, conn, sess, root)
		p.noMultiRead.Store(old)
		p.mu.Lock()
		p.acls = &inherited{} // held: the ACLs are not read, the state's error is the publish's
		p.mu.Unlock()
		_, err := p.Publish(testCtx(t), Request{Items: items(3, 100, "d2")})
		if err == nil {
			t.Fatalf("old %v: a publish that cannot read the history succeeded", old)
		}
		errs[i] = err.Error()
		if m := counter.Count(zktest.OpMultiRead); old != (m == 0) {
			t.Errorf("old %v: %d multiReads", old, m)
		}
	}
	t.Logf("error: %s", errs[0])
	if errs[0] != errs[1] {
		t.Fatalf("error %q, separately %q", errs[0], errs[1])
	}
}

// TestStepTwoCandidateWithoutRead: a candidate node the publisher may not
// READ (its listing in step 2's multiRead refused) is still found: the
// candidate alone is asked again with an Exists, which needs no
// permission, and the rest of the multiRead's answers stand.
func TestStepTwoCandidateWithoutRead(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const root = "/steptwo-candidate"
	direct := newPub(t, c, root)
	mustPublish(t, direct, Request{Items: items(4, 100, "c1")})
	if _, err := direct.conn().Create(direct.paths.Candidate(), nil, 0, zk.WorldACL(zk.PermAdmin|zk.PermDelete)); err != nil {
		t.Fatal(err)
	}

	counter := zktest.CountRequests(t, c.Addrs()[0])
	conn, sess := dial(t, testSession, counter.Addr())
	p := mustNew(t, conn, sess, root)
	sp, _ := speculate(items(4, 100, "c2"))
	r := p.startStepTwo(ctx, sp, nil)
	<-r.done
	if r.stErr != nil || r.aclErr != nil {
		t.Fatalf("state %v, ACLs %v", r.stErr, r.aclErr)
	}
	if r.candidate == nil || !*r.candidate {
		t.Fatalf("candidate %v, want found", r.candidate)
	}
	if r.st.live == nil || r.st.live.Generation != 1 {
		t.Errorf("live %v, want generation 1 from the multiRead", r.st.live)
	}
	if m, e := counter.Count(zktest.OpMultiRead), counter.Count(zktest.OpExists); m != 1 || e != 1 {
		t.Errorf("%d multiReads and %d Exists, want 1 and 1 (the candidate asked again)", m, e)
	}
}

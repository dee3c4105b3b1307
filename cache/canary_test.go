package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// startCanary starts a canary rollout by hand, the way docs/design.md
// ("Canary rollouts") lays it out (the publish side is built separately):
// the candidate's contents that no stable item has are created under the
// candidate node, then one Multi sets the root's data to the stable
// manifest plus the canary and creates the candidate node holding the
// candidate manifest. It returns the candidate's generation and the
// commit zxid.
func (rp *rawPublisher) startCanary(sel manifest.Selection, items map[string][]byte) (int64, int64) {
	rp.t.Helper()
	stable, ver, err := rp.current()
	if err != nil || stable == nil {
		rp.t.Fatalf("startCanary: root %v, %v", stable, err)
	}
	if err := zkclient.EnsurePath(context.Background(), rp.conn, rp.p.Base(), acl); err != nil {
		rp.t.Fatalf("startCanary: %v", err)
	}
	cm := nextManifest(stable, items, manifest.ModeMulti)
	cm.Candidate = &sel
	cdata := cm.Encode()
	root := *stable
	root.Canary = &manifest.Canary{Generation: cm.Generation, ManifestSHA256: manifest.Hash(cdata), Selection: sel,
		RolloutID: newID(), StartedAt: time.Now().UTC(), Publisher: "test@host"}
	ops := []any{&zk.SetDataRequest{Path: rp.p.Root, Data: root.Encode(), Version: ver},
		&zk.CreateRequest{Path: rp.p.Candidate(), Data: cdata, Acl: acl}}
	have := map[string]bool{}
	for _, it := range stable.Items {
		have[it.SHA256] = true
	}
	for _, data := range items {
		sha := manifest.Hash(data)
		if !have[sha] {
			have[sha] = true
			ops = append(ops, &zk.CreateRequest{Path: rp.p.CandidateContent(sha), Data: data, Acl: acl})
		}
	}
	res, err := rp.conn.Multi(ops...)
	if err != nil {
		rp.t.Fatalf("startCanary: %v", err)
	}
	return cm.Generation, res[0].Stat.Mzxid
}

// endCanaryOps deletes the candidate node and its children.
func (rp *rawPublisher) endCanaryOps() []any {
	kids, _, err := rp.conn.Children(rp.p.Candidate())
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		rp.t.Fatalf("candidate children: %v", err)
	}
	var ops []any
	for _, k := range kids {
		ops = append(ops, &zk.DeleteRequest{Path: rp.p.CandidateContent(k), Version: -1})
	}
	return append(ops, &zk.DeleteRequest{Path: rp.p.Candidate(), Version: -1})
}

// reselect changes the selector of the rollout the root announces (a
// widen, by hand).
func (rp *rawPublisher) reselect(selector string) {
	rp.t.Helper()
	root, ver, err := rp.current()
	if err != nil {
		rp.t.Fatal(err)
	}
	root.Canary.Selector = selector
	if _, err := rp.conn.Set(rp.p.Root, root.Encode(), ver); err != nil {
		rp.t.Fatal(err)
	}
}

// canaryRoot starts a server and a raw publisher of /config with an
// incarnation (a rollout compares generations within one).
func canaryRoot(t *testing.T) (*zktest.Cluster, *rawPublisher, *slog.Logger) {
	t.Helper()
	zkc := sharedZooKeeper.For(t)
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	pub.inc = manifest.NewIncarnation()
	log, _ := testLogger(t)
	return zkc, pub, log
}

// waitRead waits until c has read the root at least once more than
// before and is live again at generation gen.
func waitRead(t *testing.T, c *Cache, before uint64, gen int64) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		st := c.State()
		if c.Stats().RootReads > before && st.State == StateLive && st.Generation == gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no root read: stats %+v, state %+v", c.Stats(), st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCanaryFollowers checks who follows what during a rollout: a member
// the selector picks applies the candidate, assembled from the stable
// items and the candidate contents; a member it does not pick and a cache
// without labels stay on the stable generation at the cost of one root
// read (what a plain publish without changes costs, and no candidate
// read); the end of the rollout brings everyone to the generation above
// the candidate.
func TestCanaryFollowers(t *testing.T) {
	zkc, pub, log := canaryRoot(t)
	v1 := set(4, "v1")
	g1, _ := pub.publish(v1)
	dial := WithServers(zkc.Addrs(), 4*time.Second)
	in := newCache(t, "/config", dial, WithLogger(log.With("cache", "in")), WithLabels("host-a", map[string]string{"zone": "a"}))
	out := newCache(t, "/config", dial, WithLogger(log.With("cache", "out")), WithLabels("host-b", map[string]string{"zone": "b"}))
	plain := newCache(t, "/config", dial, WithLogger(log.With("cache", "plain")))
	for _, c := range []*Cache{in, out, plain} {
		waitGen(t, c, g1, v1)
	}
	outBefore, plainBefore := out.Stats(), plain.Stats()

	// The candidate changes one item to a new content, one to the
	// content of another stable item, and adds one.
	v2 := withItem(withItem(withItem(v1, "n0", "canary"), "n1", "v1 2"), "extra", "new")
	v2["n1"] = v1["n2"]
	cg, cz := pub.startCanary(manifest.Selection{Selector: "zone=a"}, v2)
	s := waitGen(t, in, cg, v2)
	if !s.Candidate() || s.Zxid() != cz {
		t.Errorf("member: candidate %v zxid %d, want true and the root's %d", s.Candidate(), s.Zxid(), cz)
	}
	if in.Stats().CandidateReads == 0 {
		t.Errorf("member made no candidate read: %+v", in.Stats())
	}
	for name, c := range map[string]*Cache{"out": out, "plain": plain} {
		before := map[string]Stats{"out": outBefore, "plain": plainBefore}[name]
		waitRead(t, c, before.RootReads, g1)
		after := c.Stats()
		if got := after.Requests - before.Requests; got != 1 || after.CandidateReads != 0 {
			t.Errorf("%s: %d requests and %d candidate reads for the rollout's start, want 1 root read and none", name, got, after.CandidateReads)
		}
		if s := c.Snapshot(); s.Generation() != g1 || s.Candidate() {
			t.Errorf("%s: generation %d candidate %v, want stable %d", name, s.Generation(), s.Candidate(), g1)
		}
	}

	// The end of the rollout (a promote: the candidate's content).
	g3, _ := pub.publish(v2)
	if g3 != cg+1 {
		t.Fatalf("end of rollout generation %d, want %d", g3, cg+1)
	}
	for _, c := range []*Cache{in, out, plain} {
		if s := waitGen(t, c, g3, v2); s.Candidate() {
			t.Errorf("generation %d reported as a candidate", g3)
		}
	}
}

// TestCanaryPercent checks that a percent selection picks the members
// whose bucket is below it, by id alone.
func TestCanaryPercent(t *testing.T) {
	var inID, outID string
	for i := 0; inID == "" || outID == ""; i++ {
		id := fmt.Sprintf("host-%d", i)
		switch b := manifest.Bucket(id); {
		case b < 2500 && inID == "":
			inID = id
		case b >= 2500 && outID == "":
			outID = id
		}
	}
	zkc, pub, log := canaryRoot(t)
	v1 := set(3, "v1")
	g1, _ := pub.publish(v1)
	dial := WithServers(zkc.Addrs(), 4*time.Second)
	in := newCache(t, "/config", dial, WithLogger(log), WithLabels(inID, nil))
	out := newCache(t, "/config", dial, WithLogger(log), WithLabels(outID, nil))
	waitGen(t, in, g1, v1)
	waitGen(t, out, g1, v1)
	before := out.Stats().RootReads
	v2 := withItem(v1, "n0", "canary")
	cg, _ := pub.startCanary(manifest.Selection{Percent: 25}, v2)
	waitGen(t, in, cg, v2)
	waitRead(t, out, before, g1)
}

// TestCanarySticky checks that a member holding the candidate keeps it
// when no longer selected: after a restart from its state file with
// labels that no longer select it (FromStateFile, then live on the same
// candidate), and never goes back to the stable generation; the end of
// the rollout moves it on.
func TestCanarySticky(t *testing.T) {
	zkc, pub, log := canaryRoot(t)
	path := filepath.Join(t.TempDir(), "config.state")
	v1 := set(3, "v1")
	g1, _ := pub.publish(v1)
	dial := WithServers(zkc.Addrs(), 4*time.Second)
	c := newCache(t, "/config", dial, WithLogger(log), WithStateFile(path), WithLabels("host-a", map[string]string{"zone": "a"}))
	waitGen(t, c, g1, v1)
	v2 := withItem(v1, "n2", "canary")
	cg, _ := pub.startCanary(manifest.Selection{Selector: "zone=a"}, v2)
	waitGen(t, c, cg, v2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Relabelled: zone=b is not selected.
	var seen []int64
	onUpdate := func(s *Snapshot) { seen = append(seen, s.Generation()) }
	r := newCache(t, "/config", dial, WithLogger(log), WithStateFile(path), WithOnUpdate(onUpdate),
		WithLabels("host-a", map[string]string{"zone": "b"}))
	if s := r.Snapshot(); s == nil || !s.FromStateFile() || !s.Candidate() || s.Generation() != cg {
		t.Fatalf("restarted cache serves %+v, want the persisted candidate %d", s, cg)
	}
	waitRead(t, r, 0, cg)
	if s := r.Snapshot(); !s.Candidate() {
		t.Errorf("live snapshot is not the candidate")
	}
	g3, _ := pub.publish(v1) // an abort: the stable content again, above the candidate
	waitGen(t, r, g3, v1)
	_ = r.Close()
	if slices.Contains(seen, g1) {
		t.Errorf("went back to the stable generation: applied %v", seen)
	}
}

// TestCanaryMismatch checks that a candidate node that does not match the
// root's canary is never served (no mix of generations): the member keeps
// the stable generation and says why in its state, then applies the
// candidate once the root names it correctly.
func TestCanaryMismatch(t *testing.T) {
	zkc, pub, log := canaryRoot(t)
	conn := pub.conn
	v1 := set(3, "v1")
	g1, _ := pub.publish(v1)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithLabels("host-a", nil))
	waitGen(t, c, g1, v1)

	// A rollout that does not select the member yet, so that it never
	// reads the good candidate; its node is broken behind the
	// publisher's back, then the root widened to select the member: the
	// root names a hash the node does not have.
	v2 := withItem(v1, "n0", "canary")
	stable, _, err := pub.current()
	if err != nil {
		t.Fatal(err)
	}
	bogus := nextManifest(stable, v1, manifest.ModeMulti)
	bogus.Candidate = &manifest.Selection{Selector: "agent=host-a"}
	cg, _ := pub.startCanary(manifest.Selection{Selector: "agent=nobody"}, v2)
	good, _, err := conn.Get(pub.p.Candidate())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(pub.p.Candidate(), bogus.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	pub.reselect("agent in (nobody,host-a)")
	st := waitState(t, c, "a candidate error", func(st StateInfo) bool {
		var ce *CandidateError
		return errors.As(st.Err, &ce)
	})
	if !errors.Is(st.Err, manifest.ErrTorn) || !strings.Contains(st.Err.Error(), "does not match the root's canary manifest_sha256") ||
		st.Generation != g1 || c.Snapshot().Generation() != g1 {
		t.Fatalf("state %+v, serving %d: want the stable %d kept", st, c.Snapshot().Generation(), g1)
	}
	// Repaired: the candidate node holds the manifest the root names.
	if _, err := conn.Set(pub.p.Candidate(), good, -1); err != nil {
		t.Fatal(err)
	}
	if s := waitGen(t, c, cg, v2); !s.Candidate() {
		t.Errorf("not a candidate")
	}
}

// TestCanaryMissingCandidate checks a root that announces a candidate
// whose node is missing (removed by hand): the member keeps the stable
// generation and says so, and follows the next publish.
func TestCanaryMissingCandidate(t *testing.T) {
	zkc, pub, log := canaryRoot(t)
	v1 := set(3, "v1")
	g1, _ := pub.publish(v1)
	c := newCache(t, "/config", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log), WithLabels("host-a", nil))
	waitGen(t, c, g1, v1)
	v2 := withItem(v1, "n0", "canary")
	// A rollout that does not select the member yet, so that it never
	// reads the candidate; then its node is deleted and the root widened
	// to select the member.
	cg, _ := pub.startCanary(manifest.Selection{Selector: "agent=nobody"}, v2)
	if _, err := pub.conn.Multi(pub.endCanaryOps()...); err != nil {
		t.Fatal(err)
	}
	pub.reselect("agent in (nobody,host-a)")
	st := waitState(t, c, "a missing candidate", func(st StateInfo) bool {
		var ce *CandidateError
		return errors.As(st.Err, &ce) && ce.Missing && ce.Generation == cg
	})
	if !strings.Contains(st.Err.Error(), "is missing") || c.Snapshot().Generation() != g1 {
		t.Fatalf("state %+v, serving %d: want the stable %d kept", st, c.Snapshot().Generation(), g1)
	}
	g3, _ := pub.publish(v2)
	if s := waitGen(t, c, g3, v2); s.Candidate() || g3 != cg+1 {
		t.Errorf("generation %d candidate %v after the rollout ended, want %d stable", g3, s.Candidate(), cg+1)
	}
}

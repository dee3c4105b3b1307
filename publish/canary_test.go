package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
)

// rootManifest reads and decodes the root's data.
func rootManifest(t *testing.T, conn *zk.Conn, root string) *manifest.Manifest {
	t.Helper()
	_, data := rootState(t, conn, root)
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCanaryStartPromote: a canary start leaves the root's items and
// stable manifest alone, announces the candidate in the root's data,
// stores the candidate manifest and the contents the stable set lacks,
// records history g-C; a plain publish is refused; promote publishes the
// candidate content as C+1 for everyone and removes the candidate node.
func TestCanaryStartPromote(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	root := "/canary/promote"
	paths := layout.New(root, layout.DefaultMeta)
	p := newPub(t, c, root)
	conn := p.conn()
	stable := items(3, 100, "a")
	mustPublish(t, p, Request{Items: stable})
	cand := clone(stable)
	cand["item-1"] = content(120, "b")
	cand["new"] = content(10, "n")
	sel := manifest.Selection{Selector: "zone=a"}
	res, err := p.Publish(ctx, Request{Items: cand, Canary: &sel, Message: "try b"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation != 2 {
		t.Fatalf("candidate generation %d, want 2", res.Generation)
	}
	checkLive(t, p, 1, stable) // the items did not move
	m := rootManifest(t, conn, root)
	if m.Generation != 1 || m.Canary == nil || m.Canary.Generation != 2 || m.Canary.Selector != "zone=a" {
		t.Fatalf("root manifest %+v canary %+v", m, m.Canary)
	}
	cdata, _, err := conn.Get(paths.Candidate())
	if err != nil {
		t.Fatal(err)
	}
	if manifest.ItemOf(cdata).SHA256 != m.Canary.ManifestSHA256 {
		t.Fatal("candidate node does not hold the announced manifest")
	}
	cm, err := manifest.Decode(cdata)
	if err != nil || cm.Generation != 2 || cm.Candidate == nil || cm.Candidate.Selector != "zone=a" {
		t.Fatalf("candidate manifest %+v: %v", cm, err)
	}
	kids, _, err := conn.Children(paths.Candidate())
	if err != nil || len(kids) != 2 {
		t.Fatalf("candidate contents %v: %v (want the 2 contents the stable set lacks)", kids, err)
	}
	for _, k := range kids {
		d, _, err := conn.Get(paths.CandidateContent(k))
		if err != nil || manifest.ItemOf(d).SHA256 != k {
			t.Fatalf("candidate content %s: %v", k, err)
		}
	}
	if got := historyList(t, conn, paths); len(got) != 2 || got[1] != 2 {
		t.Fatalf("history %v, want [1 2]", got)
	}
	// The candidate's content reads back from history (blobs stored).
	if _, got, err := p.Read(ctx, 2); err != nil || !sameItems(got, cand) {
		t.Fatalf("read candidate generation: %v", err)
	}

	// A plain publish, an edit and a second canary are refused.
	var rip *RolloutInProgressError
	if _, err := p.Publish(ctx, Request{Items: items(2, 10, "x")}); !errors.As(err, &rip) || !errors.Is(err, ErrRolloutInProgress) {
		t.Fatalf("plain publish during a rollout: %v", err)
	}
	if rip.Candidate != 2 || rip.Stable != 1 || rip.RolloutID != m.Canary.RolloutID || !strings.Contains(rip.Error(), rip.Publisher) {
		t.Fatalf("refusal %+v: %v", rip, rip)
	}
	if _, err := p.Edit(ctx, func(it map[string][]byte) error { it["z"] = []byte("z"); return nil }, Request{}); !errors.Is(err, ErrRolloutInProgress) {
		t.Fatalf("edit during a rollout: %v", err)
	}
	if _, err := p.Publish(ctx, Request{Items: cand, Canary: &manifest.Selection{Percent: 5}}); !errors.Is(err, ErrRolloutInProgress) {
		t.Fatalf("second canary: %v", err)
	}
	checkLive(t, p, 1, stable)

	// Promote with another rollout id: a conflict, nothing written.
	if _, err := p.Promote(ctx, "0123456789abcdef", Request{}); !errors.Is(err, ErrNoRollout) || !errors.Is(err, ErrConflict) {
		t.Fatalf("promote of another rollout: %v", err)
	}
	rs, err := p.Rollout(ctx)
	if err != nil || rs.Canary == nil || rs.Record == nil || rs.Record.RolloutID != m.Canary.RolloutID || rs.DriverAlive {
		t.Fatalf("rollout state %+v: %v", rs, err)
	}
	pres, err := p.Promote(ctx, m.Canary.RolloutID, Request{Message: "good"})
	if err != nil {
		t.Fatal(err)
	}
	if pres.Generation != 3 {
		t.Fatalf("promote generation %d, want 3", pres.Generation)
	}
	checkLive(t, p, 3, cand)
	m = rootManifest(t, conn, root)
	if m.Canary != nil || m.PromoteOf != 2 || m.Message != "good" {
		t.Fatalf("promoted manifest %+v", m)
	}
	if st, _, err := conn.Exists(paths.Candidate()); err != nil || st {
		t.Fatalf("candidate node still there after promote (%v)", err)
	}
	if _, err := p.Promote(ctx, m.PublishID, Request{}); !errors.Is(err, ErrNoRollout) {
		t.Fatalf("promote without a rollout: %v", err)
	}
	// History (newest first) shows the start and the promote.
	hist, err := p.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, h := range hist {
		switch {
		case h.Candidate != nil:
			kinds = append(kinds, "candidate:"+h.Candidate.Selector+":"+h.Message)
		case h.PromoteOf != 0:
			kinds = append(kinds, "promote")
		default:
			kinds = append(kinds, "plain")
		}
	}
	if strings.Join(kinds, " ") != "promote candidate:zone=a:try b plain" {
		t.Fatalf("history kinds %v", kinds)
	}
	rec, _, err := p.readRecord(ctx)
	if err != nil || rec == nil || len(rec.Events) != 2 || rec.Events[1].Kind != EventPromote {
		t.Fatalf("record %+v: %v", rec, err)
	}
	// A plain publish goes through now.
	mustPublish(t, p, Request{Items: stable})
}

// TestCanaryAbortWidenSupersede: widen only widens; abort publishes the
// stable content as C+1; a superseding publish ends a rollout; a
// superseding canary replaces the candidate above the old one.
func TestCanaryAbortWidenSupersede(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	root := "/canary/abort"
	paths := layout.New(root, layout.DefaultMeta)
	p := newPub(t, c, root)
	conn := p.conn()
	stable := items(2, 100, "a")
	mustPublish(t, p, Request{Items: stable})
	cand := items(2, 100, "b")
	if _, err := p.Publish(ctx, Request{Items: cand, Canary: &manifest.Selection{Percent: 10}}); err != nil {
		t.Fatal(err)
	}
	id := rootManifest(t, conn, root).Canary.RolloutID
	for _, bad := range []manifest.Selection{{Percent: 5}, {Selector: "zone=a", Percent: 50}} {
		if _, err := p.Widen(ctx, id, bad, ""); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("widen to %+v: %v", bad, err)
		}
	}
	if _, err := p.Widen(ctx, id, manifest.Selection{Percent: 50}, "more"); err != nil {
		t.Fatal(err)
	}
	if m := rootManifest(t, conn, root); m.Canary.Percent != 50 || m.Generation != 1 || m.Canary.Generation != 2 {
		t.Fatalf("after widen: %+v", m.Canary)
	}
	res, err := p.Abort(ctx, id, Request{Message: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation != 3 {
		t.Fatalf("abort generation %d", res.Generation)
	}
	checkLive(t, p, 3, stable)
	if m := rootManifest(t, conn, root); m.AbortOf != 2 || m.Canary != nil {
		t.Fatalf("aborted manifest %+v", m)
	}
	if st, _, _ := conn.Exists(paths.Candidate()); st {
		t.Fatal("candidate node left after abort")
	}

	// A new rollout, superseded by a canary, then by a plain publish.
	if _, err := p.Publish(ctx, Request{Items: cand, Canary: &manifest.Selection{Selector: "role=web"}}); err != nil {
		t.Fatal(err)
	}
	cand2 := items(2, 100, "c")
	r2, err := p.Publish(ctx, Request{Items: cand2, Canary: &manifest.Selection{Selector: "role=db"}, Supersede: true})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Generation != 5 {
		t.Fatalf("superseding canary generation %d, want 5 (above the superseded 4)", r2.Generation)
	}
	m := rootManifest(t, conn, root)
	if m.Canary.Generation != 5 || m.Canary.Selector != "role=db" || m.Generation != 3 {
		t.Fatalf("superseding canary: %+v", m.Canary)
	}
	kids, _, _ := conn.Children(paths.Candidate())
	if len(kids) != 2 {
		t.Fatalf("candidate contents after supersede %v, want only the new candidate's 2", kids)
	}
	if _, err := p.Publish(ctx, Request{Items: stable, Supersede: true}); err != nil {
		t.Fatal(err)
	}
	if m := rootManifest(t, conn, root); m.Canary != nil || m.Generation != 6 {
		t.Fatalf("after a superseding plain publish: %+v", m)
	}
	if st, _, _ := conn.Exists(paths.Candidate()); st {
		t.Fatal("candidate node left after a superseding publish")
	}
}

// TestCanaryRacingStarters: two starters on one stable generation, one
// wins, the other gets a conflict or the rollout refusal; exactly one
// rollout results.
func TestCanaryRacingStarters(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	root := "/canary/race"
	p1 := newPub(t, c, root)
	p2 := newPub(t, c, root)
	mustPublish(t, p1, Request{Items: items(2, 10, "a")})
	errs := make(chan error, 2)
	for i, p := range []*Publisher{p1, p2} {
		go func() {
			_, err := p.Publish(ctx, Request{Items: items(2, 10, string(rune('b'+i))), Canary: &manifest.Selection{Percent: 1}, ExpectGeneration: 1})
			errs <- err
		}()
	}
	won := 0
	for range 2 {
		err := <-errs
		switch {
		case err == nil:
			won++
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrRolloutInProgress):
		default:
			t.Fatalf("racing starter: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d starters won, want 1", won)
	}
}

// TestCanaryLeftoverAndACL: the candidate carries the root's ACL (an
// agent identity reads it) and the rollout record the history parent's (an
// agent cannot); a candidate node left without a canary in the root is
// removed by the next publish. (cmd/confpush/internal/access
// TestPublishOnInitTree checks the rollout's nodes against the policy.)
func TestCanaryLeftoverAndACL(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	const agentCreds = "web-17:web17-Secret-Pw-9fK2zq"
	conn, sess := dial(t, testSession, c.Addrs()...)
	root := "/canary/acl"
	paths := layout.New(root, layout.DefaultMeta)
	secureTree(t, conn, paths)
	p := mustNew(t, conn, sess, root)
	mustPublish(t, p, Request{Items: items(2, 10, "a")})
	if _, err := p.Publish(ctx, Request{Items: items(2, 10, "b"), Canary: &manifest.Selection{Selector: "zone=a"}}); err != nil {
		t.Fatal(err)
	}
	aconn, _ := dial(t, testSession, c.Addrs()...)
	if err := aconn.AddAuth("digest", []byte(agentCreds)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := aconn.Get(paths.Candidate()); err != nil {
		t.Fatalf("agent reads the candidate: %v", err)
	}
	kids, _, err := aconn.Children(paths.Candidate())
	if err != nil || len(kids) == 0 {
		t.Fatalf("agent lists the candidate: %v %v", kids, err)
	}
	if _, _, err := aconn.Get(paths.CandidateContent(kids[0])); err != nil {
		t.Fatalf("agent reads a candidate content: %v", err)
	}
	if _, _, err := aconn.Get(paths.Rollout()); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("agent reads the rollout record: %v, want no auth", err)
	}
	data, _, err := conn.Get(paths.Rollout())
	var rec RolloutRecord
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.Candidate != 3-1 || len(rec.Events) != 1 {
		t.Fatalf("record %s: %v", data, err)
	}

	// A publisher that died after ending the rollout: simulate by
	// removing the canary by hand, leaving the candidate node.
	m := rootManifest(t, conn, root)
	m.Canary = nil
	if _, err := conn.Set(root, m.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	if rs, err := p.Rollout(ctx); err != nil || !rs.Leftover {
		t.Fatalf("leftover not reported: %+v %v", rs, err)
	}
	mustPublish(t, p, Request{Items: items(3, 10, "c")})
	if st, _, _ := conn.Exists(paths.Candidate()); st {
		t.Fatal("leftover candidate node not removed by the next publish")
	}
}

// TestCanaryConnectionLossAroundCommit: a canary start whose connection
// is lost around its one transaction is resolved by the publish
// machinery: landed (found by its history entry g-C) or not (sent again
// under the same compare-and-swap); either way exactly one start lands.
func TestCanaryConnectionLossAroundCommit(t *testing.T) {
	c := startOwnZK(t)
	for _, landed := range []bool{false, true} {
		t.Run(map[bool]string{false: "NotLanded", true: "Landed"}[landed], func(t *testing.T) {
			r := newRig(t, c, 15*time.Second, true)
			root := "/cut/canary" + map[bool]string{false: "lost", true: "landed"}[landed]
			p, armed := r.cutPublisher(t, root, "canary", landed)
			mustPublish(t, p, Request{Items: items(3, 100, "base")})
			st0, _ := rootState(t, r.direct, root)
			cutDone := r.cutWhenCreated(p.paths.HistoryNode(2), landed)
			armed.Store(true)
			res, err := p.Publish(testCtx(t), Request{Items: items(3, 100, "cand"), Canary: &manifest.Selection{Percent: 10}})
			<-cutDone
			if err != nil {
				t.Fatalf("canary after a cut: %v", err)
			}
			if armed.Load() {
				t.Fatal("the fault was never injected")
			}
			if !res.Recovered || res.Generation != 2 {
				t.Fatalf("result %+v, want recovered generation 2", res)
			}
			st1, data := rootState(t, r.direct, root)
			m, err := manifest.Decode(data)
			if err != nil || m.Canary == nil || m.Canary.Generation != 2 || m.Generation != 1 {
				t.Fatalf("root after the start: %+v %v", m, err)
			}
			if st1.Version != st0.Version+1 {
				t.Fatalf("root version %d, want %d: the start landed more than once", st1.Version, st0.Version+1)
			}
			hd, _, err := r.direct.Get(p.paths.HistoryNode(2))
			if err != nil {
				t.Fatal(err)
			}
			if hm, err := manifest.Decode(hd); err != nil || hm.PublishID != res.PublishID || hm.Candidate == nil {
				t.Fatalf("history g-2 %+v: %v", hm, err)
			}
		})
	}
}

// TestCanaryTooLargeRefused: a candidate manifest too large for the start's
// one transaction (it travels twice, beside the root's data) is refused
// with the sizes, before anything is written; the same set publishes
// without --canary (marker mode when it must).
func TestCanaryTooLargeRefused(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	root := "/canary/large"
	paths := layout.New(root, layout.DefaultMeta)
	p := newPub(t, c, root, withMultiBudget(8<<10))
	conn := p.conn()
	// 30 names of one content: a manifest of about 3 KiB. A plain publish
	// carries it twice (root, history) and fits the 8 KiB budget; a canary
	// start carries it three times (the root's stable manifest, the
	// candidate node, history) and does not.
	same := func(v string) map[string][]byte {
		m := map[string][]byte{}
		for i := range 30 {
			m[fmt.Sprintf("item-%02d", i)] = []byte(v)
		}
		return m
	}
	mustPublish(t, p, Request{Items: same("a")})
	big := same("b")
	before := rootManifest(t, conn, root)
	_, err := p.Publish(ctx, Request{Items: big, Canary: &manifest.Selection{Selector: "zone=a"}})
	var in *InputError
	if !errors.As(err, &in) || !strings.Contains(err.Error(), "travels twice") || !strings.Contains(err.Error(), "8192-byte limit") {
		t.Fatalf("oversized canary: %v", err)
	}
	if after := rootManifest(t, conn, root); after.Canary != nil || after.Generation != before.Generation {
		t.Fatalf("a refused canary changed the root: %+v", after)
	}
	for _, n := range []string{paths.Candidate(), paths.Rollout(), paths.HistoryNode(2)} {
		if ok, _, err := conn.Exists(n); err != nil || ok {
			t.Fatalf("a refused canary created %s (%v)", n, err)
		}
	}
	if _, err := p.Publish(ctx, Request{Items: big}); err != nil {
		t.Fatalf("the same set without a canary: %v", err)
	}
}

package publish

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestPublishBasics covers the ordinary life of a root on one server:
// first publish, unchanged, force, changes, ExpectGeneration, dry run,
// foreign roots, modes.
func TestPublishBasics(t *testing.T) {
	c := startZK(t)

	t.Run("FirstPublishCreatesRootAndParents", func(t *testing.T) {
		p := newPub(t, c, "/apps/web/config")
		set := items(3, 100, "a")
		res := mustPublish(t, p, Request{Items: set})
		if res.Generation != 1 || res.Mode != "multi" || res.Unchanged || res.PublishID == "" || res.Zxid == 0 {
			t.Fatalf("first publish: %+v", res)
		}
		if len(res.Added) != 3 || len(res.Changed) != 0 || len(res.Removed) != 0 {
			t.Fatalf("diff of first publish: %+v", res)
		}
		checkLive(t, p, 1, set)
		st, _ := rootState(t, p.conn(), "/apps/web/config")
		if st.Mzxid != res.Zxid {
			t.Fatalf("Result.Zxid %d, root Mzxid %d", res.Zxid, st.Mzxid)
		}
		if h := historyList(t, p.conn(), p.paths); !slices.Equal(h, []int64{1}) {
			t.Fatalf("history %v", h)
		}
	})

	t.Run("UnchangedForceAndChanges", func(t *testing.T) {
		p := newPub(t, c, "/u")
		set := items(4, 50, "a")
		r1 := mustPublish(t, p, Request{Items: set})
		before, _ := rootState(t, p.conn(), "/u")
		r2 := mustPublish(t, p, Request{Items: clone(set)})
		after, _ := rootState(t, p.conn(), "/u")
		if !r2.Unchanged || r2.Generation != 1 || after.Version != before.Version {
			t.Fatalf("identical content must be a no-op: %+v (version %d -> %d)", r2, before.Version, after.Version)
		}
		if r2.Zxid != r1.Zxid {
			t.Fatalf("unchanged Zxid %d, want the live one %d", r2.Zxid, r1.Zxid)
		}
		r3 := mustPublish(t, p, Request{Items: clone(set), Force: true})
		if r3.Unchanged || r3.Generation != 2 || r3.Zxid <= r1.Zxid {
			t.Fatalf("forced publish: %+v", r3)
		}
		checkLive(t, p, 2, set)

		next := clone(set)
		next["item-00.conf"] = []byte("changed\n")
		delete(next, "item-01.conf")
		next["new.conf"] = []byte("new\n")
		r4 := mustPublish(t, p, Request{Items: next})
		if r4.Generation != 3 || !slices.Equal(r4.Added, []string{"new.conf"}) ||
			!slices.Equal(r4.Changed, []string{"item-00.conf"}) || !slices.Equal(r4.Removed, []string{"item-01.conf"}) {
			t.Fatalf("diff: %+v", r4)
		}
		checkLive(t, p, 3, next)
		// Unchanged items were not rewritten.
		_, st, err := p.conn().Get("/u/item-02.conf")
		if err != nil || st.Version != 0 {
			t.Fatalf("unchanged item rewritten: version %v, %v", st, err)
		}
	})

	t.Run("ExpectGeneration", func(t *testing.T) {
		p := newPub(t, c, "/eg")
		mustPublish(t, p, Request{Items: items(1, 10, "a")})
		mustPublish(t, p, Request{Items: items(1, 10, "b")})
		_, err := p.Publish(testCtx(t), Request{Items: items(1, 10, "c"), ExpectGeneration: 1})
		var ce *ConflictError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || ce.Expected != 1 || ce.Actual != 2 {
			t.Fatalf("want ConflictError{1,2}, got %v", err)
		}
		if r := mustPublish(t, p, Request{Items: items(1, 10, "c"), ExpectGeneration: 2}); r.Generation != 3 {
			t.Fatalf("publish with the right expectation: %+v", r)
		}
	})

	t.Run("DryRunWritesNothing", func(t *testing.T) {
		p := newPub(t, c, "/dry")
		res := mustPublish(t, p, Request{Items: items(2, 10, "a"), DryRun: true})
		if !res.DryRun || res.Generation != 1 || len(res.Added) != 2 {
			t.Fatalf("dry run of a first publish: %+v", res)
		}
		if st, _ := rootState(t, p.conn(), "/dry"); st != nil {
			t.Fatal("dry run created the root")
		}
		mustPublish(t, p, Request{Items: items(2, 10, "a")})
		snap := treeSnapshot(t, p.conn(), "/dry", p.paths.Base())
		res = mustPublish(t, p, Request{Items: items(3, 10, "b"), DryRun: true, Mode: manifest.ModeMarker})
		if !res.DryRun || res.Generation != 2 || res.Mode != "marker" || len(res.Added) != 1 || len(res.Changed) != 2 {
			t.Fatalf("dry run: %+v", res)
		}
		if after := treeSnapshot(t, p.conn(), "/dry", p.paths.Base()); !equalSnap(snap, after) {
			t.Fatalf("dry run wrote: before %v after %v", snap, after)
		}
	})

	t.Run("ForeignRootRefused", func(t *testing.T) {
		p := newPub(t, c, "/foreign")
		if _, err := p.conn().Create("/foreign", []byte("hello: world"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		snap := treeSnapshot(t, p.conn(), "/foreign", "/zkconf")
		_, err := p.Publish(testCtx(t), Request{Items: items(1, 10, "a")})
		if !errors.Is(err, manifest.ErrForeign) || !strings.Contains(err.Error(), "not a zkconf manifest") {
			t.Fatalf("want a foreign-root error, got %v", err)
		}
		if !equalSnap(snap, treeSnapshot(t, p.conn(), "/foreign", "/zkconf")) {
			t.Fatal("something was written")
		}
		// A root with children but no manifest is refused too.
		if _, err := p.conn().Create("/adopt", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.conn().Create("/adopt/x", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		q := newPub(t, c, "/adopt")
		if _, err := q.Publish(testCtx(t), Request{Items: items(1, 10, "a")}); err == nil || !strings.Contains(err.Error(), "no zkconf manifest") {
			t.Fatalf("want refusal of a root with foreign children, got %v", err)
		}
		// An existing empty root is adopted.
		if _, err := p.conn().Create("/empty", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		e := newPub(t, c, "/empty")
		if r := mustPublish(t, e, Request{Items: items(1, 10, "a")}); r.Generation != 1 {
			t.Fatalf("publish to an empty root: %+v", r)
		}
	})

	t.Run("ForcedModes", func(t *testing.T) {
		p := newPub(t, c, "/modes", withMultiBudget(8<<10))
		small := items(2, 100, "a")
		if r := mustPublish(t, p, Request{Items: small, Mode: manifest.ModeMarker}); r.Mode != "marker" || r.Generation != 1 {
			t.Fatalf("forced marker: %+v", r)
		}
		checkLive(t, p, 1, small)
		big := items(4, 4<<10, "b")
		snap := treeSnapshot(t, p.conn(), "/modes", p.paths.Base())
		_, err := p.Publish(testCtx(t), Request{Items: big, Mode: manifest.ModeMulti})
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.What != "transaction" || tl.Limit != 8<<10 || !strings.Contains(err.Error(), "marker") {
			t.Fatalf("forced multi over budget: %v", err)
		}
		if !equalSnap(snap, treeSnapshot(t, p.conn(), "/modes", p.paths.Base())) {
			t.Fatal("refused publish wrote")
		}
		if r := mustPublish(t, p, Request{Items: big}); r.Mode != "marker" || r.Generation != 2 {
			t.Fatalf("auto over budget: %+v", r)
		}
		checkLive(t, p, 2, big)
		if r := mustPublish(t, p, Request{Items: small}); r.Mode != "multi" || r.Generation != 3 {
			t.Fatalf("auto under budget: %+v", r)
		}
		checkLive(t, p, 3, small)
	})

	t.Run("EmptySet", func(t *testing.T) {
		p := newPub(t, c, "/emptyset")
		mustPublish(t, p, Request{Items: items(2, 10, "a")})
		if _, err := p.Publish(testCtx(t), Request{Items: map[string][]byte{}}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("empty set without AllowEmpty: %v", err)
		}
		r := mustPublish(t, p, Request{Items: map[string][]byte{}, AllowEmpty: true})
		if r.Generation != 2 || len(r.Removed) != 2 {
			t.Fatalf("empty publish: %+v", r)
		}
		checkLive(t, p, 2, map[string][]byte{})
	})

	t.Run("CurrentAndNotPublished", func(t *testing.T) {
		p := newPub(t, c, "/np")
		if _, _, err := p.Current(testCtx(t)); !errors.Is(err, ErrNotPublished) {
			t.Fatalf("Current of an absent root: %v", err)
		}
		if _, _, err := p.Read(testCtx(t), 0); !errors.Is(err, ErrNotPublished) {
			t.Fatalf("Read of an absent root: %v", err)
		}
		mustPublish(t, p, Request{Items: items(1, 10, "a")})
		m, st, err := p.Current(testCtx(t))
		if err != nil || m.Generation != 1 || st == nil || m.Publisher != "tester@test" {
			t.Fatalf("Current: %+v %v", m, err)
		}
	})

	t.Run("NewValidates", func(t *testing.T) {
		conn := c.Connect(t, testSession)
		for _, tc := range []struct {
			root string
			opts []Option
			want string
		}{
			{"config", nil, "absolute"},
			{"/", nil, "cannot be a config root"},
			{"/zkconf/x", nil, "contain one another"},
			{"/c", []Option{WithMeta("/c/meta")}, "contain one another"},
			{"/c", []Option{WithRetention(0)}, "retention"},
			{"/c", []Option{withMultiBudget(2 << 20)}, "multi budget"},
		} {
			if _, err := New(zkclient.Fixed(conn, nil), tc.root, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%q): %v, want %q", tc.root, err, tc.want)
			}
		}
	})
}

func equalSnap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

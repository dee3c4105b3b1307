package publish

import (
	"testing"

	"github.com/zkconf/zkconf/manifest"
)

// TestIncarnation: the first publish of a root creates an incarnation,
// every later publish and a rollback carry it, a root deleted and
// re-created with its history kept continues it, a legacy root (live
// manifest without one) gets one on its next publish, and a root with no
// manifest and no history (a wiped ZooKeeper) gets a new one.
func TestIncarnation(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/inc")
	r1 := mustPublish(t, p, Request{Items: items(2, 10, "a")})
	inc := r1.Manifest.Incarnation
	if !manifest.ValidIncarnation(inc) {
		t.Fatalf("first publish: incarnation %q", inc)
	}
	r2 := mustPublish(t, p, Request{Items: items(2, 10, "b")})
	rb, err := p.Rollback(testCtx(t), 1, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Manifest.Incarnation != inc || rb.Manifest.Incarnation != inc {
		t.Fatalf("incarnations %q, rollback %q, want %q carried", r2.Manifest.Incarnation, rb.Manifest.Incarnation, inc)
	}

	// Root (and items) deleted, history kept: generations and incarnation continue.
	for _, n := range []string{"/inc/item-00.conf", "/inc/item-01.conf", "/inc"} {
		if err := p.conn().Delete(n, -1); err != nil {
			t.Fatal(err)
		}
	}
	r4 := mustPublish(t, p, Request{Items: items(2, 10, "c")})
	if r4.Generation != 4 || r4.Manifest.Incarnation != inc {
		t.Fatalf("after re-creating the root: generation %d, incarnation %q, want 4 and %q", r4.Generation, r4.Manifest.Incarnation, inc)
	}

	// A legacy live manifest (written before incarnations): the next
	// publish gives the root one.
	legacy := *r4.Manifest
	legacy.Incarnation = ""
	if _, err := p.conn().Set("/inc", legacy.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	r5 := mustPublish(t, p, Request{Items: items(2, 10, "d")})
	if r5.Generation != 5 || !manifest.ValidIncarnation(r5.Manifest.Incarnation) || r5.Manifest.Incarnation == inc {
		t.Fatalf("legacy root: generation %d, incarnation %q", r5.Generation, r5.Manifest.Incarnation)
	}

	// Another root, never published: its own incarnation.
	other := mustPublish(t, newPub(t, c, "/other"), Request{Items: items(1, 10, "x")})
	if other.Manifest.Incarnation == inc || other.Manifest.Incarnation == r5.Manifest.Incarnation {
		t.Fatal("a new root reused an incarnation")
	}
}

package publish

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestPublishInheritsACLs: on a tree whose root and history parent carry
// the ACLs confpush init gives them (publisher ALL and an agent READ on
// the root, the publisher alone on the history parent), items and the
// marker get the root's ACL, history entries, blobs and liveness nodes the
// history parent's, in both modes. (cmd/confpush/internal/access
// TestPublishOnInitTree checks the same on a tree Init set up.)
func TestPublishInheritsACLs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	conn, sess := dial(t, testSession, c.Addrs()...)
	root := "/acl/pub"
	paths := layout.New(root, layout.DefaultMeta)
	itemACL, metaACL := secureTree(t, conn, paths)
	p := mustNew(t, conn, sess, root)
	mustPublish(t, p, Request{Items: items(3, 100, "a")})
	mustPublish(t, p, Request{Items: items(4, 100, "b"), Mode: manifest.ModeMarker})

	wantACL := func(path string, want []zk.ACL) {
		t.Helper()
		got, _, err := conn.GetACL(path)
		if err != nil || !aclmodel.SameACL(got, want) {
			t.Errorf("%s has ACL %v (%v), want %v", path, got, err, want)
		}
	}
	for n := range items(4, 100, "b") {
		wantACL(paths.Item(n), itemACL)
	}
	for _, g := range []int64{1, 2} {
		wantACL(paths.HistoryNode(g), metaACL)
	}
	blobs, _, err := conn.Children(paths.Blobs())
	if err != nil || len(blobs) == 0 {
		t.Fatalf("blobs %v: %v", blobs, err)
	}
	for _, b := range blobs {
		wantACL(paths.Blob(b), metaACL)
	}

	// While a marker-mode publish writes its items, its marker and its
	// liveness node exist: check their ACLs then.
	var live []string
	var listErr error
	p2 := mustNew(t, conn, sess, root, withMarkerWrite(func(int) error {
		live, _, listErr = conn.Children(paths.Publishing())
		if listErr == nil && len(live) == 1 {
			wantACL(paths.PublishingNode(live[0]), metaACL)
		}
		wantACL(paths.Marker(), itemACL)
		return errSimulatedCrash
	}))
	if _, err := p2.Publish(ctx, Request{Items: items(5, 100, "c"), Mode: manifest.ModeMarker}); !errors.Is(err, errSimulatedCrash) {
		t.Fatalf("publish: %v, want the simulated crash", err)
	}
	if listErr != nil || len(live) != 1 {
		t.Fatalf("publishing nodes during the publish %v: %v", live, listErr)
	}
	// The stopped publish leaves its marker, with its ACL.
	wantACL(paths.Marker(), itemACL)
}

// secureTree gives root and the history parent of paths the ACLs confpush
// init gives them, with conn authenticated as the publisher: the publisher
// may do everything, an agent identity may read the root.
func secureTree(t *testing.T, conn *zk.Conn, paths layout.Paths) (itemACL, metaACL []zk.ACL) {
	t.Helper()
	const pubUser, pubPass = "publisher", "Pu8l1sher-Pa55word-x7Q"
	if err := conn.AddAuth("digest", []byte(pubUser+":"+pubPass)); err != nil {
		t.Fatal(err)
	}
	metaACL = zk.DigestACL(zk.PermAll, pubUser, pubPass)
	itemACL = append(zk.DigestACL(zk.PermAll, pubUser, pubPass), zk.DigestACL(zk.PermRead, "web-17", "web17-Secret-Pw-9fK2zq")...)
	ctx := testCtx(t)
	if err := zkclient.EnsurePath(ctx, conn, paths.Root, itemACL); err != nil {
		t.Fatal(err)
	}
	if err := zkclient.EnsurePath(ctx, conn, paths.History(), metaACL); err != nil {
		t.Fatal(err)
	}
	return itemACL, metaACL
}

// TestPublishFollowsACLChanges: a Publisher reuses the ACLs it copied only
// while the root and the history parent keep the same ACL version, so an
// ACL changed (say by `confpush acl --repair`) or a root re-created between
// two publishes of one Publisher is what the next publish's new nodes get.
func TestPublishFollowsACLChanges(t *testing.T) {
	c := startZK(t)
	root := "/acl/follow"
	paths := layout.New(root, layout.DefaultMeta)
	p := newPub(t, c, root)
	conn := p.conn()
	mustPublish(t, p, Request{Items: items(1, 50, "a")})
	mustPublish(t, p, Request{Items: items(2, 50, "a")}) // the ACLs are now cached

	itemACL := append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.2"})
	metaACL := append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.3"})
	if _, err := conn.SetACL(paths.Root, itemACL, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.SetACL(paths.History(), metaACL, -1); err != nil {
		t.Fatal(err)
	}
	res := mustPublish(t, p, Request{Items: items(3, 50, "b")})
	check := func(path string, want []zk.ACL) {
		t.Helper()
		got, _, err := conn.GetACL(path)
		if err != nil || !aclmodel.SameACL(got, want) {
			t.Errorf("%s has ACL %v (%v), want %v", path, got, err, want)
		}
	}
	check(paths.Item("item-02.conf"), itemACL) // created by this publish
	check(paths.HistoryNode(res.Generation), metaACL)
}

// TestPublishPermissionDenied: a refusal by ZooKeeper's ACLs is a
// *zkclient.PermissionError naming the node and the permission, returned at
// once (never retried), and nothing is written.
func TestPublishPermissionDenied(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	// Every write request that names the root, as sent on the wire.
	var (
		mu     sync.Mutex
		writes int
	)
	p := mustNew(t, dialObserved(t, c.Addrs(), func(frame []byte) {
		if isWrite(frame) && bytes.Contains(frame, []byte("/denied/app")) {
			mu.Lock()
			writes++
			mu.Unlock()
		}
	}), nil, "/denied/app")
	mustPublish(t, p, Request{Items: items(2, 50, "a")})
	conn := p.conn()
	// Read and admin only: InheritedACLs can copy the ACL, the commit's
	// write of the root is refused.
	if _, err := conn.SetACL("/denied/app", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	before := treeSnapshot(t, conn, "/denied/app")
	for _, mode := range []manifest.Mode{manifest.ModeMulti, manifest.ModeMarker} {
		mu.Lock()
		writes = 0
		mu.Unlock()
		_, err := p.Publish(ctx, Request{Items: items(2, 50, "b"), Mode: mode})
		var pe *zkclient.PermissionError
		if !errors.As(err, &pe) || !errors.Is(err, zkclient.ErrPermission) {
			t.Fatalf("mode %v: err = %v, want a *zkclient.PermissionError", mode, err)
		}
		if pe.Path != "/denied/app" || pe.Perm != "WRITE" || !strings.Contains(err.Error(), "/denied/app") {
			t.Errorf("mode %v: %+v: want WRITE on /denied/app", mode, pe)
		}
		// Never retried: counted in requests sent, not in time taken.
		mu.Lock()
		if writes != 1 {
			t.Errorf("mode %v: %d write requests touching the root were sent, want exactly the one refused", mode, writes)
		}
		mu.Unlock()
	}
	if after := treeSnapshot(t, conn, "/denied/app"); !equalSnap(before, after) {
		t.Error("a refused publish changed the root's items")
	}
	// Admin only: reading the live set is refused, explained.
	if _, err := conn.SetACL("/denied/app", zk.WorldACL(zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.Read(ctx, 0)
	var pe *zkclient.PermissionError
	if !errors.As(err, &pe) || pe.Op != zkclient.OpRead || pe.Perm != "READ" {
		t.Fatalf("Read: %v, want a READ permission error", err)
	}
}

// isWrite reports whether a request frame is a write.
func isWrite(frame []byte) bool {
	if len(frame) < 12 {
		return false
	}
	switch binary.BigEndian.Uint32(frame[8:12]) {
	case 1, 2, 5, 7, 14, 15, 19, 21: // create, delete, setData, setACL, multi, create2, createContainer, createTTL
		return true
	}
	return false
}

package publish

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// TestAdopt: Request.Adopt publishes a root's first generation over a
// key tree another tool wrote (foreign root data included) by writing the
// root and the history only, leaving every node outside the set as it is;
// a set that is not what the nodes hold, a root with a manifest and a
// child named like the marker are refused, nothing written.
func TestAdopt(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/tree")
	conn := p.conn()
	acl := zk.WorldACL(zk.PermAll)
	for _, n := range []struct{ path, data string }{
		{"/tree", "legacy root data"}, {"/tree/db", ""}, {"/tree/db/host", "db1"}, {"/tree/db/port", "5432"},
		{"/tree/motd", "hi\n"}, {"/tree/keep", ""}, {"/tree/keep/..bin", "not an item"},
	} {
		if _, err := conn.Create(n.path, []byte(n.data), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	set := map[string][]byte{"db/host": []byte("db1"), "db/port": []byte("5432"), "motd": []byte("hi\n")}
	before := treeSnapshot(t, conn, "/tree", "/zkconf")

	// Not what the nodes hold: a conflict naming the path.
	wrong := clone(set)
	wrong["db/host"] = []byte("db2")
	wrong["new"] = []byte("x")
	_, err := p.Publish(testCtx(t), Request{Items: wrong, Adopt: true})
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "2 paths differ (db/host, new)") {
		t.Fatalf("want a conflict naming db/host and new, got %v", err)
	}
	if after := treeSnapshot(t, conn, "/tree", "/zkconf"); !equalSnap(before, after) {
		t.Fatal("a refused adoption wrote")
	}

	res := mustPublish(t, p, Request{Items: set, Adopt: true})
	if res.Generation != 1 || len(res.Added) != 3 {
		t.Fatalf("result %+v", res)
	}
	after := treeSnapshot(t, conn, "/tree")
	for path, v := range before {
		if strings.HasPrefix(path, "/tree/") && after[path] != v {
			t.Errorf("%s changed: %s -> %s", path, v, after[path])
		}
	}
	if len(after) != 7 {
		t.Errorf("nodes under /tree after: %v", after)
	}
	if m, got, err := p.Read(testCtx(t), 0); err != nil || m.Generation != 1 || !sameItems(got, set) {
		t.Fatalf("live set after the adoption: %v %v", got, err)
	}

	// A root with a manifest, and a child named like the marker.
	if _, err := p.Publish(testCtx(t), Request{Items: set, Adopt: true}); !errors.Is(err, ErrInvalidInput) ||
		!strings.Contains(err.Error(), "already holds a zkconf manifest (generation 1)") {
		t.Fatalf("adopting a published root: %v", err)
	}
	for _, n := range []string{"/marked", "/marked/" + manifest.MarkerName, "/marked/a"} {
		if _, err := conn.Create(n, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	before = treeSnapshot(t, conn, "/marked", "/zkconf")
	q := newPub(t, c, "/marked")
	if _, err := q.Publish(testCtx(t), Request{Items: map[string][]byte{"a": nil}, Adopt: true, AllowEmpty: true}); !errors.Is(err, ErrInvalidInput) ||
		!strings.Contains(err.Error(), `has a child "invalid", the name of zkconf's marker`) {
		t.Fatalf("adopting a root with a child named invalid: %v", err)
	}
	if after := treeSnapshot(t, conn, "/marked", "/zkconf"); !equalSnap(before, after) {
		t.Fatal("a refused adoption wrote")
	}
}

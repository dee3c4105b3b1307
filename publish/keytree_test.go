package publish

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// keyTree creates a key tree as confd's users write it (zkCli, kazoo)
// and returns the items import takes from it.
func keyTree(t *testing.T, conn *zk.Conn, root string) map[string]string {
	t.Helper()
	mk := func(p string, data []byte) {
		t.Helper()
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	mk(root, []byte("own data"))
	mk(root+"/database", nil)
	mk(root+"/database/host", []byte("db1"))
	mk(root+"/upstream", []byte("legacy")) // a directory with data of its own
	mk(root+"/upstream/addr", []byte("10.0.0.1:80\n"))
	mk(root+"/motd", []byte("Grüße\n"))
	mk(root+"/cert.der", []byte{0x30, 0x82, 0x00, 0xff, 0x00})
	mk(root+"/big", []byte(strings.Repeat("x", ItemLimit+1)))
	mk(root+"/..backup", []byte("old"))
	return map[string]string{"database/host": "db1", "upstream/addr": "10.0.0.1:80\n", "motd": "Grüße\n", "cert.der": "\x30\x82\x00\xff\x00"}
}

// TestReadKeyTree reads a confd tree: its keys become items, binary
// values are named, and what cannot be an item (a too-large value, a
// name no item can have, a directory's own data) is reported, not taken.
func TestReadKeyTree(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	conn, sess := dial(t, testSession, c.Addrs()...)
	want := keyTree(t, conn, "/app")
	tr, err := ReadKeyTree(ctx, zkclient.Fixed(conn, sess), "/app")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for n, v := range tr.Items {
		got[n] = string(v)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("items %q, want %q", got, want)
	}
	if !slices.Equal(tr.Binary, []string{"cert.der"}) || tr.RootData != len("own data") || tr.Reads != 1 || tr.Source != "/app" {
		t.Fatalf("tree %+v", tr)
	}
	var skipped []string
	for _, s := range tr.Skipped {
		skipped = append(skipped, s.Path)
	}
	if !slices.Equal(skipped, []string{"/app/..backup", "/app/big", "/app/upstream"}) {
		t.Fatalf("skipped %v", tr.Skipped)
	}
	if _, err := ReadKeyTree(ctx, zkclient.Fixed(conn, sess), "/nowhere"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("a missing source: %v, want zk.ErrNoNode", err)
	}
}

// TestReadKeyTreeSeesChange: a tree that changes between its read and the
// read of every node's version again is seen as changed (a value, a key
// added, a key deleted), so import never publishes a mix of two states.
func TestReadKeyTreeSeesChange(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	conn, _ := dial(t, testSession, c.Addrs()...)
	keyTree(t, conn, "/app")
	for _, change := range []struct {
		name string
		do   func() error
		want string
	}{
		{"value", func() error { _, err := conn.Set("/app/database/host", []byte("db2"), -1); return err }, "/app/database/host changed"},
		{"added", func() error {
			_, err := conn.Create("/app/database/user", []byte("u"), 0, zk.WorldACL(zk.PermAll))
			return err
		}, "/app/database changed"},
		{"deleted", func() error { return conn.Delete("/app/motd", -1) }, "/app changed"}, // its children first
	} {
		nodes, err := readNodes(ctx, conn, "/app")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := treeChanged(ctx, conn, "/app", nodes); err != nil || got != "" {
			t.Fatalf("%s: before the change: %q %v", change.name, got, err)
		}
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		if got, err := treeChanged(ctx, conn, "/app", nodes); err != nil || got != change.want {
			t.Errorf("%s: %q %v, want %q", change.name, got, err, change.want)
		}
	}
}

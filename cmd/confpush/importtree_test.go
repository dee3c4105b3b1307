package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
)

// confdTree creates a key tree as confd's users write it (zkCli, kazoo):
// three levels, values with newlines and UTF-8, a directory without data,
// a directory with data of its own, an empty key, a binary value, an
// oversized value and a name a set cannot hold.
func confdTree(t *testing.T, conn *zk.Conn, root string) map[string]string {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	mk := func(p string, data []byte) {
		t.Helper()
		if _, err := conn.Create(p, data, 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	mk(root, nil)
	mk(root+"/database", nil)
	mk(root+"/database/host", []byte("db1"))
	mk(root+"/database/port", []byte("5432"))
	mk(root+"/upstream", []byte("legacy")) // a directory with data of its own
	mk(root+"/upstream/app1", nil)
	mk(root+"/upstream/app1/addr", []byte("10.0.0.1:80\n10.0.0.2:80\n"))
	mk(root+"/motd", []byte("Grüße, 世界\nzweite Zeile\n"))
	mk(root+"/empty", nil) // a key with the empty value
	mk(root+"/cert.der", []byte{0x30, 0x82, 0x00, 0xff, 0x00})
	mk(root+"/big", []byte(strings.Repeat("x", publish.ItemLimit+1)))
	mk(root+"/..backup", []byte("old"))
	return map[string]string{
		"database/host": "db1", "database/port": "5432", "upstream/app1/addr": "10.0.0.1:80\n10.0.0.2:80\n",
		"motd": "Grüße, 世界\nzweite Zeile\n", "empty": "", "cert.der": "\x30\x82\x00\xff\x00",
	}
}

// TestImportTree: confpush import reads a confd-style key tree and
// publishes it as a root's first generation, in place (the commit writes
// the root's data and the history, no key: every node keeps its version)
// or as a copy under another root; what it cannot take is reported and
// left where it is; a dry run and every refusal write nothing.
func TestImportTree(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	want := confdTree(t, conn, "/myapp")
	meta := layout.New("/myapp", layout.DefaultMeta)
	before := snapshot(t, conn, "/myapp", layout.DefaultMeta)
	c := cli{t: t, zk: srv.ConnString(), root: "/myapp"}

	dry := c.run("import", "--from-tree", "/myapp", "--dry-run")
	t.Log(dry.stdout)
	dry.want(t, 0,
		"dry run: would import 6 keys of /myapp in place as generation 1",
		"+ database/host (3 bytes)", "+ upstream/app1/addr (24 bytes)", "+ empty (0 bytes)",
		"+ cert.der (5 bytes, not UTF-8 text)",
		"left out (3):",
		"/myapp/..backup: item name \"..backup\": names starting with \"..\" are reserved",
		"/myapp/big: its value is 1032193 bytes, more than an item's limit of 1032192",
		"/myapp/upstream: its own data (6 bytes): a node with children is a directory")
	if after := snapshot(t, conn, "/myapp", layout.DefaultMeta); after != before {
		t.Fatalf("the dry run wrote:\nbefore %s\nafter %s", before, after)
	}

	// A copy under another root: the keys as nested znodes, the tree left.
	cp := cli{t: t, zk: srv.ConnString(), root: "/copy/myapp"}
	files := t.TempDir()
	code, obj := cp.json("import", "--from-tree", "/myapp", "--out-dir", files)
	if code != 0 || obj["in_place"] != false || num(obj["generation"]) != 1 || len(strs(obj["items"])) != 6 {
		t.Fatalf("copy: exit %d %v", code, obj)
	}
	for p, v := range want {
		if data, _, err := conn.Get("/copy/myapp/" + p); err != nil || string(data) != v {
			t.Fatalf("copy: node %s: %q %v, want %q", p, data, err, v)
		}
	}
	for p, v := range want {
		if b, err := os.ReadFile(filepath.Join(files, p)); err != nil || string(b) != v {
			t.Fatalf("--out-dir: %s: %q %v, want %q", p, b, err, v)
		}
	}
	c.run("import", "--from-tree", "/myapp", "--dry-run", "--out-dir", files).want(t, 2, "--out-dir "+files+" is not empty")
	if after := snapshot(t, conn, "/myapp", meta.Base()); after != before {
		t.Fatalf("the copy changed the tree:\nbefore %s\nafter %s", before, after)
	}

	// In place.
	code, obj = c.json("import", "--from-tree", "/myapp", "-m", "from confd")
	if code != 0 || obj["in_place"] != true || num(obj["generation"]) != 1 || num(obj["format"]) != 2 {
		t.Fatalf("in place: exit %d %v", code, obj)
	}
	if got := strings.Join(strs(obj["binary"]), ","); got != "cert.der" {
		t.Errorf("binary %q, want cert.der", got)
	}
	skipped := obj["skipped"].([]any)
	if len(skipped) != 3 || skipped[0].(map[string]any)["path"] != "/myapp/..backup" {
		t.Errorf("skipped %v", skipped)
	}
	// Every key kept its node and version: only the root's data changed.
	after := snapshot(t, conn, "/myapp")
	if strings.SplitN(after, "\n", 2)[1] != strings.SplitN(before, "\n", 2)[1] {
		t.Fatalf("the import rewrote keys:\nbefore %s\nafter %s", before, after)
	}
	for p, v := range want {
		c.run("get", p).want(t, 0)
		if o := c.run("get", p); o.stdout != v {
			t.Errorf("get %s: %q, want %q", p, o.stdout, v)
		}
	}
	c.run("history").want(t, 0, "from confd")
	// What it could not take is still there, for confd.
	for _, p := range []string{"/myapp/..backup", "/myapp/big"} {
		if ok, _, err := conn.Exists(p); err != nil || !ok {
			t.Errorf("%s: %v %v, want it left in place", p, ok, err)
		}
	}
	// A publish after it keeps the unmanaged nodes and manages the rest.
	dir := writeFiles(t, t.TempDir(), map[string]string{"database/host": "db2", "database/port": "5432",
		"upstream/app1/addr": want["upstream/app1/addr"], "motd": want["motd"], "empty": "", "cert.der": want["cert.der"]})
	c.run("publish", dir).want(t, 0, "published generation 2", "~ database/host")
	if ok, _, _ := conn.Exists("/myapp/..backup"); !ok {
		t.Error("the next publish deleted an unmanaged node")
	}

	// Refusals, nothing written.
	before = snapshot(t, conn, "/myapp", "/copy", "/bad", "/lonely", layout.DefaultMeta)
	c.run("import", "--from-tree", "/myapp").want(t, 2, "root /myapp already holds a zkconf manifest (generation 2)")
	c.run("import", "--from-tree", "/nowhere").want(t, 2, "--from-tree /nowhere: no such node")
	c.run("import").want(t, 2, "--from-tree PATH is required")
	c.run("import", "--from-tree", "relative").want(t, 2, "--from-tree")
	c.run("import", "--from-tree", "/myapp/database").want(t, 2, "--from-tree /myapp/database and --root /myapp are nested: import in place")
	if after := snapshot(t, conn, "/myapp", "/copy", "/bad", "/lonely", layout.DefaultMeta); after != before {
		t.Fatalf("a refused import wrote:\nbefore %s\nafter %s", before, after)
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/bad", "/bad/invalid", "/bad/conf.json", "/bad/ok", "/lonely"} {
		data := map[string][]byte{"/bad/conf.json": []byte("{"), "/bad/ok": []byte("1"), "/bad/invalid": []byte("x")}[p]
		if _, err := conn.Create(p, data, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	before = snapshot(t, conn, "/myapp", "/copy", "/bad", "/lonely", layout.DefaultMeta)
	bad := cli{t: t, zk: srv.ConnString(), root: "/bad"}
	bad.run("import", "--from-tree", "/bad").want(t, 2, "conf.json", "nothing written")
	bad.run("import", "--from-tree", "/bad", "--no-validate").want(t, 2, `root /bad has a child "invalid", the name of zkconf's marker: rename that key`)
	cli{t: t, zk: srv.ConnString(), root: "/lonely"}.run("import", "--from-tree", "/lonely").want(t, 2, "/lonely holds no key to import")
	if after := snapshot(t, conn, "/myapp", "/copy", "/bad", "/lonely", layout.DefaultMeta); after != before {
		t.Fatalf("a refused import wrote:\nbefore %s\nafter %s", before, after)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestCLITamperedItem: an item changed with a plain ZooKeeper set is named
// by get and diff (exit 1, instead of answers from stored copies), and the
// next publish of the same set rewrites it and says so.
func TestCLITamperedItem(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/cli/tamper"}
	v1 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n", "b.conf": "two\n"})
	c.run("publish", v1).want(t, 0, "published generation 1")
	if _, err := conn.Set("/cli/tamper/a.conf", []byte("edited by hand\n"), -1); err != nil {
		t.Fatal(err)
	}
	msg := `item "a.conf" of /cli/tamper does not match the manifest of generation 1`
	c.run("get", "a.conf").want(t, 1, msg, "changed outside confpush")
	c.run("get").want(t, 1, msg)
	c.run("diff", v1).want(t, 1, msg)
	if code, obj := c.json("get", "b.conf"); code != 1 || obj["kind"] != "item_mismatch" {
		t.Fatalf("--json get of a tampered root: %d %v", code, obj)
	}
	c.run("publish", v1).want(t, 0, "published generation 2", "! a.conf did not match the manifest (changed outside confpush): rewritten")
	o := c.run("get", "a.conf")
	o.want(t, 0)
	if o.stdout != "one\n" {
		t.Fatalf("a.conf after the repair: %q", o.stdout)
	}
	c.run("diff", v1).want(t, 0, "no differences")
	c.run("publish", v1).want(t, 0, "unchanged at generation 2")
}

// TestCLIAbandonedMarker: a marker created by hand (no publisher behind
// it) is shown by status, and the next publish takes it over and says so
// (the old code refused it as a live publish).
func TestCLIAbandonedMarker(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/cli/abandoned"}
	v1 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})
	v2 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "two\n"})
	c.run("publish", v1).want(t, 0, "published generation 1")
	if _, err := conn.Create("/cli/abandoned/invalid", []byte("made by hand"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.run("status").want(t, 0, "marker: an abandoned marker", "not written by confpush", "the next `confpush publish` takes it over")
	code, obj := c.json("status")
	if m, _ := obj["marker"].(map[string]any); code != 0 || m["foreign"] != true || m["live"] != false {
		t.Fatalf("--json status with an abandoned marker: %d %v", code, obj)
	}
	c.run("publish", "--dry-run", v2).want(t, 0, "would take over an abandoned marker /cli/abandoned/invalid", "dry run: would publish generation 2")
	if ok, _, err := conn.Exists("/cli/abandoned/invalid"); err != nil || !ok {
		t.Fatalf("a dry run removed the marker (%v)", err)
	}
	c.run("publish", v2).want(t, 0, "took over an abandoned marker /cli/abandoned/invalid", "published generation 2")
	if o := c.run("status"); o.code != 0 || strings.Contains(o.stdout, "marker:") {
		t.Fatalf("status after the takeover: %+v", o)
	}
}

package main

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/internal/layout"
)

// TestCLIQuotas: what the operator sees of the bounds on agent
// identities. On an open root 'acl' says that nothing bounds it (exit 7,
// kind open_tree). On an initialized one, 'status' reports foreign
// registrations instead of listing them as gone agents, 'acl' flags them
// and --repair deletes them; a quota zkconf did not set on the root is an
// advisory, and a publish it refuses fails with the classified error
// (kind quota_exceeded). The old code listed every foreign registration
// as a gone agent, did not look at quotas, and printed "unknown error:
// -125".
func TestCLIQuotas(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)

	open := cli{t: t, zk: srv.ConnString(), root: "/quota/open"}
	pubFile := credFile(t, "publisher")
	open.run("--auth-file", pubFile, "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).
		want(t, 0, "published generation 1")
	open.run("--auth-file", pubFile, "acl", open.root).want(t, exitACL, "open tree", "no quota bounds what agents write",
		"every registered name is an expected agent", "confpush init")
	if code, obj := open.json("--auth-file", pubFile, "acl", open.root); code != exitACL || obj["kind"] != "open_tree" {
		t.Errorf("acl --json on an open root = %d %v", code, obj)
	}

	c := cli{t: t, zk: srv.ConnString(), root: "/quota/app"}
	paths := layout.New(c.root, layout.DefaultMeta)
	pubFile, _, _ = initACL(t, c)
	c.run("--auth-file", pubFile, "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).
		want(t, 0, "published generation 1")
	pub := connectAs(t, srv, "publisher")
	for i := range 7 {
		if _, err := pub.Create(paths.AgentNode(fmt.Sprintf("forged-%d", i)), []byte("{}"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c.run("--auth-file", pubFile, "status").want(t, 0, "2 agent(s)", "2 gone",
		"skipped: 7 foreign registration node(s), named after no agent identity of the policy: forged-0, forged-1, forged-2, forged-3, forged-4 and 2 more")
	code, obj := c.json("--auth-file", pubFile, "status")
	if sk, _ := obj["skipped"].(map[string]any); code != 0 || sk["count"] != float64(7) {
		t.Errorf("status --json skipped = %v (exit %d)", obj["skipped"], code)
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, exitACL, "registry node "+paths.AgentNode("forged-0"),
		`the policy has no agent identity "forged-0"`)
	c.run("--auth-file", pubFile, "acl", c.root, "--repair").want(t, 0, "delete")
	c.run("--auth-file", pubFile, "status").want(t, 0, "2 agent(s)")

	// Someone sets a quota on the root itself: two nodes.
	dir := access.QuotaRoot + c.root
	for _, n := range []string{access.QuotaRoot + "/quota", dir} {
		if _, err := pub.Create(n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pub.Multi(
		&zk.CreateRequest{Path: dir + "/zookeeper_limits", Data: []byte("count=-1,bytes=-1,countHardLimit=2,byteHardLimit=-1"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: dir + "/zookeeper_stats", Data: []byte("count=0,bytes=0"), Acl: zk.WorldACL(zk.PermAll)},
	); err != nil {
		t.Fatal(err)
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, 0, "advisory: quota "+dir+"/zookeeper_limits",
		"a quota zkconf does not set covers "+c.root)
	c.run("--auth-file", pubFile, "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n", "b.conf": "two\n"})).
		want(t, exitError, "quota exceeded: create on "+paths.Item("b.conf"))
	if code, obj := c.json("--auth-file", pubFile, "publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n", "c.conf": "3\n"})); code != exitError || obj["kind"] != "quota_exceeded" {
		t.Errorf("publish --json past a quota = %d %v", code, obj)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet/fleettest"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// runAgent runs a real agent in-process, rendering item a.conf, until the
// returned stop is called (also at the end of the test).
func runAgent(t *testing.T, servers, root, id string) (stop func()) {
	t.Helper()
	_, stop = fleettest.StartAgent(t, root, id, func(o *agent.Options) {
		o.ZK = zkclient.Config{Servers: strings.Split(servers, ","), SessionTimeout: 4 * time.Second}
		o.Targets[0].Item = "a.conf"
	})
	return stop
}

// TestCLIForgetGoneAgent: a stopped agent stays registered, shows as gone
// in 'status' and blocks 'status --wait-generation --all' (exit 5) until
// 'confpush forget' removes it; forgetting an unknown agent is a usage
// error that changes nothing; with nobody expected any more, the wait
// fails at once. On the old code the stopped agent simply vanished and the
// wait (0 of 0) ran to its deadline.
func TestCLIForgetGoneAgent(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/trust/app"}
	paths := layout.New(c.root, layout.DefaultMeta)
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "one\n"})).want(t, 0, "published generation 1")
	stop := runAgent(t, c.zk, c.root, "host-a")
	c.run("status", "--wait-generation", "1", "--min", "1").want(t, 0, "host-a")
	conn := srv.Connect(t, 10*time.Second)
	// The agent registers right after its first status write.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ok, _, err := conn.Exists(paths.AgentNode("host-a")); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("host-a never registered")
		}
	}
	stop()

	c.run("status").want(t, 0, "host-a", "gone", "last seen", "1 gone")
	c.run("status", "--wait-generation", "1", "--all", "--timeout", "2s").want(t, exitRollout, "host-a gone")

	c.run("forget", "host-a", "nobody").want(t, exitUsage, "not registered", "nobody", "nothing forgotten")
	if ok, _, _ := conn.Exists(paths.AgentNode("host-a")); !ok {
		t.Fatal("a refused forget deleted host-a's registration")
	}
	code, obj := c.json("forget", "host-a")
	if code != 0 || strings.Join(strs(obj["forgotten"]), ",") != "host-a" {
		t.Fatalf("forget --json = %d %v", code, obj)
	}
	c.run("status").want(t, 0, "0 agent(s)")
	c.run("status", "--wait-generation", "1", "--all").want(t, exitRollout, "no agent is expected")
}

// TestCLIACLUntrustedStatusNode: web-17 creates web-18's status node with
// an ACL only web-17 may read. 'confpush acl' flags it as a difference
// (exit 7; the old code printed an advisory and "ACLs match the policy"),
// 'status' shows web-18 gone with its node untrusted, and 'acl --repair'
// deletes it.
func TestCLIACLUntrustedStatusNode(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/trust/acl"}
	paths := layout.New(c.root, layout.DefaultMeta)
	pubFile, _, _ := initACL(t, c)
	web17 := connectAs(t, srv, "web-17")
	if _, err := web17.Create(paths.StatusNode("web-18"), []byte(`{"agent_id":"web-18","generation":1}`),
		zk.FlagEphemeral, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, exitACL, "status node "+paths.StatusNode("web-18"), "untrusted", "unreadable")
	c.run("--auth-file", pubFile, "status").want(t, 0, "web-18", "gone", "untrusted")
	c.run("--auth-file", pubFile, "acl", c.root, "--repair").want(t, 0, "delete")
	if ok, _, _ := web17.Exists(paths.StatusNode("web-18")); ok {
		t.Fatal("the unreadable status node survived acl --repair")
	}
}

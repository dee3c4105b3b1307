package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// TestAdoptAfterWipe: the confagent binary with incarnation: refuse, its
// ZooKeeper wiped and published anew, keeps its files and reports the
// refused incarnation in its status node; `confagent adopt` (what an
// operator runs next to the systemd service) makes it follow.
func TestAdoptAfterWipe(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	e := newEnvOwnServer(t)
	e.writeConfig(t, "incarnation: refuse\n")
	e.c.BumpZxid(t, 200)
	for g := 1; g <= 3; g++ {
		e.publish(t, set(g, 3))
	}
	p := e.start(t)
	old := e.waitApplied(t, "agent-under-test", 3)

	e.c.Wipe(0)
	zc, sess, err := zkclient.DialConn(zkclient.Config{Servers: e.c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	e.pub, err = publish.New(zkclient.Fixed(zc, sess), testRoot)
	if err != nil {
		t.Fatal(err)
	}
	for g := 1; g <= 4; g++ {
		e.publish(t, set(10+g, 3))
	}
	st := e.waitStatus(t, "agent-under-test", func(s agent.Status) bool { return s.IncarnationRefused != "" })
	if st.Generation != 3 || st.Incarnation != old.Incarnation || st.Ready {
		t.Fatalf("refusing agent: %+v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(e.out, "d", "item00")); !strings.HasPrefix(string(b), "gen=3 ") {
		t.Fatalf("files changed while refusing: %q", b)
	}

	var out, errb bytes.Buffer
	if code := run([]string{"adopt", "--config", e.cfgPath, "--incarnation", "NOT-HEX"}, &out, &errb); code != exitError ||
		!strings.Contains(errb.String(), "not an incarnation id") {
		t.Fatalf("adopt with a bad id: exit %d, %s", code, errb.String())
	}
	if code := run([]string{"adopt", "--config", e.cfgPath}, &out, &errb); code != exitOK {
		t.Fatalf("adopt: exit %d: %s", code, errb.String())
	}
	st = e.waitStatus(t, "agent-under-test", func(s agent.Status) bool {
		return s.Generation == 4 && s.Incarnation == st.IncarnationRefused && s.IncarnationRefused == ""
	})
	if b, _ := os.ReadFile(filepath.Join(e.out, "d", "item00")); !strings.HasPrefix(string(b), "gen=14 ") {
		t.Fatalf("files after adopt: %q", b)
	}
	p.waitLog(t, "adopt requested by an operator")
}

package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
)

// A ZooKeeper wiped and restarted on the same address: its
// zxids start over, so it refuses the session of a client that has seen a
// newer one, and the root published on it again starts a new incarnation
// whose generations start over too.

// wipeFixture publishes generations 1..3 of one incarnation, and makes the
// clients' last zxid stay above what the wiped server reaches during the
// test (so that it keeps refusing them, as a wiped production server does).
type wipeFixture struct {
	zk     *zktest.Cluster
	oldInc string
}

func newWipeFixture(t *testing.T) *wipeFixture {
	t.Helper()
	t.Parallel() // a server of its own (sharedZooKeeper)
	c := zktest.Start(t)
	c.BumpZxid(t, 200) // the old history's zxids stay above the wiped server's
	p := publisher(t, c)
	res := mustPublish(t, p, map[string]string{"app.conf": "old 1"})
	mustPublish(t, p, map[string]string{"app.conf": "old 2"})
	mustPublish(t, p, map[string]string{"app.conf": "old 3"})
	return &wipeFixture{zk: c, oldInc: res.Manifest.Incarnation}
}

// wipeAndRepublish wipes the server, then publishes 4 generations on it as
// an operator would (a fresh confpush), returning the new incarnation.
func (w *wipeFixture) wipeAndRepublish(t *testing.T) string {
	t.Helper()
	w.zk.Wipe(0)
	p := publisher(t, w.zk)
	var inc string
	for i := 1; i <= 4; i++ {
		res := mustPublish(t, p, map[string]string{"app.conf": fmt.Sprintf("new %d", i)})
		inc = res.Manifest.Incarnation
	}
	if inc == "" || inc == w.oldInc {
		t.Fatalf("the republished root's incarnation %q (old %q)", inc, w.oldInc)
	}
	return inc
}

// pollStatus polls the daemon's status until ok (generous deadline: the
// condition is reached through reconnects and ZooKeeper round trips).
func pollStatus(t *testing.T, r *running, what string, ok func(agent.Status) bool) agent.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		s := r.d.Status()
		if ok(s) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent never %s; status %+v", what, s)
		case <-r.statuses:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// statusNode reads the agent's status node (zero while it does not exist:
// the agent re-creates it on its new session).
func statusNode(t *testing.T, conn *zk.Conn) fleet.Status {
	t.Helper()
	var s fleet.Status
	b, _, err := conn.Get(layout.New(root, layout.DefaultMeta).StatusNode("test-agent"))
	if errors.Is(err, zk.ErrNoNode) {
		return s
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func metric(t *testing.T, d *agent.Daemon, name string) float64 {
	t.Helper()
	v, ok := d.Metrics().Value(name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

// (a) A running agent reconnects to the wiped server (a fresh client: the
// old one is refused forever), follows the new incarnation to its
// generation 4 although it held generation 3 of the old one, and reports
// the switch (status, status node, metrics).
func TestAgentFollowsWipedZooKeeper(t *testing.T) {
	w := newWipeFixture(t)
	dest := t.TempDir()
	r := startDaemon(t, w.zk.Addrs(), t.TempDir(), []agent.TargetSpec{dirSpec(dest)})
	r.waitGeneration(t, 3)

	newInc := w.wipeAndRepublish(t)
	s := pollStatus(t, r, "applied generation 4 of the new incarnation", func(s agent.Status) bool {
		return s.Generation == 4 && s.Incarnation == newInc
	})
	if got := readFile(t, join(dest, "app.conf")); got != "new 4" {
		t.Fatalf("app.conf = %q", got)
	}
	if s.IncarnationSwitches != 1 || s.SessionsReplaced < 1 || !s.Ready {
		t.Fatalf("status %+v: want 1 switch, a replaced session, ready", s)
	}
	if v := metric(t, r.d, "zkconf_agent_incarnation_switches_total"); v != 1 {
		t.Fatalf("switch metric %v", v)
	}
	if v := metric(t, r.d, "zkconf_agent_zookeeper_sessions_replaced_total"); v < 1 {
		t.Fatalf("sessions replaced metric %v", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := w.zk.Connect(t, 4*time.Second)
	for {
		if n := statusNode(t, conn); n.Generation == 4 && n.Incarnation == newInc && n.IncarnationSwitches == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("status node never showed the switch: %+v", statusNode(t, conn))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// (b) An agent restarted after the wipe (its state file holds generation 3
// of the old incarnation) follows the new incarnation's generation 4.
func TestAgentRestartedAfterWipeFollowsNewIncarnation(t *testing.T) {
	w := newWipeFixture(t)
	dest, state := t.TempDir(), t.TempDir()
	r := startDaemon(t, w.zk.Addrs(), state, []agent.TargetSpec{dirSpec(dest)})
	r.waitGeneration(t, 3)
	r.stop()

	newInc := w.wipeAndRepublish(t)
	r = startDaemon(t, w.zk.Addrs(), state, []agent.TargetSpec{dirSpec(dest)})
	pollStatus(t, r, "applied generation 4 of the new incarnation", func(s agent.Status) bool {
		return s.Generation == 4 && s.Incarnation == newInc && s.IncarnationSwitches == 1
	})
	if got := readFile(t, join(dest, "app.conf")); got != "new 4" {
		t.Fatalf("app.conf = %q", got)
	}
}

// (c) With incarnation: refuse the agent keeps the old files, says so in
// /readyz, /status and its status node, and follows once adopted.
func TestAgentRefusesNewIncarnationUntilAdopted(t *testing.T) {
	w := newWipeFixture(t)
	dest, state := t.TempDir(), t.TempDir()
	r := startDaemon(t, w.zk.Addrs(), state, []agent.TargetSpec{dirSpec(dest)},
		func(o *agent.Options) { o.Incarnation = cache.IncarnationRefuse })
	r.waitGeneration(t, 3)

	newInc := w.wipeAndRepublish(t)
	s := pollStatus(t, r, "refused the new incarnation", func(s agent.Status) bool { return s.IncarnationRefused == newInc })
	if s.Ready || !strings.Contains(s.NotReadyReason, "refusing the root's new incarnation "+newInc) {
		t.Fatalf("readiness %v %q", s.Ready, s.NotReadyReason)
	}
	if s.Generation != 3 || s.Incarnation != w.oldInc || readFile(t, join(dest, "app.conf")) != "old 3" {
		t.Fatalf("not serving the old generation 3: %+v", s)
	}
	if v := metric(t, r.d, "zkconf_agent_incarnation_refused"); v != 1 {
		t.Fatalf("refused metric %v", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := w.zk.Connect(t, 4*time.Second)
	for statusNode(t, conn).IncarnationRefused != newInc {
		select {
		case <-ctx.Done():
			t.Fatalf("status node never showed the refusal: %+v", statusNode(t, conn))
		case <-time.After(200 * time.Millisecond):
		}
	}

	if err := agent.WriteAdopt(state, ""); err != nil {
		t.Fatal(err)
	}
	pollStatus(t, r, "followed the adopted incarnation", func(s agent.Status) bool {
		return s.Generation == 4 && s.Incarnation == newInc && s.IncarnationRefused == "" && s.Ready
	})
	if got := readFile(t, join(dest, "app.conf")); got != "new 4" {
		t.Fatalf("app.conf = %q", got)
	}
}

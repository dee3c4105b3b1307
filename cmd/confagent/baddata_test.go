package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
)

// TestAgentTamperedItemAndAbandonedMarker: an agent that cannot read a
// consistent root says why, naming the item (never its content), in its
// log and its status node; and the next publish unblocks it.
//   - An item changed with a plain ZooKeeper set: the agent reports that
//     the item does not match the manifest; publishing the same set again
//     repairs the item and the agent applies it.
//   - A marker created by hand over a tampered root: the agent reports the
//     abandoned marker; the next publish takes it over and the agent
//     applies it (the old code waited for the marker forever).
func TestAgentTamperedItemAndAbandonedMarker(t *testing.T) {
	const tampered = "EDITED-BY-HAND-77"
	e := newEnv(t)
	raw := e.c.Connect(t, 4*time.Second)
	items := set(1, 3)
	e.publish(t, items)
	if _, err := raw.Set(testRoot+"/item01", []byte(tampered), -1); err != nil {
		t.Fatal(err)
	}
	p := e.start(t)
	st := e.waitStatus(t, "agent-under-test", func(st agent.Status) bool {
		return strings.Contains(st.NotReadyReason, `item "item01" does not match the manifest of generation 1`)
	})
	p.waitLog(t, `item \"item01\" does not match the manifest of generation 1`)
	g2 := e.publish(t, items) // the same set: repairs item01
	e.waitApplied(t, "agent-under-test", g2)
	if got, err := os.ReadFile(filepath.Join(e.out, "d", "item01")); err != nil || string(got) != string(items["item01"]) {
		t.Fatalf("item01 after the repair: %q, %v", got, err)
	}

	// A fresh agent, a hand-made marker and a tampered item.
	p.kill()
	if err := os.RemoveAll(filepath.Join(e.dir, "state")); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Set(testRoot+"/item02", []byte(tampered), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(testRoot+"/invalid", []byte("made by hand"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p = e.start(t)
	st = e.waitStatus(t, "agent-under-test", func(st agent.Status) bool {
		return strings.Contains(st.NotReadyReason, "abandoned marker /config/invalid")
	})
	if !strings.Contains(st.NotReadyReason, `item "item02"`) || !strings.Contains(st.NotReadyReason, "next confpush publish takes the marker over") {
		t.Errorf("status node reason: %q", st.NotReadyReason)
	}
	p.waitLog(t, "abandoned marker")
	g3 := e.publish(t, set(3, 3))
	e.waitApplied(t, "agent-under-test", g3)
	if n := e.checkOutputs(t, 3); n != 3 {
		t.Fatalf("outputs at generation %d, want 3", n)
	}
	if strings.Contains(p.log(), tampered) {
		t.Fatalf("item content reached the agent's log:\n%s", p.log())
	}
}

// TestCheckConfigProtectedDest: check-config (and so start-up) refuses a
// target that would let a publisher replace the agent's own configuration
// (here a dir target over the configuration's directory) or state, every
// such target at once.
func TestCheckConfigProtectedDest(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	yaml := `zookeeper: {servers: [zk1:2181]}
state_dir: ` + filepath.Join(dir, "state") + `
targets:
  - {name: all, type: dir, dest: ` + dir + `}
  - {name: self, type: file, item: x, dest: ` + cfg + `}
  - {name: state, type: file, item: x, dest: ` + filepath.Join(dir, "state", "snapshot.state") + `}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check-config", "--config", cfg}, &out, &errb); code != exitConfig {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitConfig, out.String(), errb.String())
	}
	for _, want := range []string{
		"targets[0].dest: directory " + dir + " contains",
		"targets[1].dest: " + cfg + " is or is inside the configuration file",
		"targets[2].dest: " + filepath.Join(dir, "state", "snapshot.state") + " is inside state_dir",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("check-config does not report %q:\n%s", want, errb.String())
		}
	}
}

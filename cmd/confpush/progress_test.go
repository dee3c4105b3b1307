package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/syncbuf"
)

// TestWaitProgressNamesAgents: the --wait progress names the failing and
// pending agents (at most five per group, then "and N more") and ends
// with a summary line.
func TestWaitProgressNamesAgents(t *testing.T) {
	const root = "/progress/app"
	c, nodes := fleetFixture(t, root, 2)
	at := func(id string, g int64, lastErr string) fleet.Status {
		return fleet.Status{AgentID: id, Root: root, Generation: g, CacheGeneration: 2, Attempted: g, State: "live",
			Since: time.Now(), AppliedAt: time.Now(), LastError: lastErr}
	}
	nodes.put(at("web-0", 2, ""))
	bad := at("web-bad", 1, "render a.conf: template: bad")
	bad.Attempted = 2
	nodes.put(bad)
	for i := 1; i <= 7; i++ {
		nodes.put(at(fmt.Sprintf("web-p%d", i), 1, ""))
	}

	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--zk", c.zk, "--root", root, "--timeout", "120s", "status", "--wait-generation", "2"}, &out, &errb)
	}()
	poll(t, "progress named the failing and pending agents", func() (bool, string) {
		return strings.Contains(errb.String(), "generation 2: 1/9 applied, 1 failing (web-bad), 7 pending (web-p1, web-p2, web-p3, web-p4, web-p5 and 2 more)"), errb.String()
	})
	for i := 1; i <= 6; i++ {
		nodes.put(at(fmt.Sprintf("web-p%d", i), 2, ""))
	}
	// web-p7 stays behind until the display shows it alone.
	poll(t, "progress named the last pending agent", func() (bool, string) {
		return strings.Contains(errb.String(), "7/9 applied, 1 failing (web-bad), 1 pending (web-p7)"), errb.String()
	})
	nodes.put(at("web-p7", 2, ""))
	select {
	case code := <-done:
		if code != exitRollout {
			t.Fatalf("exit %d, want %d (web-bad rejected the generation)\n%s", code, exitRollout, errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the wait did not end once no agent was pending:\n%s", errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	var summary string
	for _, l := range lines {
		if strings.HasPrefix(l, "generation 2: 8 applied, 1 failing (web-bad) after ") {
			summary = l
		}
	}
	if summary == "" {
		t.Fatalf("no summary line:\n%s", errb.String())
	}
}

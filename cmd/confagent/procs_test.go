package main

import (
	"regexp"
	"testing"
)

// TestConfagentOneProcessor: a real confagent runs its Go runtime on one
// processor (agentProcs) unless GOMAXPROCS is in its environment, which
// it then leaves to the runtime.
func TestConfagentOneProcessor(t *testing.T) {
	for _, c := range []struct{ env, want string }{{"", "1"}, {"2", "2"}} {
		t.Run("GOMAXPROCS="+c.env, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", c.env) // the agent inherits it
			e := newEnv(t)
			p := e.start(t)
			p.waitLog(t, "confagent starting")
			m := regexp.MustCompile(`"confagent starting".* gomaxprocs=(\d+)`).FindStringSubmatch(p.log())
			if m == nil {
				t.Fatalf("no gomaxprocs in the start line:\n%s", p.log())
			}
			if m[1] != c.want {
				t.Fatalf("confagent runs with GOMAXPROCS %s, want %s", m[1], c.want)
			}
		})
	}
}

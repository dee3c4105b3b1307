package config

import (
	"testing"

	"github.com/zkconf/zkconf/agent"
)

// TestValuesAreTheAgents: the apply modes and memory limit settings this
// package decodes (its own, so that confpush, which reads agent
// configurations, does not link package agent) are the values confagent
// hands package agent.
func TestValuesAreTheAgents(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want string
	}{
		{"ApplyAll", string(ApplyAll), string(agent.ApplyAll)},
		{"ApplyIndependent", string(ApplyIndependent), string(agent.ApplyIndependent)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, agent's is %q", c.name, c.got, c.want)
		}
	}
	if MemoryLimitOff != agent.MemoryLimitOff || MemoryLimitAuto != agent.MemoryLimitAuto {
		t.Errorf("MemoryLimitOff, MemoryLimitAuto = %d, %d; agent's are %d, %d",
			MemoryLimitOff, MemoryLimitAuto, agent.MemoryLimitOff, agent.MemoryLimitAuto)
	}
}

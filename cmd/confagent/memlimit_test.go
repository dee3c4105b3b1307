package main

import (
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/agent/config"
)

// TestMemoryLimitOption: memory_limit's default (auto) reaches the daemon
// as auto, although the agent package's zero value is off.
func TestMemoryLimitOption(t *testing.T) {
	for in, want := range map[int64]int64{
		config.MemoryLimitAuto: agent.MemoryLimitAuto,
		config.MemoryLimitOff:  agent.MemoryLimitOff,
		64 << 20:               64 << 20,
	} {
		if got := memoryLimit(in); got != want {
			t.Errorf("memoryLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

package main

import (
	"testing"

	"github.com/zkconf/zkconf/internal/fieldcheck"
	"github.com/zkconf/zkconf/internal/targets"
)

// TestAgentSpecsCopyEveryField: agentSpecs carries every field of the
// configuration's target specs (and of their Confd) to the agent's, so
// that a field added to one and not copied fails here rather than leave
// the daemon rendering differently from confagent render.
func TestAgentSpecsCopyEveryField(t *testing.T) {
	var s targets.Spec
	fieldcheck.Fill(t, &s)
	fieldcheck.Same(t, s, agentSpecs([]targets.Spec{s})[0])
}

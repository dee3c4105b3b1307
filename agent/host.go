package agent

import (
	"maps"

	"github.com/zkconf/zkconf/internal/targets"
	"github.com/zkconf/zkconf/internal/template"
)

// localHost returns the facts template targets see about this host: its
// name and its environment. Labels come from the daemon (setLabels).
func localHost() template.Host { return targets.LocalHost() }

// setLabels makes labels what the label and labels helpers report.
func (r *Renderer) setLabels(labels map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.host.Labels = maps.Clone(labels)
}

// hostFacts returns a target's host facts; a target compiled outside a
// Renderer has none.
func (t *target) hostFacts() template.Host {
	if t.host == nil {
		return template.Host{}
	}
	return *t.host
}

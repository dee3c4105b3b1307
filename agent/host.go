package agent

import (
	"maps"
	"os"

	"github.com/zkconf/zkconf/internal/template"
)

// localHost returns the facts template targets see about this host: its
// name and its environment. Labels come from the daemon (setLabels).
func localHost() template.Host {
	h, _ := os.Hostname()
	return template.Host{Hostname: h, LookupEnv: os.LookupEnv}
}

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

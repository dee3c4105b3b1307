package agent

import (
	"os"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/targets"
	"github.com/zkconf/zkconf/manifest"
)

// HostnameLabel is the label every agent reports with its hostname, unless
// the configuration sets it.
const HostnameLabel = targets.HostnameLabel

// labels are the configured labels plus the hostname.
func (d *Daemon) labels(opts Options) map[string]string {
	return HostLabels(opts.Labels)
}

// registration is what the agent writes into its registry node (the
// status node goroutine adds first_seen and last_seen).
func (d *Daemon) registration() fleet.Registration {
	d.mu.Lock()
	opts := d.opts
	d.mu.Unlock()
	h, _ := os.Hostname()
	return fleet.Registration{LastSeen: time.Now().UTC(), Labels: d.labels(opts), Hostname: h,
		Version: opts.Version, MaxFormat: manifest.MaxFormat}
}

// onConflict records that the status node cannot be written (reason) or
// can again (""), for /readyz, /status and the metric, and republishes
// the status so that the node written after a conflict says so.
func (d *Daemon) onConflict(reason string) {
	d.mu.Lock()
	d.conflict = reason
	d.mu.Unlock()
	d.metrics.setStatusConflict(reason != "")
	if reason == "" {
		d.publishStatus()
	}
}

func (d *Daemon) statusConflict() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conflict
}

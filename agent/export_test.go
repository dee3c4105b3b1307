package agent

import (
	"time"

	"github.com/zkconf/zkconf/cache"
)

// SetWedgeTimings sets how long a render may run past its time budget
// before it counts as wedged, and how long a stopping daemon waits for a
// render in progress: seconds in production, milliseconds in tests. Call
// it before Run.
func (d *Daemon) SetWedgeTimings(wedgeGrace, shutdownGrace time.Duration) {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	d.r.wedgeGrace, d.shutdownGrace = wedgeGrace, shutdownGrace
}

// SetLookupEnv replaces what the env template helper reads (os.LookupEnv):
// a test's hook into a render, which can block there as a helper call
// that never returns would. Call it before Run.
func (d *Daemon) SetLookupEnv(f func(string) (string, bool)) {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	d.r.host.LookupEnv = f
}

// DriftDirs returns the directories the drift watcher is made to watch.
func (d *Daemon) DriftDirs() []string { return d.r.driftDirs() }

// Specs is specs.
func (r *Renderer) Specs() []TargetSpec { return r.specs() }

// Configure is configure: replaces the targets of a renderer.
func (r *Renderer) Configure(specs []TargetSpec, mode ApplyMode) error {
	return r.configure(specs, mode)
}

// NewLiveRootsSnapshot is newRootsSnapshot: what a daemon on several roots
// hands its renderer (each root's latest snapshot, and the last cut).
func NewLiveRootsSnapshot(names []string, latest map[string]*cache.Snapshot, cut cache.Cut) Snapshot {
	return newRootsSnapshot(names, latest, cut)
}

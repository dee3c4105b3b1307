package agent

import "time"

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

// Specs returns every target's spec (destination, kind, options); it waits
// for an apply in progress.
func (r *Renderer) Specs() []TargetSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TargetSpec, len(r.targets))
	for i, t := range r.targets {
		out[i] = t.spec
	}
	return out
}

// Configure is configure: replaces the targets of a renderer.
func (r *Renderer) Configure(specs []TargetSpec, mode ApplyMode) error {
	return r.configure(specs, mode)
}

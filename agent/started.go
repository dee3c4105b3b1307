package agent

import (
	"errors"
	"time"

	"github.com/zkconf/zkconf/cache"
)

// DefaultStartTimeout bounds how long Run takes to report the agent
// started (Options.OnStarted) when nothing settles it earlier: below
// systemd's TimeoutStartSec of the shipped units (120 s), so that the
// start of the unit never hangs on ZooKeeper.
const DefaultStartTimeout = 30 * time.Second

// checkStarted calls Options.OnStarted, once, when the start-up has
// settled: the agent serves what it holds and knows where it stands.
// That is the first of
//
//   - a generation applied (the persisted one at start, or one from
//     ZooKeeper), or an apply attempted and failed (the failure is
//     reported);
//   - the cache read the root and found why it cannot serve a generation
//     (the root does not exist or was never published, no permission, an
//     abandoned marker, a refused incarnation, ...);
//   - every ZooKeeper server diagnosed unreachable (connlog.go);
//
// and at the latest StartTimeout after Run started (startTimer). Started
// does not mean applied: /readyz says whether the agent is ready.
func (d *Daemon) checkStarted() {
	if d.opts.OnStarted == nil || d.isStarted.Load() {
		return
	}
	// A live cache is not enough: the apply that follows it settles the
	// start-up (or the bound, if it runs long).
	un, _ := d.unreachableNow()
	st := d.follow.State()
	switch {
	case d.r.Applied() != nil || d.r.Attempted() > 0:
	case un != "":
	case st.Err != nil && !errors.Is(st.Err, cache.ErrDisconnected) && !errors.Is(st.Err, cache.ErrNotSynced) &&
		!errors.Is(st.Err, cache.ErrResyncing):
	default:
		return
	}
	// STATUS= carries why before READY=1 goes out.
	d.publishStatus()
	d.markStarted("")
}

// startTimer makes the agent count as started StartTimeout from now,
// whatever the main loop is doing (a first apply whose check command
// runs long, say). It returns a function that stops it.
func (d *Daemon) startTimer() (stop func()) {
	if d.opts.OnStarted == nil {
		return func() {}
	}
	timeout := d.opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	t := time.AfterFunc(timeout, func() { d.markStarted(timeout.String()) })
	return func() { t.Stop() }
}

// markStarted calls Options.OnStarted the first time only; bound is the
// start-up bound that ran out ("" when the start-up settled).
func (d *Daemon) markStarted(bound string) {
	d.started.Do(func() {
		d.isStarted.Store(true)
		if bound != "" {
			d.log.Warn("agent started without knowing where it stands yet (the start-up bound ran out); /readyz tells when it is ready", "bound", bound)
		} else {
			d.log.Info("agent started")
		}
		d.opts.OnStarted()
	})
}

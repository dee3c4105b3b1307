package main

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/zkconf/zkconf/agent"
)

// systemd speaks the sd_notify protocol when confagent runs under a
// Type=notify unit (NOTIFY_SOCKET set); otherwise every call is a no-op.
type systemd struct {
	log      *slog.Logger
	interval time.Duration // watchdog ping period, 0 when no watchdog

	mu    sync.Mutex
	ready bool
	last  string
}

func newSystemd(log *slog.Logger) *systemd {
	s := &systemd{log: log}
	if d, err := daemon.SdWatchdogEnabled(false); err == nil && d > 0 {
		// Ping at a third of the limit: two missed beats still leave room.
		s.interval = d / 3
	}
	return s
}

// status keeps STATUS= up to date: the generation applied and, while the
// agent is not ready, why (what /readyz says).
func (s *systemd) status(st agent.Status) {
	msg := fmt.Sprintf("generation %d applied, ZooKeeper %s", st.Generation, st.State)
	if st.Generation == 0 {
		msg = "no generation applied yet, ZooKeeper " + st.State
	}
	if !st.Ready && st.NotReadyReason != "" {
		msg += "; not ready: " + st.NotReadyReason
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg == s.last {
		return
	}
	s.last = msg
	s.notify("STATUS=" + msg)
}

// started sends READY=1 (with the last STATUS=) once the agent has
// started (agent.Options.OnStarted): it serves what it holds and knows
// where it stands, or the start-up bound ran out. READY=1 does not mean
// a generation is applied: STATUS= and /readyz say whether it is ready.
func (s *systemd) started() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return
	}
	s.ready = true
	msg := daemon.SdNotifyReady
	if s.last != "" {
		msg += "\nSTATUS=" + s.last
	}
	s.notify(msg)
}

func (s *systemd) notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Debug("sd_notify failed", "error", err)
	}
}

// ping tells the watchdog the main loop is alive.
func (s *systemd) ping() {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
}

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

// status sends READY=1 after the first successful render (from the
// persisted snapshot or from ZooKeeper) and keeps STATUS= up to date.
func (s *systemd) status(st agent.Status) {
	msg := fmt.Sprintf("generation %d applied, ZooKeeper %s", st.Generation, st.State)
	if st.Generation == 0 {
		msg = "waiting for a first generation, ZooKeeper " + st.State
	}
	if st.LastError != "" {
		msg += "; last apply failed"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	state := ""
	if !s.ready && st.Generation > 0 {
		s.ready = true
		state = daemon.SdNotifyReady + "\n"
	}
	if msg == s.last && state == "" {
		return
	}
	s.last = msg
	if _, err := daemon.SdNotify(false, state+"STATUS="+msg); err != nil {
		s.log.Debug("sd_notify failed", "error", err)
	}
}

// ping tells the watchdog the main loop is alive.
func (s *systemd) ping() {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
}

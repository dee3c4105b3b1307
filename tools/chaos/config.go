package chaos

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Config configures a run. The zero value of every field but Confagent has
// a default.
type Config struct {
	// Seed makes the fault schedule and the workload reproducible; 0 picks
	// one from the clock (printed, so the run can be replayed).
	Seed uint64
	// Duration is the length of the run: faults and publishes during
	// Duration minus FinalReserve, then healing, a final publish, the
	// convergence wait and the checks. Default 10 minutes.
	Duration time.Duration
	// FinalReserve is the part of Duration kept free of faults at the end.
	// Default 25s.
	FinalReserve time.Duration
	// Agents is the number of confagent processes (at least 5).
	Agents int
	// Confagent is the confagent binary. Required.
	Confagent string
	// Confpush is the confpush binary, which sets up the tree's access
	// policy (init) and repairs it (acl --repair). Required.
	Confpush string
	// WorkDir holds everything the run writes (ZooKeeper data, agent
	// configs, outputs, state, logs, the history). Required.
	WorkDir string
	// SummaryPath, when set, receives the summary.
	SummaryPath string
	// Out receives progress lines and the summary; nil discards them.
	Out io.Writer

	// SessionTimeout is the ZooKeeper session timeout of the agents and
	// the publisher (default 4s, the test servers' maximum).
	SessionTimeout time.Duration
	// ResyncJitter and ResyncInterval are the agents' settings (defaults
	// 2s and 30s).
	ResyncJitter   time.Duration
	ResyncInterval time.Duration
	// Slack is the part of the convergence bound that covers process
	// start-up, client reconnection back-off and a loaded machine (default
	// 15s). See Bound. It is also how long an agent may take to exit on
	// SIGTERM and to report a configuration edit as rejected or reloaded.
	Slack time.Duration
	// PollInterval is how often the checker reads every agent's outputs
	// (default 40ms).
	PollInterval time.Duration

	// sabotage makes the run corrupt one agent's outputs behind its back
	// halfway through, so that a test can check that the checker notices.
	sabotage bool
}

func (c *Config) defaults() error {
	if c.Duration == 0 {
		c.Duration = 10 * time.Minute
	}
	if c.FinalReserve == 0 {
		c.FinalReserve = 25 * time.Second
	}
	if c.Agents == 0 {
		c.Agents = 5
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 4 * time.Second
	}
	if c.ResyncJitter == 0 {
		c.ResyncJitter = 2 * time.Second
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = 30 * time.Second
	}
	if c.Slack == 0 {
		c.Slack = 15 * time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 40 * time.Millisecond
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	switch {
	case c.Confagent == "":
		return errors.New("chaos: Config.Confagent (the confagent binary) is required")
	case c.Confpush == "":
		return errors.New("chaos: Config.Confpush (the confpush binary) is required")
	case c.WorkDir == "":
		return errors.New("chaos: Config.WorkDir is required")
	case c.Agents < 5:
		return fmt.Errorf("chaos: %d agents: at least 5 are required", c.Agents)
	case c.Duration-c.FinalReserve < 20*time.Second:
		return fmt.Errorf("chaos: duration %v leaves less than 20s of faults after the %v final reserve", c.Duration, c.FinalReserve)
	}
	return nil
}

// FaultPhase is how long faults are injected.
func (c *Config) FaultPhase() time.Duration { return c.Duration - c.FinalReserve }

// Bound is the convergence bound of property 5: once every fault is healed
// and the last generation is acknowledged, every agent whose checks pass
// shows it in all its outputs and in its status node within
//
//	2 × session timeout + resync jitter + slack.
//
// One session timeout covers a connection the client has to give up on
// (a server that went away while healing), a second one the session's
// expiry being noticed and a new session opened; the resync jitter is the
// random delay the cache waits before its full resync after a reconnect or
// an expiry; the slack covers process start-up, the client's reconnection
// back-off and scheduling on a loaded 2-core machine. A watch normally
// delivers a new generation in well under a second.
func (c *Config) Bound() time.Duration {
	return 2*c.SessionTimeout + c.ResyncJitter + c.Slack
}

// BoundExpr spells Bound out.
func (c *Config) BoundExpr() string {
	return fmt.Sprintf("2 x session timeout (%v) + resync jitter (%v) + slack (%v) = %v",
		c.SessionTimeout, c.ResyncJitter, c.Slack, c.Bound())
}

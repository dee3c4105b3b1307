package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Exec configures `confagent exec -- CMD`, which runs CMD as a child once
// every target is rendered (key exec; docs/confagent.md, "Exec mode"). The
// agent without exec ignores it.
type Exec struct {
	// ReloadSignal is sent to the child after an apply changed a target
	// (key exec.reload_signal, default SIGHUP): a signal name such as
	// "SIGHUP" or "USR2", normalised by Load to the SIG form.
	ReloadSignal string
	// Restart, when true (key exec.restart), stops the child (KillSignal,
	// KillTimeout) and starts it again instead of signalling it.
	Restart bool
	// KillSignal stops the child when confagent does (key
	// exec.kill_signal, default SIGTERM): a restart, or the agent failing.
	// A SIGTERM or SIGINT that confagent receives is passed on as it is.
	KillSignal string
	// KillTimeout is how long confagent waits for the child to exit after
	// a stop signal before it sends SIGKILL to the child's process group
	// (key exec.kill_timeout, default 30s).
	KillTimeout time.Duration
	// Targets are the names of the targets whose changes signal (or
	// restart) the child (key exec.targets); empty means every target.
	Targets []string
}

// Defaults of the exec keys.
const (
	DefaultExecReloadSignal = "SIGHUP"
	DefaultExecKillSignal   = "SIGTERM"
	DefaultExecKillTimeout  = 30 * time.Second
)

// execSignals are the signals exec.reload_signal and exec.kill_signal may
// name. SIGKILL only stops (it cannot be a reload); SIGSTOP and the
// job-control signals would freeze the child, SIGCHLD and SIGPIPE mean
// something else.
var execSignals = []string{"SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGWINCH", "SIGALRM", "SIGKILL"}

// normalizeSignal turns "hup", "HUP" or "SIGHUP" into "SIGHUP"; ok is
// false for a name outside execSignals.
func normalizeSignal(s string) (string, bool) {
	n := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	return n, slices.Contains(execSignals, n)
}

func decodeExec(d decoder) Exec {
	return Exec{
		ReloadSignal: d.string("exec.reload_signal"),
		Restart:      d.bool("exec.restart"),
		KillSignal:   d.string("exec.kill_signal"),
		KillTimeout:  d.duration("exec.kill_timeout"),
		Targets:      d.stringList("exec.targets"),
	}
}

// validateExec checks the exec keys and fills their defaults.
func (c *Config) validateExec(p *problems) {
	e := &c.Exec
	if !p.has("exec.restart") && e.Restart && e.ReloadSignal != "" {
		p.addf("exec.reload_signal", "not used with exec.restart: true (the child is restarted, not signalled): remove one of them")
	}
	for _, k := range []struct {
		key  string
		val  *string
		def  string
		kill bool
	}{{"exec.reload_signal", &e.ReloadSignal, DefaultExecReloadSignal, false}, {"exec.kill_signal", &e.KillSignal, DefaultExecKillSignal, true}} {
		if p.has(k.key) {
			continue
		}
		if *k.val == "" {
			*k.val = k.def
			continue
		}
		n, ok := normalizeSignal(*k.val)
		if !ok || (!k.kill && n == "SIGKILL") {
			allowed := slices.DeleteFunc(slices.Clone(execSignals), func(s string) bool { return !k.kill && s == "SIGKILL" })
			p.addf(k.key, "unknown or unusable signal %q: want one of %s", *k.val, strings.Join(allowed, ", "))
			continue
		}
		*k.val = n
	}
	if !p.has("exec.kill_timeout") {
		switch {
		case e.KillTimeout < 0:
			p.addf("exec.kill_timeout", "must not be negative")
		case e.KillTimeout == 0:
			e.KillTimeout = DefaultExecKillTimeout
		}
	}
	if p.has("exec.targets") {
		return
	}
	for i, name := range e.Targets {
		if !slices.ContainsFunc(c.Targets, func(t Target) bool { return t.Name == name }) {
			p.addf(fmt.Sprintf("exec.targets[%d]", i), "no target is named %q", name)
		}
	}
}

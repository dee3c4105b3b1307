package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/httpguard"
	"github.com/zkconf/zkconf/manifest"
)

// Status is the agent's state as /status and the status node report it;
// the wire format is fleet.Status, shared with confpush.
type Status = fleet.Status

// Status returns the agent's current status.
func (d *Daemon) Status() Status {
	d.mu.Lock()
	opts := d.opts
	d.mu.Unlock()
	st := d.follow.State()
	// One view of the renderer, never its lock: an apply holds that for as
	// long as it runs.
	v := d.r.view.Load()
	s := Status{
		AgentID: opts.AgentID, Version: opts.Version, MaxFormat: manifest.MaxFormat, Root: opts.Root,
		CacheGeneration: st.Generation, State: st.State.String(), Since: st.Since,
		StaleSeconds: d.staleSeconds(), Targets: slices.Clone(v.results), Attempted: v.attempted,
	}
	if a := v.applied; a != nil {
		s.Generation, s.Zxid, s.PublishID = a.Generation(), a.Zxid(), a.PublishID()
		if c, ok := a.(interface{ Candidate() bool }); ok { // *cache.Snapshot
			s.Candidate = c.Candidate()
		}
		for _, t := range s.Targets {
			if !t.UpdatedAt.After(s.AppliedAt) {
				continue
			}
			// A target's result is its own root's generation.
			i := slices.IndexFunc(opts.Targets, func(sp TargetSpec) bool { return sp.Name == t.Name })
			if i >= 0 && t.Generation == targetGeneration(a, opts.Targets[i], a.Generation()) {
				s.AppliedAt = t.UpdatedAt
			}
		}
	}
	if d.multi != nil {
		s.Roots = d.rootStatuses()
	}
	if err := v.lastErr; err != nil {
		s.LastError = err.Error()
	}
	s.Labels, s.StatusNodeConflict = d.labels(opts), d.statusConflict()
	d.incarnationStatus(st, &s)
	if st.State != cache.StateLive {
		s.ZooKeeperUnreachable, _ = d.unreachableNow()
	}
	s.Ready, s.NotReadyReason = d.ready(st, s, opts.StaleAfter)
	if d.multi != nil {
		hostStatus(&s)
	}
	return s
}

// ready decides /readyz: no render wedged, something applied, the last
// apply clean, and ZooKeeper not away for longer than the staleness limit.
func (d *Daemon) ready(st cache.StateInfo, s Status, staleAfter time.Duration) (bool, string) {
	if w := d.r.wedged(); w != nil {
		return false, w.String()
	}
	// Why the cache is not live (an abandoned marker, an item that does not
	// match the manifest, ...) is part of the reason: it is what an
	// operator has to act on, and the status node carries it.
	why := ""
	switch {
	case s.ZooKeeperUnreachable != "":
		// What the operator has to fix, rather than the cache's "no
		// ZooKeeper session".
		why = fmt.Sprintf(": %v: %s", ErrUnreachable, s.ZooKeeperUnreachable)
	case st.State != cache.StateLive && st.Err != nil:
		why = ": " + st.Err.Error()
	}
	switch {
	case retrying(s) != "":
		return false, retrying(s)
	case s.Generation == 0:
		return false, "no generation applied yet" + why
	case s.LastError != "":
		return false, "last apply failed: " + s.LastError
	case s.StatusNodeConflict != "":
		return false, s.StatusNodeConflict
	case s.IncarnationRefused != "":
		whose, refused, gen, inc := "the root's", s.IncarnationRefused, s.Generation, s.Incarnation
		for _, rs := range s.Roots {
			if rs.IncarnationRefused != "" {
				whose, refused, gen, inc = "root "+rs.Name+"'s", rs.IncarnationRefused, rs.Generation, rs.Incarnation
				break
			}
		}
		return false, fmt.Sprintf("refusing %s new incarnation %s (incarnation: refuse; ZooKeeper wiped or rebuilt?): serving generation %d of incarnation %s until `confagent adopt`",
			whose, refused, gen, inc)
	case st.State != cache.StateLive && s.StaleSeconds > staleAfter.Seconds():
		return false, fmt.Sprintf("no live ZooKeeper view for %.0fs (limit %v)%s", s.StaleSeconds, staleAfter, why)
	}
	return true, ""
}

// retrying describes the first target whose failure is being retried, ""
// when none is.
func retrying(s Status) string {
	for _, t := range s.Targets {
		switch {
		case t.Retrying == RetryReload || t.ReloadPending:
			return fmt.Sprintf("target %q: reload not done yet, retrying (%d retries failed): %s", t.Name, t.Retries, t.LastError)
		case t.Retrying != "":
			return fmt.Sprintf("target %q: %s write error, retrying (%d retries failed): %s", t.Name, t.Retrying, t.Retries, t.LastError)
		}
	}
	return ""
}

// Handler serves /healthz, /readyz, /status and /metrics, every response
// with the security headers (a policy that lets nothing load or run in a
// browser). None of them waits for an apply in progress; /healthz fails
// while a render is wedged (wedge.go). It does not check Host: whoever
// serves it beyond loopback puts it behind a Host check (confagent does:
// http.allowed_hosts).
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if wd := d.r.wedged(); wd != nil {
			http.Error(w, wd.String(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s := d.Status()
		if !d.shareOutput(r) {
			s = d.r.cmdOut.withhold(s)
		}
		if !s.Ready {
			http.Error(w, "not ready: "+s.NotReadyReason, http.StatusServiceUnavailable)
			return
		}
		if len(s.Roots) == 0 {
			fmt.Fprintf(w, "ready: generation %d\n", s.Generation)
			return
		}
		var gens []string
		for _, rs := range s.Roots {
			gens = append(gens, fmt.Sprintf("%s generation %d", rs.Name, rs.Generation))
		}
		fmt.Fprintf(w, "ready: %s\n", strings.Join(gens, ", "))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		s := d.Status()
		if !d.shareOutput(r) {
			s = d.r.cmdOut.withhold(s)
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
	})
	mux.Handle("GET /metrics", d.metrics.Handler())
	return httpguard.Headers(mux, httpguard.CSPNone)
}

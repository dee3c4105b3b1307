package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// An agent's state as readers judge it (Agent.State): what an operator
// acts on, the STATE of `confpush status` and the state of the
// dashboard's fleet table alike.
const (
	// StateGone: expected (registered, named by the access policy, or
	// seen) but without a trusted status node, whatever node squats its
	// name: rollouts wait for it.
	StateGone = "gone"
	// StateUnreadable: a status node that cannot be read or decoded, of
	// an agent nobody expects.
	StateUnreadable = "unreadable"
	// StateUntrusted: a status node not provably its agent's, of an agent
	// nobody expects: shown, never counted.
	StateUntrusted = "untrusted"
	// StateFailing: the last apply failed, or a target failed or has a
	// failure being retried (Status.Failing).
	StateFailing = "failing"
	// StateStarting, StateStale and StateExpired are the agent's cache
	// state when it is not live: it has no snapshot yet, is away from
	// ZooKeeper, or its session expired.
	StateStarting = "starting"
	StateStale    = "stale"
	StateExpired  = "expired"
	// StateBehind: a newer generation is live and not applied yet.
	StateBehind = "behind"
	// StateOK: none of the above.
	StateOK = "ok"
)

// States lists every state Agent.State returns, in the order it judges
// them (the first that applies wins). A cache state the agent reports
// that is not one of StateStarting, StateStale or StateExpired (from a
// newer agent) is returned as the agent reports it.
var States = []string{StateGone, StateUnreadable, StateUntrusted, StateFailing, StateStarting, StateStale,
	StateExpired, StateBehind, StateOK}

// State judges the agent against the live generation: the first of gone,
// unreadable, untrusted, failing, its cache state when not live
// (starting, stale, expired), behind, ok. An expected agent with a forged
// or unreadable node is gone (the node's reason is in Untrusted or Err):
// what matters is that its agent does not report, and rollouts wait for
// it.
func (a Agent) State(live int64) string {
	st := a.Status
	switch {
	case a.Gone():
		return StateGone
	case a.Err != nil:
		return StateUnreadable
	case !a.Trusted():
		return StateUntrusted
	case st.Failing():
		return StateFailing
	case st.State != "live" && st.State != "":
		return st.State
	case st.Generation < live:
		return StateBehind
	}
	return StateOK
}

// unhealthy reports whether the agent fails a health check (`confpush
// status --fail-on-error`): it reports an error or a failing target, its
// node cannot be read or is untrusted, or it is gone. Incarnation problems
// (incarnationProblems, Report.Failing) fail it too, judged against the root.
func (a Agent) unhealthy() bool {
	return a.Err != nil || !a.Trusted() || a.Gone() || a.Status.Failing()
}

// Failure is the agent's last error, else its first failing target's
// ("target NAME: ..." with what is retried), "" when none.
func (s Status) Failure() string {
	if s.LastError != "" {
		return s.LastError
	}
	for _, t := range s.Targets {
		if !t.Failing() {
			continue
		}
		switch {
		case t.Retrying != "":
			return fmt.Sprintf("target %s: %s failure retried (%d retries): %s", t.Name, t.Retrying, t.Retries, t.LastError)
		case t.ReloadPending:
			return fmt.Sprintf("target %s: reload pending: %s", t.Name, t.LastError)
		}
		return fmt.Sprintf("target %s: %s", t.Name, t.LastError)
	}
	return ""
}

// IncarnationProblem is an agent that does not follow the root's
// incarnation (a ZooKeeper wiped or rebuilt): it refuses the new one
// (incarnation: refuse) or holds another one.
type IncarnationProblem struct {
	ID string
	// Message says what is wrong and what to do, for people.
	Message string
}

// incarnationProblems lists the agents (trusted ones only) that do not
// follow root incarnation inc: refusing it, waiting for confagent adopt,
// or holding another one. An empty inc (a root from before incarnations)
// only finds refusals.
func incarnationProblems(agents []Agent, inc string) []IncarnationProblem {
	var out []IncarnationProblem
	for _, ag := range agents {
		if ag.Err != nil || !ag.Trusted() {
			continue
		}
		st := ag.Status
		switch {
		case st.IncarnationRefused != "":
			out = append(out, IncarnationProblem{ag.ID, fmt.Sprintf("agent %s refuses the new incarnation %s and serves generation %d of incarnation %s (incarnation: refuse; run confagent adopt on it)",
				ag.ID, st.IncarnationRefused, st.Generation, orNone(st.Incarnation))})
		case inc != "" && st.Incarnation != "" && st.Incarnation != inc:
			out = append(out, IncarnationProblem{ag.ID, fmt.Sprintf("agent %s holds incarnation %s (generation %d), not the root's %s",
				ag.ID, st.Incarnation, st.CacheGeneration, inc)})
		}
	}
	return out
}

func orNone(inc string) string {
	if inc == "" {
		return "(none)"
	}
	return inc
}

// ErrRootMissing is Live on a root whose znode does not exist.
var ErrRootMissing = errors.New("the config root does not exist")

// Live reads the root's live manifest, against which agents are judged:
// an empty manifest (generation 0) for a root that exists but was never
// published, an error wrapping ErrRootMissing for one that does not exist.
func (f *Fleet) Live(ctx context.Context) (*manifest.Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, _, err := f.cl.Conn().Get(f.paths.Root)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, fmt.Errorf("read %s: %w", f.paths.Root, ErrRootMissing)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", f.paths.Root, err)
	}
	m, err := manifest.Decode(b)
	if errors.Is(err, manifest.ErrEmpty) {
		return &manifest.Manifest{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.paths.Root, err)
	}
	return m, nil
}

// Labels returns the labels an agent claims: those of its trusted status
// node, else those of its registry node (with its hostname), else none.
func (a Agent) Labels() map[string]string {
	if a.Trusted() && a.Status.Labels != nil {
		return a.Status.Labels
	}
	if r := a.Registration; r != nil {
		l := make(map[string]string, len(r.Labels)+1)
		for k, v := range r.Labels {
			l[k] = v
		}
		if r.Hostname != "" {
			if _, set := l[manifest.LabelHostname]; !set {
				l[manifest.LabelHostname] = r.Hostname
			}
		}
		return l
	}
	return nil
}

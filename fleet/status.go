// Package fleet is the status protocol between agents and publishers:
// every agent keeps an ephemeral status node
// (<meta>/roots/<key>/status/<agent-id>) holding a Status in JSON, and
// publishers list those nodes to see which host runs which generation, or
// follow them to wait for a rollout.
//
// Status nodes live outside the config root, so they are never mistaken for
// items and never fire item watches; being ephemeral, an agent's node goes
// when its session does.
//
// A Fleet is one root's agents on one zkclient.Client (New): List and Read
// read them, judging each node against the root's access policy; Wait
// follows them until a rollout succeeds or cannot; Changes wakes its
// caller on every change; Live reads the generation agents are judged
// against; Forget removes agents from the registry; StatusNodeACL is the
// ACL an agent gives its own node.
//
// Fleet is the one judge of an agent: Agent.State (gone, unreadable,
// untrusted, failing, starting, stale, expired, behind, ok) is what
// `confpush status`, its --wait and the dashboard print, Status.Failure
// the error shown; Fleet.Report judges a whole fleet against the live
// generation: the counts, the agents that do not follow the root's
// incarnation and those --fail-on-error fails for. Package rollout builds the actions on these judgements. zkclient's package documentation ("Errors") says what each class
// of error means and which of them zkconf retries.
package fleet

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Bounds on the nodes an agent writes. `confpush init` sets them as
// ZooKeeper quotas on each agent identity's status and registry node, and
// readers (Read, List, Wait, Changes) skip a node above its bound: they
// report it instead of decoding it (docs/design.md, "Bounds on agent
// identities").
const (
	// MaxStatusBytes bounds a status node's data (128 KiB). EncodeStatus
	// keeps an honest agent's status under it however many targets fail.
	MaxStatusBytes = 128 << 10
	// MaxRegistrationBytes bounds a registry node's data (16 KiB: a
	// Registration's times, labels and hostname).
	MaxRegistrationBytes = 16 << 10
)

// Lengths EncodeStatus shortens messages to when a status would not fit.
const (
	maxTargetError = 512
	maxStatusError = 4096
)

// EncodeStatus is the status node's data for s: its JSON, made to fit
// MaxStatusBytes when it would not. It shortens long error messages
// first (a "…" marks the cut), then leaves out the targets that are not
// failing, then failing ones but the first (so that Failing still holds);
// TargetsOmitted counts what was left out. A status that is still too
// large (thousands of labels) is returned as it is: its write then fails
// with the quota error.
func EncodeStatus(s Status) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil || len(b) <= MaxStatusBytes {
		return b, err
	}
	s.Targets = append([]TargetResult(nil), s.Targets...)
	for i := range s.Targets {
		s.Targets[i].LastError = shorten(s.Targets[i].LastError, maxTargetError)
	}
	s.LastError = shorten(s.LastError, maxStatusError)
	s.NotReadyReason = shorten(s.NotReadyReason, maxStatusError)
	s.StatusNodeConflict = shorten(s.StatusNodeConflict, maxStatusError)
	if b, err = json.Marshal(s); err != nil || len(b) <= MaxStatusBytes {
		return b, err
	}
	failing := s.Targets[:0:0]
	for _, t := range s.Targets {
		if t.Failing() {
			failing = append(failing, t)
		}
	}
	for {
		s.TargetsOmitted += len(s.Targets) - len(failing)
		s.Targets = failing
		if b, err = json.Marshal(s); err != nil || len(b) <= MaxStatusBytes || len(failing) <= 1 {
			return b, err
		}
		failing = failing[:(len(failing)+1)/2]
	}
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Status is what an agent reports: /status serves it and the status node
// holds it.
type Status struct {
	AgentID string `json:"agent_id"`
	// Version is the agent's release (buildinfo).
	Version string `json:"version,omitempty"`
	// MaxFormat is the highest manifest format the agent reads
	// (manifest.MaxFormat of its release); 0 from agents older than
	// config trees, which read format 1 only. A publish that needs a
	// newer format is refused while an expected agent reads less
	// (publish.OldAgentsError).
	MaxFormat int    `json:"max_format,omitempty"`
	Root      string `json:"root"`
	// Generation, Zxid and PublishID describe the snapshot applied to every
	// target (0 and empty before the first apply).
	Generation int64     `json:"generation"`
	Zxid       int64     `json:"zxid"`
	PublishID  string    `json:"publish_id,omitempty"`
	AppliedAt  time.Time `json:"applied_at,omitzero"`
	// Candidate is true when the applied generation is a canary rollout's
	// candidate (the agent is, or was, in the rollout's selection) rather
	// than the root's stable generation.
	Candidate bool `json:"candidate,omitempty"`
	// CacheGeneration is the newest generation the cache holds; it differs
	// from Generation while an apply is pending or after a rejection.
	CacheGeneration int64     `json:"cache_generation"`
	State           string    `json:"state"`
	Since           time.Time `json:"since"`
	StaleSeconds    float64   `json:"stale_seconds"`
	Ready           bool      `json:"ready"`
	NotReadyReason  string    `json:"not_ready_reason,omitempty"`
	// Attempted is the generation last attempted; when it is above
	// Generation and LastError is set, the agent rejected it.
	Attempted int64          `json:"attempted"`
	LastError string         `json:"last_error,omitempty"`
	Targets   []TargetResult `json:"targets"`
	// TargetsOmitted counts the healthy targets EncodeStatus left out of
	// the status node to keep it under MaxStatusBytes (the agent's
	// /status has them all).
	TargetsOmitted int `json:"targets_omitted,omitempty"`

	// Labels are the agent's configured labels plus "hostname" (canary
	// rollouts select agents by them). StatusNodeConflict, when
	// set, says why the agent does not write its status node (a node of
	// its name that another session owns); /status reports it, the node
	// itself cannot.
	Labels             map[string]string `json:"labels,omitempty"`
	StatusNodeConflict string            `json:"status_node_conflict,omitempty"`
	// Incarnations and sessions (a ZooKeeper wiped or rebuilt; see
	// docs/design.md).
	//
	// Incarnation is the root incarnation of the snapshot the cache holds.
	Incarnation string `json:"incarnation,omitempty"`
	// IncarnationRefused is the root's new incarnation the agent refuses
	// (incarnation: refuse) until an operator runs confagent adopt.
	IncarnationRefused string `json:"incarnation_refused,omitempty"`
	// IncarnationSwitches counts the new incarnations the agent followed
	// since it started.
	IncarnationSwitches uint64 `json:"incarnation_switches,omitempty"`
	// SessionsReplaced counts the ZooKeeper connections the agent replaced
	// because the servers refused their session.
	SessionsReplaced uint64 `json:"zk_sessions_replaced,omitempty"`
	// SessionRefused is true while ZooKeeper refuses the agent's session
	// (only /status can show it: the status node needs a session).
	SessionRefused bool `json:"zk_session_refused,omitempty"`
	// ZooKeeperUnreachable, while no server gives the agent a session and
	// every one was tried, names each server and its cause ("zk1:2181:
	// connection refused; zk2:2181: lookup zk2: no such host"); only
	// /status can show it.
	ZooKeeperUnreachable string `json:"zk_unreachable,omitempty"`

	// Roots, on the /status of an agent that follows several roots, is
	// each root's own status (by name); the fields above that describe one
	// root (Root, Generation, Zxid, PublishID, Candidate, CacheGeneration,
	// Attempted, Incarnation, IncarnationRefused) are then zero, since no
	// one number stands for several roots. Absent for one root, and in
	// status nodes: each root's node is that root's status.
	Roots []RootStatus `json:"roots,omitempty"`
}

// RootStatus is one root's part of an agent's status when it follows
// several roots (Status.Roots): the fields of Status of the same names,
// for that root.
type RootStatus struct {
	// Name is the root's name in the agent's configuration (roots:).
	Name            string    `json:"name"`
	Root            string    `json:"root"`
	Generation      int64     `json:"generation"`
	Zxid            int64     `json:"zxid"`
	PublishID       string    `json:"publish_id,omitempty"`
	Candidate       bool      `json:"candidate,omitempty"`
	CacheGeneration int64     `json:"cache_generation"`
	Attempted       int64     `json:"attempted"`
	State           string    `json:"state"`
	Since           time.Time `json:"since"`
	// Error is why the root's view is not live (its cache's error).
	Error               string `json:"error,omitempty"`
	Incarnation         string `json:"incarnation,omitempty"`
	IncarnationRefused  string `json:"incarnation_refused,omitempty"`
	IncarnationSwitches uint64 `json:"incarnation_switches,omitempty"`
}

// Registration is an agent's registry node
// (<meta>/roots/<key>/agents/<agent-id>): persistent, written by the agent
// itself when it starts, on every new session and every RegistryRefresh
// otherwise, so that rollouts know who should answer even while an agent
// is down.
type Registration struct {
	FirstSeen time.Time         `json:"first_seen"`
	LastSeen  time.Time         `json:"last_seen"`
	Labels    map[string]string `json:"labels,omitempty"`
	Hostname  string            `json:"hostname,omitempty"`
	// Version and MaxFormat are the status node's, kept here for the
	// agents that are away (0: an agent older than config trees).
	Version   string `json:"version,omitempty"`
	MaxFormat int    `json:"max_format,omitempty"`
}

// RegistryRefresh is how often a running agent refreshes last_seen in its
// registry node besides its starts and new sessions: rare, so that the
// fleet's writes do not grow with publishes.
const RegistryRefresh = 5 * time.Minute

// TargetResult is a target's last outcome, as /status and the status node
// report it.
type TargetResult struct {
	Name string `json:"name"`
	Kind string `json:"type"`
	Dest string `json:"dest"`
	// Generation is the generation the destination holds (0: none yet).
	Generation int64 `json:"generation"`
	// OK is false when the last apply attempt failed.
	OK bool `json:"ok"`
	// LastAttempt is the generation last attempted.
	LastAttempt int64     `json:"last_attempt"`
	LastError   string    `json:"last_error,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
	Reloads     int64     `json:"reloads"`
	Repairs     int64     `json:"drift_repairs"`

	// Failures the agent retries on its own, with backoff.
	// Retrying names the class of the failure being retried: "reload" (the
	// reload command failed: it runs again until it succeeds) or
	// "transient" (a write failed with ENOSPC, EIO, EDQUOT or the like);
	// empty when nothing is retried. Retries counts the retries that
	// failed since the failure began. ReloadPending is true while the
	// output in place has not been loaded by a successful reload.
	Retrying      string `json:"retrying,omitempty"`
	Retries       int64  `json:"retries,omitempty"`
	ReloadPending bool   `json:"reload_pending,omitempty"`
}

// Failing reports whether the target's last attempt failed or a failure
// of it is being retried.
func (t TargetResult) Failing() bool {
	return !t.OK || t.Retrying != "" || t.ReloadPending
}

// Failing reports whether the agent reports an error or a failing target:
// what `confpush status --fail-on-error` exits non-zero for.
func (s Status) Failing() bool {
	if s.LastError != "" {
		return true
	}
	for _, t := range s.Targets {
		if t.Failing() {
			return true
		}
	}
	return false
}

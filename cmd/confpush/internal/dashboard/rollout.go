package dashboard

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
)

// This file shows canary rollouts (docs/design.md, "Canary rollouts"):
// the live manifest's canary field says whether one is in progress (read
// with the root by refresh, which classifies every agent once per
// re-read); the rollout record (its events and plan) and the driver's
// liveness node are followed by watches of their own, since a step's
// event is appended to the record after the step's commit and a driver
// dies without changing the root.

// canaryGeneration is the candidate generation m announces (0 for none).
func canaryGeneration(m *manifest.Manifest) int64 {
	if m == nil || m.Canary == nil {
		return 0
	}
	return m.Canary.Generation
}

// watchRollout follows the rollout record and its driver's liveness node
// (publish.Publisher.RolloutW) until ctx ends, starting over after a
// backoff when ZooKeeper fails it.
func (v *rootView) watchRollout(ctx context.Context) {
	warned := false
	for attempt := 1; ; attempt++ {
		rs, changed, err := v.pub.RolloutW(ctx)
		if err == nil {
			attempt = 1
			if rs.RecordDenied && !warned {
				// The record is publisher-only: without the publisher's
				// credentials the rollout shows without its events.
				warned = true
				v.log.Warn("dashboard: the rollout record is not readable with these credentials (--auth-file); rollouts show without their events")
			}
			v.setRollout(rs.Record, rs.DriverAlive)
			select {
			case <-ctx.Done():
				return
			case <-changed:
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		v.log.Warn("dashboard: lost the rollout record's watch; retrying", "err", err)
		if retry.Sleep(ctx, attempt) != nil {
			return
		}
	}
}

// setRollout installs a new reading of the record and the driver: a copy
// of the current snapshot with them, so that subscribers hear of it.
func (v *rootView) setRollout(rec *publish.RolloutRecord, alive bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.record, v.driverAlive = rec, alive
	s := *v.snap
	v.installLocked(&s)
}

// Rollout states an agent row can be filtered by (AgentRow.RolloutState).
var rolloutStates = []string{rollout.StateStable, rollout.StateCandidate, rollout.StateApplied, rollout.StateFailing, rollout.StateGone}

// RolloutView is /api/root/rollout: the rollout in progress (Rollout, null
// when none) and the record of the last one once it ended (Last).
type RolloutView struct {
	Root string `json:"root"`
	// Generation is the live generation (the stable one during a rollout).
	Generation int64 `json:"generation"`
	InProgress bool  `json:"in_progress"`
	// Rollout is the rollout in progress; null when none.
	Rollout *Rollout `json:"rollout"`
	// Last is the record of the last rollout when none is in progress
	// (the record stays until the next rollout starts), with its ending
	// event; absent when there is none or it is not readable.
	Last      *publish.RolloutRecord `json:"last,omitempty"`
	Version   uint64                 `json:"version"`
	Connected bool                   `json:"connected"`
}

// Rollout is a rollout in progress, as confpush rollout status --json
// names its fields, with the progress of each step.
type Rollout struct {
	RolloutID  string    `json:"rollout_id"`
	Candidate  int64     `json:"candidate_generation"`
	Stable     int64     `json:"stable_generation"`
	Selector   string    `json:"selector,omitempty"`
	Percent    float64   `json:"percent,omitempty"`
	Selection  string    `json:"selection"`
	Publisher  string    `json:"publisher"`
	StartedAt  time.Time `json:"started_at"`
	AgeSeconds int64     `json:"age_seconds"`
	Message    string    `json:"message,omitempty"`
	// Driver is "alive" (its liveness node exists), "gone" (the rollout
	// was started with a driver, --auto or --steps, whose process is gone)
	// or "none" (driven by hand).
	Driver      string    `json:"driver"`
	DriverAlive bool      `json:"driver_alive"`
	Auto        bool      `json:"auto,omitempty"`
	Bake        string    `json:"bake,omitempty"`
	Plan        []float64 `json:"planned_steps,omitempty"`
	// Counts is how many agents are in each rollout state.
	Counts map[string]int `json:"counts"`
	// Steps are the selections the rollout went through (start, each
	// widen; the last is current) and the planned ones still ahead.
	Steps []rollout.StepProgress `json:"steps"`
	// Outside are the agents the current selection does not select.
	Outside rollout.OutsideProgress `json:"outside"`
	// Events are the record's events (start, widen, …); empty while the
	// record is unreadable or not yet written.
	Events []publish.RolloutEvent `json:"events"`
}

// lazyProgress is a snapshot's rollout view, computed once on first use.
type lazyProgress struct {
	once sync.Once
	view *rollout.View
	// byID is each agent's place in the rollout (by agent id).
	byID map[string]rollout.Agent
}

// rolloutView is the snapshot's rollout view (rollout.NewView), computed
// once.
func (s *snapshot) rolloutView() *rollout.View {
	s.progress.once.Do(func() {
		rs := &publish.RolloutState{Root: "", Stable: s.Live, Record: s.Record, DriverAlive: s.DriverAlive}
		if s.Live == nil {
			rs.Stable = &manifest.Manifest{}
		} else {
			rs.Canary = s.Live.Canary
		}
		v := rollout.NewView(rs, s.Agents)
		s.progress.view, s.progress.byID = v, make(map[string]rollout.Agent, len(v.Agents))
		for _, ra := range v.Agents {
			s.progress.byID[ra.ID] = ra
		}
	})
	return s.progress.view
}

// rolloutOf is agent id's place in the rollout in progress (false when
// none, or the agent is in no rollout count).
func (s *snapshot) rolloutOf(id string) (rollout.Agent, bool) {
	s.rolloutView()
	ra, ok := s.progress.byID[id]
	return ra, ok
}

// rollout returns the rollout in progress in s (nil when none), its age
// as of now.
func (s *snapshot) rollout() *Rollout {
	v := s.rolloutView()
	c := v.State.Canary
	if c == nil {
		return nil
	}
	r := &Rollout{RolloutID: c.RolloutID, Candidate: c.Generation, Stable: v.State.Stable.Generation, Selector: c.Selector,
		Percent: c.Percent, Selection: publish.DescribeSelection(c.Selection), Publisher: c.Publisher,
		StartedAt: c.StartedAt, AgeSeconds: int64(time.Since(c.StartedAt).Seconds()), Driver: v.Driver,
		DriverAlive: v.State.DriverAlive, Counts: v.Counts, Steps: v.Steps, Outside: v.Outside, Events: []publish.RolloutEvent{}}
	if rec := v.Record; rec != nil {
		r.Message, r.Auto, r.Bake, r.Plan, r.Events = rec.Message, rec.Auto, rec.Bake, rec.Steps, rec.Events
	}
	return r
}

func (s *Server) apiRollout(w http.ResponseWriter, r *http.Request) {
	v, err := s.lookup(r)
	if err != nil {
		fail(w, err)
		return
	}
	snap := v.current()
	out := RolloutView{Root: v.root, Generation: snap.latest(), Rollout: snap.rollout(), Version: snap.Version,
		Connected: snap.Connected}
	out.InProgress = out.Rollout != nil
	if !out.InProgress && snap.Record != nil && snap.Live != nil {
		out.Last = snap.Record
	}
	writeJSON(w, out)
}

// rolloutRow adds an agent's rollout state to its row.
func rolloutRow(r *AgentRow, snap *snapshot) {
	if ra, ok := snap.rolloutOf(r.ID); ok {
		r.RolloutState, r.Selected = ra.State, ra.Selected
	}
}

// validRolloutState reports whether state is a rollout state ("" for any).
func validRolloutState(state string) bool {
	return state == "" || slices.Contains(rolloutStates, state)
}

// inRollout reports whether agent id is in rollout state state.
func inRollout(snap *snapshot, id, state string) bool {
	ra, _ := snap.rolloutOf(id)
	return ra.State == state
}

package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
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
// until ctx ends, starting over after a backoff when ZooKeeper fails it.
func (v *rootView) watchRollout(ctx context.Context, meta string) {
	paths := layout.New(v.root, meta)
	for attempt := 1; ; attempt++ {
		err := v.followRollout(ctx, v.cl.Conn(), paths, func() { attempt = 1 })
		if ctx.Err() != nil {
			return
		}
		v.log.Warn("dashboard: lost the rollout record's watch; retrying", "err", err)
		if retry.Sleep(ctx, attempt) != nil {
			return
		}
	}
}

func (v *rootView) followRollout(ctx context.Context, conn *zk.Conn, paths layout.Paths, ok func()) error {
	for {
		var rec *publish.RolloutRecord
		data, _, recEv, err := conn.GetW(paths.Rollout())
		switch {
		case errors.Is(err, zk.ErrNoNode):
			var exists bool
			if exists, _, recEv, err = conn.ExistsW(paths.Rollout()); err != nil {
				return err
			}
			if exists {
				continue // created in between: read it
			}
		case errors.Is(err, zk.ErrNoAuth):
			// The record is publisher-only: without the publisher's
			// credentials the rollout shows without its events (the
			// credentials do not change while serving).
			v.log.Warn("dashboard: the rollout record is not readable with these credentials (--auth-file); rollouts show without their events")
			v.setRollout(nil, false)
			<-ctx.Done()
			return ctx.Err()
		case err != nil:
			return err
		default:
			var r publish.RolloutRecord
			if json.Unmarshal(data, &r) == nil {
				rec = &r
			}
		}
		alive := false
		var driverEv <-chan zk.Event // nil (never fires) without a record
		if rec != nil && rec.RolloutID != "" {
			alive, _, driverEv, err = conn.ExistsW(paths.RolloutDriver() + "/" + rec.RolloutID)
			if errors.Is(err, zk.ErrNoAuth) {
				alive, err = false, nil
			}
			if err != nil {
				return err
			}
		}
		ok()
		v.setRollout(rec, alive)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-recEv:
		case <-driverEv:
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
var rolloutStates = []string{fleet.StateStable, fleet.StateCandidate, fleet.StateApplied, fleet.StateFailing, fleet.StateGone}

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
	Steps []StepProgress `json:"steps"`
	// Outside are the agents the current selection does not select.
	Outside OutsideProgress `json:"outside"`
	// Events are the record's events (start, widen, …); empty while the
	// record is unreadable or not yet written.
	Events []publish.RolloutEvent `json:"events"`
}

// StepProgress is one step of a rollout: the agents its selection
// selects and where they are.
type StepProgress struct {
	Selector  string  `json:"selector,omitempty"`
	Percent   float64 `json:"percent,omitempty"`
	Selection string  `json:"selection"`
	// Current marks the step in progress; Planned a step of the driver's
	// plan not reached yet (its agents are still on stable).
	Current bool `json:"current,omitempty"`
	Planned bool `json:"planned,omitempty"`
	Agents  int  `json:"agents"`
	Applied int  `json:"applied"`
	Pending int  `json:"pending"`
	Failing int  `json:"failing"`
	Gone    int  `json:"gone"`
}

// OutsideProgress counts the agents outside the current selection: on
// stable, or still on the candidate's side (selected by an earlier
// labelling, which never goes back).
type OutsideProgress struct {
	Agents      int `json:"agents"`
	Stable      int `json:"stable"`
	OnCandidate int `json:"on_candidate"`
}

// lazyProgress computes a snapshot's rollout view once, on first use.
type lazyProgress struct {
	once sync.Once
	view *Rollout
}

// rollout returns the rollout in progress in s (nil when none), its age
// as of now.
func (s *snapshot) rollout() *Rollout {
	if s.Live == nil || s.Live.Canary == nil {
		return nil
	}
	s.progress.once.Do(func() { s.progress.view = s.computeRollout() })
	r := *s.progress.view
	r.AgeSeconds = int64(time.Since(r.StartedAt).Seconds())
	return &r
}

func (s *snapshot) computeRollout() *Rollout {
	c := s.Live.Canary
	r := &Rollout{RolloutID: c.RolloutID, Candidate: c.Generation, Stable: s.Live.Generation, Selector: c.Selector,
		Percent: c.Percent, Selection: publish.DescribeSelection(c.Selection), Publisher: c.Publisher,
		StartedAt: c.StartedAt, Driver: "none", DriverAlive: s.DriverAlive, Counts: map[string]int{},
		Events: []publish.RolloutEvent{}}
	rec := s.Record
	if rec != nil && rec.RolloutID != c.RolloutID {
		rec = nil // the previous rollout's, or this one's not written yet
	}
	// The steps taken: the selections of the start and of each widen.
	var sels []manifest.Selection
	if rec != nil {
		r.Message, r.Auto, r.Bake, r.Plan, r.Events = rec.Message, rec.Auto, rec.Bake, rec.Steps, rec.Events
		for _, ev := range rec.Events {
			if (ev.Kind == publish.EventStart || ev.Kind == publish.EventWiden) && ev.Selection != nil &&
				(len(sels) == 0 || sels[len(sels)-1] != *ev.Selection) {
				sels = append(sels, *ev.Selection)
			}
		}
	}
	switch {
	case s.DriverAlive:
		r.Driver = "alive"
	case rec != nil && (rec.Auto || len(rec.Steps) > 0 || rec.Bake != ""):
		r.Driver = "gone"
	}
	if len(sels) == 0 || sels[len(sels)-1] != c.Selection {
		sels = append(sels, c.Selection)
	}
	steps := make([]StepProgress, 0, len(sels))
	for i, sel := range sels {
		steps = append(steps, StepProgress{Selector: sel.Selector, Percent: sel.Percent,
			Selection: publish.DescribeSelection(sel), Current: i == len(sels)-1})
	}
	// Planned steps: the plan's percents above the current one.
	for _, pct := range plannedAfter(rec, c.Selection) {
		sel := manifest.Selection{Selector: c.Selector, Percent: pct}
		steps = append(steps, StepProgress{Selector: sel.Selector, Percent: pct, Selection: publish.DescribeSelection(sel), Planned: true})
	}
	for _, a := range s.Agents {
		ra, ok := s.Rollout[a.ID]
		if !ok {
			continue // untrusted and not expected: in no rollout count
		}
		r.Counts[ra.State]++
		if !ra.Selected {
			r.Outside.Agents++
			if ra.State == fleet.StateStable {
				r.Outside.Stable++
			} else {
				r.Outside.OnCandidate++
			}
		}
		for i := range steps {
			st := &steps[i]
			if st.Current {
				if !ra.Selected {
					continue
				}
			} else if !(manifest.Selection{Selector: st.Selector, Percent: st.Percent}).Selects(a.ID, ra.Labels) {
				continue
			}
			st.Agents++
			if st.Planned {
				continue // its agents are not selected yet
			}
			switch ra.State {
			case fleet.StateApplied:
				st.Applied++
			case fleet.StateFailing:
				st.Failing++
			case fleet.StateGone:
				st.Gone++
			default:
				st.Pending++
			}
		}
	}
	r.Steps = steps
	return r
}

// plannedAfter returns the plan's percents above the current selection's
// (none without a plan, or for a selection without a percent).
func plannedAfter(rec *publish.RolloutRecord, cur manifest.Selection) []float64 {
	if rec == nil || cur.Percent == 0 {
		return nil
	}
	var out []float64
	for _, p := range rec.Steps {
		if p > cur.Percent && p <= 100 {
			out = append(out, p)
		}
	}
	return out
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
	if ra, ok := snap.Rollout[r.ID]; ok {
		r.RolloutState, r.Selected = ra.State, ra.Selected
	}
}

// validRolloutState reports whether state is a rollout state ("" for any).
func validRolloutState(state string) bool {
	return state == "" || slices.Contains(rolloutStates, state)
}

package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// This file is the record side of canary rollouts: the rollout record
// (<meta>/roots/<key>/rollout) with its events, and reading a root's
// rollout (Rollout, RolloutW). The start is canary.go, the later steps
// rolloutsteps.go.

// Rollout event kinds in a RolloutRecord.
const (
	EventStart   = "start"
	EventWiden   = "widen"
	EventPromote = "promote"
	EventAbort   = "abort"
	// EventSuperseded is recorded when a publish with Supersede ended the
	// rollout.
	EventSuperseded = "superseded"
)

// RolloutEvent is one step of a rollout.
type RolloutEvent struct {
	At        time.Time           `json:"at"`
	Kind      string              `json:"kind"`
	Selection *manifest.Selection `json:"selection,omitempty"`
	// Generation is the generation the step published (the candidate for
	// start and widen, the new live one for promote and abort).
	Generation int64  `json:"generation,omitempty"`
	By         string `json:"by,omitempty"`
	Message    string `json:"message,omitempty"`
}

// RolloutRecord is the data of <meta>/roots/<key>/rollout: the rollout's
// plan and events, readable by publishers only. The root's canary field
// is the authority on whether a rollout is in progress; the record is its
// log (it stays after the end, with the ending event, until the next
// rollout replaces it).
type RolloutRecord struct {
	RolloutID string             `json:"rollout_id"`
	Candidate int64              `json:"candidate"`
	Stable    int64              `json:"stable"`
	Selection manifest.Selection `json:"selection"`
	StartedAt time.Time          `json:"started_at"`
	Publisher string             `json:"publisher"`
	Message   string             `json:"message,omitempty"`
	// Steps, Bake and Auto are the driver's plan (empty when the rollout
	// is driven by hand): percents to widen to, the bake time of each
	// step, and whether promote and abort are automatic.
	Steps  []float64      `json:"steps,omitempty"`
	Bake   string         `json:"bake,omitempty"`
	Auto   bool           `json:"auto,omitempty"`
	Events []RolloutEvent `json:"events"`
}

// RolloutPlan is the driver's plan recorded at the start of a rollout
// (Request.RolloutPlan); this package only stores it.
type RolloutPlan struct {
	Steps []float64
	Bake  time.Duration
	Auto  bool
}

// RolloutState is a root's rollout as read by Publisher.Rollout.
type RolloutState struct {
	// Root is the config root.
	Root string
	// Stable is the root's manifest (the stable generation).
	Stable *manifest.Manifest
	// Canary is the rollout in progress; nil when none.
	Canary *manifest.Canary
	// Record is the rollout record (nil when missing or unreadable; it
	// may describe an ended rollout when Canary is nil). RecordDenied
	// reports that it is not readable with the client's credentials (it is
	// publisher-only).
	Record       *RolloutRecord
	RecordDenied bool
	// DriverAlive reports whether a driver's liveness node
	// (rollout-driver/<rollout id>) exists.
	DriverAlive bool
	// Leftover reports a candidate node without a canary in the root
	// (a publisher died after ending a rollout): the next publish removes
	// it.
	Leftover bool
}

// readRecord reads the rollout record (nil, nil when there is none).
func (p *Publisher) readRecord(ctx context.Context) (*RolloutRecord, *zk.Stat, error) {
	data, st, err := p.get(ctx, p.paths.Rollout())
	if err != nil || st == nil {
		return nil, st, err
	}
	var rec RolloutRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, st, nil // unreadable: replaced by the next start
	}
	return &rec, st, nil
}

// appendEvent adds ev to the record of rollout id after a step committed.
// Best effort: the root and history are the authority.
func (p *Publisher) appendEvent(ctx context.Context, id string, ev RolloutEvent) {
	for range 3 {
		rec, st, err := p.readRecord(ctx)
		if err != nil || rec == nil || rec.RolloutID != id {
			return
		}
		rec.Events = append(rec.Events, ev)
		data, err := json.Marshal(rec)
		if err != nil {
			return
		}
		if _, err = p.conn().Set(p.paths.Rollout(), data, st.Version); err == nil {
			return
		} else if !errors.Is(err, zk.ErrBadVersion) {
			p.log.Warn("could not record the rollout event", "kind", ev.Kind, "error", err)
			return
		}
	}
}

// Rollout reads the root's rollout: its canary, the record and whether a
// driver is alive.
func (p *Publisher) Rollout(ctx context.Context) (*RolloutState, error) {
	m, _, err := p.Current(ctx)
	if err != nil {
		return nil, err
	}
	rs := &RolloutState{Root: p.paths.Root, Stable: m, Canary: m.Canary}
	rec, _, err := p.readRecord(ctx)
	if err != nil && !zkclient.IsDenied(err) {
		return nil, err
	}
	rs.Record, rs.RecordDenied = rec, err != nil
	if m.Canary != nil {
		st, err := p.exists(ctx, p.paths.RolloutDriver()+"/"+m.Canary.RolloutID)
		if err != nil && !zkclient.IsDenied(err) {
			return nil, err
		}
		rs.DriverAlive = st != nil
	} else if st, err := p.exists(ctx, p.paths.Candidate()); err == nil && st != nil {
		rs.Leftover = true
	}
	return rs, nil
}

// RolloutW is Rollout with watches: changed is closed at the next change
// of the rollout record (a step recorded, a new rollout) or of its
// driver's liveness node (a driver starting or dying), or when ctx ends.
// A root never published reads as a RolloutState with an empty Stable
// manifest. The watches are set before the reads, so no change between
// them is missed.
func (p *Publisher) RolloutW(ctx context.Context) (rs *RolloutState, changed <-chan struct{}, err error) {
	conn := p.conn()
	_, _, recEv, err := conn.ExistsW(p.paths.Rollout())
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s: %w", p.paths.Rollout(), err)
	}
	rs, err = p.Rollout(ctx)
	if errors.Is(err, ErrNotPublished) {
		rs, err = &RolloutState{Root: p.paths.Root, Stable: &manifest.Manifest{}}, nil
		rec, _, rerr := p.readRecord(ctx)
		rs.Record, rs.RecordDenied = rec, zkclient.IsDenied(rerr)
	}
	if err != nil {
		return nil, nil, err
	}
	var driverEv <-chan zk.Event // nil (never fires) without a rollout
	if id := driverOf(rs); id != "" {
		var alive bool
		alive, _, driverEv, err = conn.ExistsW(p.paths.RolloutDriver() + "/" + id)
		if err != nil && !zkclient.IsDenied(err) {
			return nil, nil, fmt.Errorf("watch the rollout driver of %s: %w", id, err)
		}
		if rs.Canary != nil && rs.Canary.RolloutID == id {
			rs.DriverAlive = alive
		}
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		select {
		case <-ctx.Done():
		case <-recEv:
		case <-driverEv:
		}
	}()
	return rs, ch, nil
}

// driverOf is the rollout whose driver RolloutW follows: the one in
// progress, else the record's.
func driverOf(rs *RolloutState) string {
	switch {
	case rs.Canary != nil:
		return rs.Canary.RolloutID
	case rs.Record != nil:
		return rs.Record.RolloutID
	}
	return ""
}

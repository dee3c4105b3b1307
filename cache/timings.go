package cache

import "time"

// FetchTimings says how long the cache took to fetch, verify and persist a
// snapshot, for latency measurements: a consumer can log it beside its own
// timings to see where the time between a publish and its effect goes. It
// costs a few clock reads per fetch. A snapshot loaded from the state file
// has zero timings.
type FetchTimings struct {
	// Started is when the cycle that fetched the snapshot began: a watch
	// fired (the usual case), a session came back, a retry was due.
	Started time.Time
	// Fetched is from Started until every item was read and verified
	// (the root's read, and the marker's when one is checked, included).
	Fetched time.Duration
	// Read is the number of items read from ZooKeeper; the others were
	// the held snapshot's.
	Read int
	// Verify is the time spent checking items against the manifest,
	// summed over the reads (they overlap when several are in flight).
	Verify time.Duration
	// Persist is the time the state file write took (zero without one,
	// and while it runs: see Snapshot.Durable).
	Persist time.Duration
}

// Timings returns how the cache obtained s (see FetchTimings).
func (s *Snapshot) Timings() FetchTimings {
	if s == nil {
		return FetchTimings{}
	}
	t := s.timings
	if s.durable != nil {
		select {
		case <-s.durable.done:
			t.Persist = s.durable.persist
		default:
		}
	}
	return t
}

package cache

import (
	"sync/atomic"
	"time"
)

// Stats are a cache's counters since New. They only grow (LastApply aside).
type Stats struct {
	// Requests counts every request the cache sent to ZooKeeper: root
	// reads, marker checks, syncs and item reads.
	Requests uint64
	// RootReads counts reads of the root (its manifest and watch).
	RootReads uint64
	// MarkerChecks counts reads of the marker node. The cache reads it only
	// when the root's children changed since it last saw no marker, or on a
	// resync.
	MarkerChecks uint64
	// Syncs counts sync requests (one per new session or reconnect).
	Syncs uint64
	// ItemsFetched counts item reads (items, not requests: several small
	// items share one request).
	ItemsFetched uint64
	// ItemRequests counts the requests that read items: a Get of one
	// item, or a multiRead of several.
	ItemRequests uint64
	// Applied counts snapshots applied (handed out).
	Applied uint64
	// Resyncs counts full resyncs: after a reconnect, an expiry, or the
	// periodic safety net.
	Resyncs uint64
	// Reconnects counts new connections (within a session or after an
	// expiry) after the first.
	Reconnects uint64
	// Expiries counts session expiries.
	Expiries uint64
	// TornRetries counts reads abandoned because an item did not match the
	// manifest (a newer publish was landing).
	TornRetries uint64
	// BackwardsRejected counts root reads refused because they were not
	// newer than the held snapshot.
	BackwardsRejected uint64
	// MarkerWaits counts times the cache found a marker-mode publish in
	// progress and waited for it.
	MarkerWaits uint64
	// Errors counts failed requests (connection loss included).
	Errors uint64
	// PersistErrors counts failures to write the state file.
	PersistErrors uint64
	// IncarnationSwitches counts switches to a new incarnation of the root
	// (IncarnationFollow, or an adopted one).
	IncarnationSwitches uint64
	// IncarnationsRefused counts root reads refused because they named
	// another incarnation (IncarnationRefuse).
	IncarnationsRefused uint64
	// CandidateReads counts reads of a canary rollout's candidate manifest
	// (a member of its selection, WithLabels).
	CandidateReads uint64
	// LastApply is when the last snapshot was applied (zero: never).
	LastApply time.Time
}

// counters are a cache's Stats. The ones every publish moves come first,
// in one cache line: a fleet of caches in one process finds them cold at
// every publish.
type counters struct {
	requests, rootReads, itemsFetched, applied atomic.Uint64
	lastApply                                  atomic.Int64 // unix nanoseconds
	itemRequests                               atomic.Uint64
	markerChecks, syncs                        atomic.Uint64
	resyncs, reconnects, expiries, tornRetries atomic.Uint64
	backwardsRejected, markerWaits, errors     atomic.Uint64
	persistErrors, incarnationSwitches         atomic.Uint64
	incarnationsRefused, candidateReads        atomic.Uint64
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Requests:          c.requests.Load(),
		RootReads:         c.rootReads.Load(),
		MarkerChecks:      c.markerChecks.Load(),
		Syncs:             c.syncs.Load(),
		ItemsFetched:      c.itemsFetched.Load(),
		ItemRequests:      c.itemRequests.Load(),
		Applied:           c.applied.Load(),
		Resyncs:           c.resyncs.Load(),
		Reconnects:        c.reconnects.Load(),
		Expiries:          c.expiries.Load(),
		TornRetries:       c.tornRetries.Load(),
		BackwardsRejected: c.backwardsRejected.Load(),
		MarkerWaits:       c.markerWaits.Load(),
		Errors:            c.errors.Load(),
		PersistErrors:     c.persistErrors.Load(),

		IncarnationSwitches: c.incarnationSwitches.Load(),
		IncarnationsRefused: c.incarnationsRefused.Load(),
		CandidateReads:      c.candidateReads.Load(),
	}
	if ns := c.lastApply.Load(); ns != 0 {
		s.LastApply = time.Unix(0, ns)
	}
	return s
}

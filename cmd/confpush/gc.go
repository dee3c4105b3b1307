package main

import (
	"os"
	"runtime/debug"
)

// A publish's process is short-lived and, for a set of a few MiB, its
// whole heap is a few MiB too: package initialisation (about 0.7 MiB),
// the session's buffers (go-zookeeper's 1.5 MiB for each direction), the
// set, its hashes and the commit. At the runtime's default (GOGC=100, a
// first goal of 4 MiB) that crosses the goal once, and the one collection
// it starts costs about 9 ms of CPU, a sixth of a one-item publish's on
// the project's 2-core machine (issue 27; docs/bench/latency.md). With a
// set of at most shortPublishSetBytes the heap may grow to 4 times its
// live size before the collector runs instead: 16 MiB before the first
// collection, which a small publish never reaches. A larger set keeps the
// default, so its peak heap stays twice the live one.
//
// Since initialisation's heap shrank (earlier start-up cuts, then the
// publish-only command tree), a 20- or 100-item publish
// of 1 KiB items stays under the default's first goal as well: gctrace
// shows no collection at either setting, and faults and CPU are equal
// (docs/bench/latency-pushfaults-2026-11-27b/notes.md, table E). The
// raise is kept for the sets between those and shortPublishSetBytes,
// which would cross 4 MiB.
const (
	shortPublishGCPercent = 400
	shortPublishSetBytes  = 4 << 20
)

// relaxGCForPublish raises the collector's percentage to
// shortPublishGCPercent for a publish, unless GOGC in the environment says
// otherwise, and returns settle, which the publish calls once its set is
// read: a set over shortPublishSetBytes puts the runtime's setting back.
//
// The raise comes before the set is known because the session is dialed
// while the set is read (startDial): the dial allocates go-zookeeper's two
// 1.5 MiB buffers, which with initialisation's heap cross the default's
// first goal, and raised only after the read, a collection had often
// started already (12 of 40 publishes under perf, each a tenth of that
// publish's CPU; docs/bench/latency-pushpath-2026-11-27b/notes.md).
// Reading the set makes little garbage (each item is read into a buffer
// of its size), so the raise does not grow a large set's peak heap before
// settle.
func relaxGCForPublish() (settle func(items map[string][]byte)) {
	if os.Getenv("GOGC") != "" {
		return func(map[string][]byte) {}
	}
	prev := debug.SetGCPercent(shortPublishGCPercent)
	return func(items map[string][]byte) {
		n := 0
		for _, b := range items {
			n += len(b)
			if n > shortPublishSetBytes {
				debug.SetGCPercent(prev)
				return
			}
		}
	}
}

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
const (
	shortPublishGCPercent = 400
	shortPublishSetBytes  = 4 << 20
)

// relaxGCForPublish lets the heap of a publish of items grow to
// shortPublishGCPercent before the first collection when the set is
// small, unless GOGC in the environment says otherwise.
func relaxGCForPublish(items map[string][]byte) {
	if os.Getenv("GOGC") != "" {
		return
	}
	n := 0
	for _, b := range items {
		n += len(b)
		if n > shortPublishSetBytes {
			return
		}
	}
	debug.SetGCPercent(shortPublishGCPercent)
}

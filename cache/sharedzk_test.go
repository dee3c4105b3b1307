package cache

import "github.com/zkconf/zkconf/internal/zktest"

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper": each gets it emptied through For. The tests that stop,
// restart or wipe a server, or reach it through a fault proxy, start
// their own.
var sharedZooKeeper zktest.Shared

// SharedZooKeeper hands sharedZooKeeper to the examples (package
// cache_test, which cannot name it): they run after every test, when For's
// cleanups have left the server empty, and use roots of their own, so the
// binary starts one JVM rather than a second for them. TestMain stops it
// after m.Run.
func SharedZooKeeper() *zktest.Shared { return &sharedZooKeeper }

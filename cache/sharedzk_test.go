package cache

import "github.com/zkconf/zkconf/internal/zktest"

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper": each gets it emptied through For. The tests that stop,
// restart or wipe a server, or reach it through a fault proxy, start
// their own.
var sharedZooKeeper zktest.Shared

// StopSharedZooKeeper stops sharedZooKeeper; TestMain (example_test.go,
// package cache_test, which cannot name it) calls it after m.Run.
func StopSharedZooKeeper() { sharedZooKeeper.Stop() }

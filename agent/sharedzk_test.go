package agent_test

import (
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper": each gets it emptied through For. The tests that stop,
// wipe or cut off a server start their own, and call t.Parallel: they
// share nothing with each other and mostly wait (for a session to
// expire, a server to come back), and Go runs parallel tests only after
// all the serial ones, so they never overlap the tests on this server.
var sharedZooKeeper zktest.Shared

// TestMain stops the shared server after the run.
func TestMain(m *testing.M) { sharedZooKeeper.Main(m) }

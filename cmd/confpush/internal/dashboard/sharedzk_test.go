package dashboard_test

import (
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper" (startWith): each gets it emptied through For, so the fixed
// root /config is the test's own. TestEventsAndRestart, which stops its
// server, starts its own.
var sharedZooKeeper zktest.Shared

// TestMain stops the shared server after the run.
func TestMain(m *testing.M) { sharedZooKeeper.Main(m) }

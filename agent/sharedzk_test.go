package agent_test

import (
	"os"
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper": each gets it emptied through For. The tests that stop or
// wipe a server start their own.
var sharedZooKeeper zktest.Shared

// TestMain stops the shared server after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedZooKeeper.Stop()
	os.Exit(code)
}

package zkclient

import (
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper" (the host-list tests): each gets it emptied through For. The
// tests that stop, wipe or proxy a server, count its sessions or need TLS
// start their own.
var sharedZooKeeper zktest.Shared

// TestMain stops the shared server after the run.
func TestMain(m *testing.M) { sharedZooKeeper.Main(m) }

package access_test

import (
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper": each gets it emptied through For, with /, /zookeeper and
// /zookeeper/quota back to a fresh server's data and ACLs (Init locks
// /zookeeper/quota), so the ACLs and quotas a test sets are its own.
// TestAgentIdentityFloodRefused (server-wide counters) and
// TestQuotaEnforcementProbe (a server without enforced quotas) start
// their own.
var sharedZooKeeper zktest.Shared

// TestMain stops the shared server after the run.
func TestMain(m *testing.M) { sharedZooKeeper.Main(m) }

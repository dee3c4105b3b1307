package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper" (startZK): each gets it emptied through For. It allows
// sessions of up to 30 s, so that a loaded test machine (stalls of
// seconds) does not drop the tests' sessions. The tests that reach a
// server through a fault proxy or need a TLS server start their own.
var sharedZooKeeper = zktest.Shared{Options: zktest.Options{MaxSessionTimeout: 30 * time.Second}}

// testBinaries holds the binaries the tests run as subprocesses.
var testBinaries binaries

// TestMain stops the shared server and removes the built binaries after
// the run.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedZooKeeper.Stop()
	testBinaries.remove()
	os.Exit(code)
}

// binaries builds each package's binary once for the test binary rather
// than once per test: a link costs seconds of CPU. The tests only run
// them.
type binaries struct {
	mu    sync.Mutex
	dir   string
	built map[string]string // pkg → binary
}

func (b *binaries) build(t *testing.T, pkg, name string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if bin, ok := b.built[pkg]; ok {
		return bin
	}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "confpush-test-bin")
		if err != nil {
			t.Fatal(err)
		}
		b.dir, b.built = dir, map[string]string{}
	}
	bin := filepath.Join(b.dir, fmt.Sprint(len(b.built)), name)
	if err := os.Mkdir(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	b.built[pkg] = bin
	return bin
}

func (b *binaries) remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
	b.dir, b.built = "", nil
}

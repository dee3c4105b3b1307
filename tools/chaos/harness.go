package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// harness implements zktest.TB for a run, so that the same ZooKeeper
// harness serves `go test` and the confchaos program. Fatalf panics with a
// fatalError, which the goroutine that called into the harness recovers and
// turns into a run error (testing.T.Fatalf may not be called from other
// goroutines, and a program has no test to fail).
type harness struct {
	base string

	mu       sync.Mutex
	cleanups []func()
	n        int
}

type fatalError struct{ msg string }

func (f fatalError) Error() string { return f.msg }

func (h *harness) Helper() {}

func (h *harness) Fatalf(format string, args ...any) {
	panic(fatalError{fmt.Sprintf(format, args...)})
}

func (h *harness) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

func (h *harness) TempDir() string {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	d := filepath.Join(h.base, fmt.Sprintf("tmp%d", n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		h.Fatalf("harness: %v", err)
	}
	return d
}

// cleanup runs the registered clean-ups, newest first.
func (h *harness) cleanup() {
	h.mu.Lock()
	cs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// recoverFatal turns a harness panic into *errp; other panics propagate.
func recoverFatal(errp *error) {
	if r := recover(); r != nil {
		if f, ok := r.(fatalError); ok {
			*errp = f
			return
		}
		panic(r)
	}
}

package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
)

// heldSnapshot is a snapshot whose state is still being written when the
// renderer gets it (cache.WithDurableBarrier): Durable says so on called
// and returns what release delivers.
type heldSnapshot struct {
	agent.Snapshot
	id      string
	called  chan struct{}
	release chan error
}

func newHeld(gen int64, items map[string][]byte) *heldSnapshot {
	return &heldSnapshot{Snapshot: agent.NewSnapshot(gen, items), id: fmt.Sprintf("p%d", gen),
		called: make(chan struct{}, 1), release: make(chan error, 1)}
}

func (s *heldSnapshot) PublishID() string { return s.id }

func (s *heldSnapshot) Durable(ctx context.Context) error {
	select {
	case s.called <- struct{}{}:
	default:
	}
	select {
	case err := <-s.release:
		s.release <- err // every later call gets the same answer
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestCommitWaitsForDurableState: the renderer stages a snapshot while its
// state is written, but no output shows the generation before the
// snapshot's Durable returns (the barrier: a crash before that point
// restarts from the older state, and an output already showing the newer
// generation would go backwards); once it returns, every target shows it.
// A state that cannot be made durable aborts the apply: the staged outputs
// are removed, the last good generation stays in place, the generation is
// retried (not rejected), and its retry, durable, shows it.
func TestCommitWaitsForDurableState(t *testing.T) {
	out := t.TempDir()
	specs := []agent.TargetSpec{
		dirSpec(join(out, "dir")),
		{Name: "one", Kind: agent.KindFile, Item: "a", Dest: join(out, "a"), Mode: 0o640, UID: -1, GID: -1},
		{Name: "tmpl", Kind: agent.KindTemplate, Template: `{{item "a"}}/{{item "b"}}`, Dest: join(out, "t"), Mode: 0o644, UID: -1, GID: -1},
	}
	r, err := agent.NewRenderer(specs, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gen := func(g int64) map[string][]byte {
		return map[string][]byte{"a": fmt.Appendf(nil, "a%d", g), "b": fmt.Appendf(nil, "b%d", g)}
	}
	shows := func(g int64) error {
		want := map[string]string{
			join(out, "dir/a"): fmt.Sprintf("a%d", g), join(out, "dir/b"): fmt.Sprintf("b%d", g),
			join(out, "a"): fmt.Sprintf("a%d", g), join(out, "t"): fmt.Sprintf("a%d/b%d", g, g),
		}
		for p, w := range want {
			if b, err := os.ReadFile(p); err != nil || string(b) != w {
				return fmt.Errorf("%s: %q %v, want %q (generation %d)", p, b, err, w, g)
			}
		}
		return nil
	}
	entries := func() []string {
		var names []string
		_ = filepath.WalkDir(out, func(p string, e os.DirEntry, _ error) error {
			if e != nil && e.IsDir() && e.Name() == render.PoolDir {
				// The dir target's pool of empty files: refilled after
				// every apply, aborted or not; nothing staged.
				return filepath.SkipDir
			}
			names = append(names, p)
			return nil
		})
		return names
	}

	g1 := newHeld(1, gen(1))
	g1.release <- nil
	if o := r.Apply(ctx, g1); o.Err != nil {
		t.Fatal(o.Err)
	}
	if err := shows(1); err != nil {
		t.Fatal(err)
	}

	// Generation 2: its state is held.
	g2 := newHeld(2, gen(2))
	done := make(chan agent.Outcome, 1)
	go func() { done <- r.Apply(ctx, g2) }()
	select {
	case <-g2.called:
	case o := <-done:
		t.Fatalf("the apply of generation 2 ended without waiting for its state: %+v", o)
	case <-time.After(2 * time.Minute):
		t.Fatal("the renderer never waited for generation 2's state")
	}
	// Staged (Durable is called after stage and check), not shown.
	if err := shows(1); err != nil {
		t.Fatalf("an output shows generation 2 before its state is durable: %v", err)
	}
	select {
	case o := <-done:
		t.Fatalf("the apply of generation 2 ended while its state is held: %+v", o)
	default:
	}
	g2.release <- nil
	var o agent.Outcome
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the apply did not end once the state was durable")
	}
	if o.Err != nil || len(o.Changed) != len(specs) {
		t.Fatalf("generation 2: %+v", o)
	}
	if err := shows(2); err != nil {
		t.Fatal(err)
	}
	before := entries()

	// Generation 3: its state cannot be made durable.
	errState := errors.New("state not durable")
	g3 := newHeld(3, gen(3))
	g3.release <- errState
	o = r.Apply(ctx, g3)
	if !errors.Is(o.Err, errState) || !strings.Contains(o.Err.Error(), "generation 3 not applied yet, retried: its state is not durable") ||
		o.Rejected || !o.Retry || len(o.Changed) != 0 {
		t.Fatalf("generation 3, state not durable: %+v", o)
	}
	if err := shows(2); err != nil {
		t.Fatalf("generation 3 shown though its state is not durable: %v", err)
	}
	if after := entries(); !slices.Equal(after, before) {
		t.Fatalf("the aborted apply left files behind:\nbefore %v\nafter  %v", before, after)
	}
	if a := r.Applied(); a == nil || a.Generation() != 2 {
		t.Fatalf("applied %v, want generation 2", a)
	}

	// Its retry, once the state is durable, shows it.
	<-g3.release
	g3.release <- nil
	if o := r.Apply(ctx, g3); o.Err != nil || o.Skipped {
		t.Fatalf("generation 3, retried: %+v", o)
	}
	if err := shows(3); err != nil {
		t.Fatal(err)
	}
}

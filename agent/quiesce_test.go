package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
)

// genTarget renders the generation number; its reload appends the
// rendered file to reloads, so the reload log lists the generations that
// were applied, in order.
func genTarget(out, reloads string) agent.TargetSpec {
	dest := join(out, "gen.txt")
	return agent.TargetSpec{Name: "gen", Kind: agent.KindTemplate, Template: "{{ generation }}\n", Dest: dest,
		Mode: 0o644, UID: -1, GID: -1, Reload: "cat " + dest + " >> " + reloads}
}

// reloaded returns the generations the reload log lists.
func reloaded(t *testing.T, reloads string) []int64 {
	t.Helper()
	b, err := os.ReadFile(reloads)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var gens []int64
	for _, f := range strings.Fields(string(b)) {
		g, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("reload log %q", b)
		}
		gens = append(gens, g)
	}
	return gens
}

// eventually polls cond until it holds, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCached waits until the daemon's cache holds generation g: the agent
// has seen it arrive.
func waitCached(t *testing.T, r *running, g int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("received generation %d", g), func() bool {
		s := r.d.Cache().Snapshot()
		return s != nil && s.Generation() >= g
	})
}

// genFixture is a root at generation 1 and a genTarget writing below out.
type genFixture struct {
	c            *zktest.Cluster
	p            *publish.Publisher
	out, reloads string
}

func newGenFixture(t *testing.T) genFixture {
	c := sharedZooKeeper.For(t)
	f := genFixture{c: c, p: publisher(t, c), out: t.TempDir(), reloads: filepath.Join(t.TempDir(), "reloads")}
	mustPublish(t, f.p, map[string]string{"a": "0"})
	return f
}

// start starts a daemon with the fixture's target and the options set.
func (f genFixture) start(t *testing.T, stateDir string, set func(*agent.Options)) *running {
	return startDaemon(t, f.c.Addrs(), stateDir, []agent.TargetSpec{genTarget(f.out, f.reloads)}, set)
}

// TestWaitCoalescesBurst: with a wait, generations that arrive one after
// the other within the quiet period are applied once, as the newest.
func TestWaitCoalescesBurst(t *testing.T) {
	f := newGenFixture(t)
	p, out, reloads := f.p, f.out, f.reloads
	// min is far longer than the burst takes (each publish is awaited in
	// the agent's cache, so every generation arrives on its own); max is
	// out of reach.
	r := f.start(t, t.TempDir(), func(o *agent.Options) {
		o.WaitMin, o.WaitMax = 10*time.Second, time.Hour
	})
	r.waitGeneration(t, 1)
	var last int64
	for i := range 5 {
		last = mustPublish(t, p, map[string]string{"a": fmt.Sprint(i + 1)}).Generation
		waitCached(t, r, last)
	}
	r.waitGeneration(t, last)
	if got, want := reloaded(t, reloads), []int64{1, last}; !slices.Equal(got, want) {
		t.Fatalf("applied generations %v, want %v: the burst was not coalesced", got, want)
	}
	if got := readFile(t, join(out, "gen.txt")); got != fmt.Sprintf("%d\n", last) {
		t.Fatalf("rendered %q, want generation %d", got, last)
	}
}

// TestWaitMaxBoundsStream: a stream of publishes that never leaves a quiet
// period is still applied, within max of its start, only ever forwards,
// and its last generation is applied once the stream stops.
func TestWaitMaxBoundsStream(t *testing.T) {
	f := newGenFixture(t)
	p, reloads := f.p, f.reloads
	// The stream's publishes follow each other far faster than min: only
	// max ends its wait.
	r := f.start(t, t.TempDir(), func(o *agent.Options) {
		o.WaitMin, o.WaitMax = 10*time.Second, 15*time.Second
	})
	var last int64
	deadline := time.Now().Add(60 * time.Second)
	for i := 1; len(reloaded(t, reloads)) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("nothing applied during a 60 s stream of publishes with wait.max 15s")
		}
		last = mustPublish(t, p, map[string]string{"a": fmt.Sprint(i)}).Generation
		waitCached(t, r, last)
	}
	// The stream stops: its newest generation is applied, after max.
	r.waitGeneration(t, last)
	gens := reloaded(t, reloads)
	if gens[len(gens)-1] != last {
		t.Fatalf("applied generations %v, want the last to be %d", gens, last)
	}
	for i := 1; i < len(gens); i++ {
		if gens[i] <= gens[i-1] {
			t.Fatalf("applied generations %v go backwards", gens)
		}
	}
}

// TestReloadSplay: a splayed reload runs; the swap is not delayed by it;
// and an agent stopping during a splay runs the reload before it exits
// rather than waiting the splay out.
func TestReloadSplay(t *testing.T) {
	f := newGenFixture(t)
	p, out, reloads := f.p, f.out, f.reloads
	state := t.TempDir()
	r := f.start(t, state, func(o *agent.Options) {
		o.ReloadSplay = 500 * time.Millisecond
	})
	r.waitGeneration(t, 1)
	if got := reloaded(t, reloads); !slices.Equal(got, []int64{1}) {
		t.Fatalf("reloads %v, want [1]", got)
	}
	r.stop()

	// A splay of an hour: the new output is in place at once, and
	// stopping the agent ends the splay with the reload.
	r = f.start(t, state, func(o *agent.Options) {
		o.ReloadSplay = time.Hour
	})
	g := mustPublish(t, p, map[string]string{"a": "1"}).Generation
	eventually(t, fmt.Sprintf("wrote generation %d", g), func() bool {
		b, _ := os.ReadFile(join(out, "gen.txt"))
		return string(b) == fmt.Sprintf("%d\n", g)
	})
	r.stop()
	if got := reloaded(t, reloads); !slices.Equal(got, []int64{1, g}) {
		t.Fatalf("reloads %v after stopping during the splay, want [1 %d]", got, g)
	}
}

// TestTemplateHostFacts: template targets see the agent's configured
// labels (and the hostname label), its hostname and its environment.
func TestTemplateHostFacts(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	t.Setenv("ZKCONF_TEST_REGION", "eu-west")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	spec := agent.TargetSpec{Name: "facts", Kind: agent.KindTemplate, Dest: join(out, "facts"), Mode: 0o644, UID: -1, GID: -1,
		Template: `{{ label "role" }} {{ label "hostname" }} {{ hostname }} {{ env "ZKCONF_TEST_REGION" }} {{ item "a" }}`}
	mustPublish(t, p, map[string]string{"a": "x"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{spec}, func(o *agent.Options) {
		o.Labels = map[string]string{"role": "web"}
	})
	r.waitGeneration(t, 1)
	if got, want := readFile(t, join(out, "facts")), "web "+host+" "+host+" eu-west x"; got != want {
		t.Fatalf("rendered %q, want %q", got, want)
	}
}

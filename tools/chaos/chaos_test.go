package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/tools/internal/confagentbin"
)

// TestChaos is the 90-second chaos run of `make test` (`make chaos` runs
// the 10-minute one). CHAOS_SEED replays a seed, CHAOS_TEST_DURATION
// changes the length. Skipped with -short.
//
// `make test` runs it beside the other packages on a 2-core machine, so its
// time bounds are liveness deadlines, not the timing claim: a slack of
// smokeSlack (not 15s) in the convergence bound and for an agent's SIGTERM
// exit and configuration reload (a recovery after an agent cut took 18s of
// the default 25s bound with two CPU-bound processes beside it). Every
// safety property is checked as in `make chaos`.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes 90s against a real ensemble; skipped with -short")
	}
	const smokeSlack = time.Minute
	cfg := Config{Duration: 90 * time.Second, Out: testWriter{t}, Slack: smokeSlack}
	if s := os.Getenv("CHAOS_TEST_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CHAOS_TEST_DURATION: %v", err)
		}
		cfg.Duration = d
	}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		cfg.Seed = seed
	}
	work, err := os.MkdirTemp("", "zkconf-chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	cfg.WorkDir = work
	cfg.Confagent, cfg.Confpush = buildCommands(t, work)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+5*time.Minute)
	defer cancel()
	sum, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("chaos harness: %v (work directory kept: %s)", err, work)
	}
	t.Log("\n" + sum.Text())
	// Rollouts are part of every run: at least the closing canary, left
	// open, whose selection every agent's final state is checked against.
	if !sum.ClosingCanary || sum.Rollouts.Started == 0 || sum.FinalSelections != sum.Agents || len(sum.Relabelled) != 2 {
		t.Errorf("the run took no canary rollout (closing canary %v, %d started, %d of %d agents checked by selection, relabelled %v)",
			sum.ClosingCanary, sum.Rollouts.Started, sum.FinalSelections, sum.Agents, sum.Relabelled)
	}
	// Two roots are part of every run: agents following /common beside
	// /chaos, whose template over both rendered combinations the checker
	// proved cuts.
	if r := sum.Roots; r.Agents == 0 || r.Acked == 0 || r.CutStates == 0 || r.DirStates == 0 {
		t.Errorf("the run exercised no second root (%d agents on it, %d publishes to it acknowledged, %d combinations, %d dir states checked)",
			r.Agents, r.Acked, r.CutStates, r.DirStates)
	}
	if sum.HostileSteps == 0 {
		t.Errorf("no hostile-agent step was checked (%d skipped)", sum.HostileSkipped)
	}
	if sum.Failed() {
		t.Errorf("%d violations; replay with CHAOS_SEED=%d (work directory kept: %s)\n%s",
			len(sum.Violations), sum.Seed, work, sum.ViolationsText(10))
		return
	}
	os.RemoveAll(work)
}

// testWriter sends progress lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaosDetectsSabotage runs a short chaos run in which the harness
// itself corrupts an agent's outputs, and checks that the checker reports
// it. Opt-in (CHAOS_SELFTEST=1): it costs a minute.
func TestChaosDetectsSabotage(t *testing.T) {
	if os.Getenv("CHAOS_SELFTEST") == "" {
		t.Skip("set CHAOS_SELFTEST=1 to run the checker's end-to-end self-test")
	}
	work := t.TempDir()
	cfg := Config{Duration: 50 * time.Second, Out: testWriter{t}, WorkDir: work, sabotage: true}
	cfg.Confagent, cfg.Confpush = buildCommands(t, work)
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sum.Text() + sum.ViolationsText(5))
	got := map[string]bool{}
	for _, v := range sum.Violations {
		if v.Agent == 1 {
			got[v.Property] = true
		}
	}
	for _, p := range []string{"P1-torn", "P3-partial"} {
		if !got[p] {
			t.Errorf("the sabotage was not reported as %s", p)
		}
	}
}

// buildCommands builds confagent and confpush into dir.
func buildCommands(t *testing.T, dir string) (confagent, confpush string) {
	t.Helper()
	confagent, confpush = filepath.Join(dir, "confagent"), filepath.Join(dir, "confpush")
	for name, out := range map[string]string{"confagent": confagent, "confpush": confpush} {
		if err := confagentbin.BuildCommand(context.Background(), name, out); err != nil {
			t.Fatal(err)
		}
	}
	return confagent, confpush
}

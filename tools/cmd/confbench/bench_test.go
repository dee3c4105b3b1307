package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/tools/bench"
)

// TestSmoke runs the harness's smoke version end to end (own ZooKeeper,
// N=10 followers of each kind, one confagent, a short footprint) and checks
// the harness itself, not performance: every follower reached every
// generation, the request counts are the ones each kind must make and the
// three ways of counting them agree, and the report, JSON and chart are
// written.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and a confagent; run without -short (make test)")
	}
	rep, out := runSmoke(t, "--quick", "--confagents", "1", "--footprint-idle", "500ms", "--footprint-load", "1s")
	s := rep.Settings
	if len(rep.Runs) != 1 || len(s.Fleets) != 1 || s.Fleets[0] != 10 {
		t.Fatalf("runs %d, fleets %v: want one run at N=10", len(rep.Runs), s.Fleets)
	}
	run := rep.Runs[0]
	if len(run.Fleets) != 3 {
		t.Fatalf("%d fleet results, want 3 (zkconf, floor, naive)", len(run.Fleets))
	}
	want := map[string]float64{"zkconf": float64(1 + s.Changed), "floor": float64(1 + s.Changed), "naive": float64(1 + s.Items)}
	for _, f := range run.Fleets {
		w, ok := want[f.Kind]
		if !ok {
			t.Errorf("unexpected kind %q", f.Kind)
			continue
		}
		delete(want, f.Kind)
		// Every follower reached every measured generation.
		if f.Propagation.N != f.N*s.Publishes || f.Last.N != s.Publishes || f.Publish.N != s.Publishes {
			t.Errorf("%s: %d propagation samples, %d last-follower, %d publish; want %d, %d, %d",
				f.Kind, f.Propagation.N, f.Last.N, f.Publish.N, f.N*s.Publishes, s.Publishes, s.Publishes)
		}
		checkDist(t, f.Kind+" propagation", f.Propagation)
		checkDist(t, f.Kind+" last follower", f.Last)
		checkDist(t, f.Kind+" publish", f.Publish)
		// One root read plus the changed items (floor, zkconf), or every
		// item (naive), and all three counts agree.
		if f.ClientRequests != w || f.WireRequests != w {
			t.Errorf("%s: %.2f requests per publish per follower (client), %.2f (wire), want %.0f", f.Kind, f.ClientRequests, f.WireRequests, w)
		}
		if math.Abs(f.ServerRequests-w) > 0.1 {
			t.Errorf("%s: the server counted %.2f requests per publish per follower, want %.0f", f.Kind, f.ServerRequests, w)
		}
		if f.Ops["getData"] != w {
			t.Errorf("%s: getData per publish per follower %.2f, want %.0f (ops %v)", f.Kind, f.Ops["getData"], w, f.Ops)
		}
		if f.SessionEvents != 0 {
			t.Errorf("%s: %d session events during the measurement", f.Kind, f.SessionEvents)
		}
		if f.Discrepancy < -2 || f.Discrepancy > 2 {
			t.Errorf("%s: server packets minus tapped packets = %d", f.Kind, f.Discrepancy)
		}
	}
	if rep.FramingErrors != 0 {
		t.Errorf("%d tap framing errors", rep.FramingErrors)
	}
	if a := run.Agents; a == nil || a.File.N != s.Publishes || a.Status.N != s.Publishes {
		t.Errorf("confagent results %+v: want %d file and status samples", a, s.Publishes)
	} else {
		checkDist(t, "confagent file", a.File)
		if a.ServerRequests < 2 {
			t.Errorf("confagent: %.2f server requests per publish, want at least a root and an item read", a.ServerRequests)
		}
	}
	if pc := run.Publish; pc == nil || pc.Publish.N != s.Publishes || pc.Raw.N != s.Publishes || pc.RawTxn.N != s.Publishes || !(pc.Ratio > 0) {
		t.Errorf("publish cost %+v: want %d samples of each and a ratio", pc, s.Publishes)
	}
	if f := rep.Footprint; f == nil || f.IdleRSS <= 0 || f.LoadRSS <= 0 || f.Publishes != 1 || f.IdleCPU < 0 {
		t.Errorf("footprint %+v", f)
	}
	if n := len(rep.Targets()); n != 10 {
		t.Errorf("%d targets evaluated, want 10", n)
	}

	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"## Targets", "| 10 | zkconf cache |", "| 10 | floor (raw) |", "| 10 | naive (raw) |", "propagation.png", "## confagent footprint"} {
		if !strings.Contains(string(md), h) {
			t.Errorf("results.md lacks %q", h)
		}
	}
	f, err := os.Open(filepath.Join(out, "propagation.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil || img.Width < 400 || img.Height < 200 {
		t.Errorf("propagation.png: %+v, %v", img, err)
	}
}

// runSmoke runs confbench with args and --out a temporary directory, and
// returns the report it wrote and the directory.
func runSmoke(t *testing.T, args ...string) (*bench.Report, string) {
	t.Helper()
	var rep bench.Report
	out := runConfbench(t, "results.json", &rep, args...)
	return &rep, out
}

// runConfbench runs confbench with args and --out a temporary directory,
// fails the test when it exits non-zero, decodes the JSON report file of
// that directory into rep and returns the directory.
func runConfbench(t *testing.T, file string, rep any, args ...string) string {
	t.Helper()
	out := t.TempDir()
	// A hang bound, not a speed claim: the latency smoke hit 3 minutes at
	// load 30 (its four builds, ZooKeeper and three sets).
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, append(args, "--out", out), &stdout, &stderr); code != 0 {
		t.Fatalf("confbench %s exited %d:\n%s", strings.Join(args, " "), code, stderr.String())
	}
	t.Log(stdout.String())
	b, err := os.ReadFile(filepath.Join(out, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, rep); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkDist(t *testing.T, what string, d bench.Dist) {
	t.Helper()
	if !(d.P50 > 0 && d.P50 <= d.P99 && d.P99 <= d.Max) {
		t.Errorf("%s: p50 %.3f, p99 %.3f, max %.3f: want 0 < p50 ≤ p99 ≤ max", what, d.P50, d.P99, d.Max)
	}
}

// TestFlags checks that --quick picks the smoke defaults and explicit flags
// override them.
func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	cfg, out, err := parseFlags([]string{"--quick", "--agents", "3,30", "--items", "7", "--out", "x"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if out != "x" || len(cfg.Fleets) != 2 || cfg.Fleets[1] != 30 || cfg.Items != 7 || !cfg.Quick || cfg.Publishes != bench.QuickConfig().Publishes {
		t.Errorf("quick with overrides: %+v, out %q", cfg, out)
	}
	cfg, _, err = parseFlags(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quick || cfg.Publishes < 50 || len(cfg.Fleets) != 4 || cfg.Fleets[3] != 1000 || cfg.Items != 20 || cfg.ItemSize != 1024 {
		t.Errorf("defaults: %+v", cfg)
	}
	sizes, err := parseSizes("1k, 4K,64k,100")
	if err != nil || !slices.Equal(sizes, []int{1024, 4096, 65536, 100}) {
		t.Errorf("parseSizes: %v, %v", sizes, err)
	}
	for _, bad := range []string{"", "0", "-1k", "1m", "k"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
	if _, _, err := parseFlags([]string{"--agents", "1,x"}, &stderr); err == nil {
		t.Error("--agents 1,x accepted")
	}
}

// TestParseIndependent checks confbench latency's --independent: all is
// every shape of the sets once (whatever their sizes), none is nothing,
// a list is shapes, and a bad shape is refused.
func TestParseIndependent(t *testing.T) {
	sets := bench.LatencySets([]bench.LatencySet{{Items: 20, Changed: 1}, {Items: 100, Changed: 100}}, []int{1024, 65536})
	for _, c := range []struct {
		in   string
		want []bench.LatencySet
	}{
		{"all", []bench.LatencySet{{Items: 20, Changed: 1}, {Items: 100, Changed: 100}}},
		{"none", nil},
		{"20/20, 100/1", []bench.LatencySet{{Items: 20, Changed: 20}, {Items: 100, Changed: 1}}},
	} {
		got, err := parseIndependent(c.in, sets)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("parseIndependent(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "some", "20/21", "20"} {
		if _, err := parseIndependent(bad, sets); err == nil {
			t.Errorf("parseIndependent(%q) accepted", bad)
		}
	}
}

// TestSmokeObservers runs the large-fleet paths small: an ensemble of 3
// voters and 1 observer with the followers on the observer only, one kind
// of follower per pass, and the herd (the observer restarted under its
// followers, with and without a publish). It checks the harness, not
// performance: every follower reached every generation through the
// observer, the restart moved followers that resynced, and the report
// names the servers and the herd's phases.
func TestSmokeObservers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper ensemble; run without -short (make test)")
	}
	rep, out := runSmoke(t, "--quick", "--ensemble", "3", "--observers", "1", "--server-heap", "256m",
		"--agents", "5", "--kinds", "zkconf,floor", "--one-kind-per-pass", "--publishes", "2",
		"--herd", "6", "--resync-jitter", "100ms")
	if rep.Env.Observers != 1 || len(rep.Env.Roles) != 4 || rep.Env.Roles[3] != "4 observer" {
		t.Fatalf("servers: %d observers, roles %q; want 3 voters and observer 4", rep.Env.Observers, rep.Env.Roles)
	}
	fleets := rep.Runs[0].Fleets
	if len(fleets) != 2 || fleets[0].Kind != "zkconf" || fleets[1].Kind != "floor" {
		t.Fatalf("fleet results %+v: want zkconf then floor", fleets)
	}
	for _, f := range fleets {
		if f.Propagation.N != 5*2 || f.SessionEvents != 0 {
			t.Errorf("%s: %d propagation samples, %d session events; want 10 and 0", f.Kind, f.Propagation.N, f.SessionEvents)
		}
		// Only the observer serves followers: it did work for them.
		if len(f.ServerCPUEach) != 4 {
			t.Errorf("%s: server CPU of %d servers, want 4", f.Kind, len(f.ServerCPUEach))
		}
	}
	h := rep.Herd
	if h == nil || h.N != 6 || len(h.Phases) != 3 {
		t.Fatalf("herd %+v: want 6 followers and 3 phases", h)
	}
	for _, p := range h.Phases {
		restart := p.Name != "publish"
		// One observer: every follower was on it and had to move.
		if restart && (p.Restarted != "4 observer" || p.Moved != 6 || p.RequestsPerMovedFollower <= 0) {
			t.Errorf("phase %s: restarted %q, moved %d, %.2f requests per moved follower; want observer 4, 6, some",
				p.Name, p.Restarted, p.Moved, p.RequestsPerMovedFollower)
		}
		if !restart && (p.Moved != 0 || p.RequestsPerFollower <= 0) {
			t.Errorf("phase publish: moved %d, %.2f requests per follower", p.Moved, p.RequestsPerFollower)
		}
		if len(p.ServerCPUMS) != 4 || len(p.PeakCores) != 4 {
			t.Errorf("phase %s: CPU of %d servers, peaks of %d; want 4", p.Name, len(p.ServerCPUMS), len(p.PeakCores))
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Server CPU per publish, server by server", "| 4 observer |", "## Herd: 6 zkconf followers", "| restart+publish | 4 observer | 6 |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("results.md lacks %q", s)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zkconf/zkconf/tools/bench"
)

// runLatency is `confbench latency`: the single-host benchmark.
func runLatency(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("confbench latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := bench.DefaultLatencyConfig()
	var (
		zk        = fs.String("zk", "", "ZooKeeper servers (host:port,...); empty starts a throw-away standalone server")
		sets      = fs.String("sets", formatSets(bench.LatencyShapes), "set shapes measured: items/changed,...")
		itemSizes = fs.String("item-sizes", formatSizes(bench.LatencySizes), "item sizes, each shape measured at each: 1k,4k,64k or bytes")
		publishes = fs.Int("publishes", d.Publishes, "measured publishes per set and publisher")
		warmup    = fs.Int("warmup", d.Warmup, "unmeasured publishes before each measurement")
		gap       = fs.Duration("gap", d.Gap, "pause between publishes, once every follower caught up")
		memItems  = fs.Int("memory-items", d.Memory.Items, "items of the memory run (dir target only, one changed per publish; 0: none)")
		memSize   = fs.String("memory-item-size", formatSizes([]int{d.Memory.Size}), "item size of the memory run")
		memPubs   = fs.Int("memory-publishes", d.MemoryPublishes, "measured publishes of the memory run")
		indep     = fs.String("independent", "all", "shapes (items/changed, at every size) whose sets get a second in-process pass with the agent restarted under apply: independent, the dir target like for like with the confd-style follower's file: all (every shape of --sets), none, or 20/1,20/20,...")
		alone     = fs.Bool("confpush-alone", d.ConfPushAlone, "per set, confpush against its floor like for like: both publishing roots nobody watches, alternated (the target's verdict; false: only the confpush phase under the agents' load, reported as information)")
		agentBin  = fs.String("confagent-bin", "", "confagent binary (default: go build ./cmd/confagent)")
		pushBin   = fs.String("confpush-bin", "", "confpush binary (default: go build ./cmd/confpush)")
		agentEnv  = fs.String("confagent-env", "", "KEY=VALUE,... added to the agent's environment (e.g. GOMEMLIMIT=off)")
		zkrawBin  = fs.String("zkraw-bin", "", "zkraw binary, the raw go-zookeeper follower (default: go build ./cmd/zkraw in the tools module)")
		floorBin  = fs.String("zkfloor-bin", "", "zkfloor binary, confpush's raw go-zookeeper floor (default: go build ./cmd/zkfloor in the tools module)")
		perfDir   = fs.String("perf", "", "directory for perf profiles of the agent, one per set (perf record -g over the measured publishes: perf.data and report text; a separate run: perf costs CPU)")
		fleetPath = fs.String("fleet-results", "", "results.json of a fleet run (confbench --agents 1000) whose cache targets join the summary (default: OUT/results.json when it exists; none: leave them out)")
		out       = fs.String("out", "docs/bench", "directory for latency-results.md and latency-results.json")
		keep      = fs.Bool("keep", false, "leave the run's directory in place (removing it frees thousands of inodes that a run started in the next minutes may step over: alternated A/B runs)")
		quick     = fs.Bool("quick", false, "smoke version: two sets, a small memory run, a couple of publishes")
		verbose   = fs.Bool("v", false, "debug logging")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: confbench latency [flags]\n\nSingle host: confagent (dir and template targets; apply: all, then per set a second pass restarted under apply: independent, the dir target like for like) and a confd-style raw follower, commit-ack → rendered, phase by phase, CPU and memory per process, confpush against a raw floor (under the agents' load, and like for like: both alone, alternated), and issue 27's targets.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "confbench latency: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg := d
	if *quick {
		cfg = bench.QuickLatencyConfig()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []string
	if set["sets"] || set["item-sizes"] || !*quick {
		shapes, err := parseSets(*sets)
		if err != nil {
			errs = append(errs, fmt.Sprintf("--sets: %v", err))
		}
		sizes, err := parseSizes(*itemSizes)
		if err != nil {
			errs = append(errs, fmt.Sprintf("--item-sizes: %v", err))
		}
		cfg.Sets = bench.LatencySets(shapes, sizes)
	}
	if set["memory-items"] || set["memory-item-size"] || !*quick {
		sizes, err := parseSizes(*memSize)
		if err != nil || len(sizes) != 1 {
			errs = append(errs, fmt.Sprintf("--memory-item-size: %q is not one size", *memSize))
		} else if *memItems < 0 {
			errs = append(errs, fmt.Sprintf("--memory-items: %d is negative", *memItems))
		} else {
			cfg.Memory = bench.LatencySet{Items: *memItems, Changed: min(1, *memItems), Size: sizes[0]}
		}
	}
	if set["independent"] || set["sets"] || !*quick {
		shapes, err := parseIndependent(*indep, cfg.Sets)
		if err != nil {
			errs = append(errs, fmt.Sprintf("--independent: %v", err))
		}
		cfg.Independent = shapes
	}
	if len(errs) > 0 {
		fmt.Fprintf(stderr, "confbench latency: %s\n", strings.Join(errs, "; "))
		return 2
	}
	override := func(name string, dst *int, v int) {
		if set[name] || !*quick {
			*dst = v
		}
	}
	override("publishes", &cfg.Publishes, *publishes)
	override("warmup", &cfg.Warmup, *warmup)
	override("memory-publishes", &cfg.MemoryPublishes, *memPubs)
	if set["confpush-alone"] || !*quick {
		cfg.ConfPushAlone = *alone
	}
	if set["gap"] || !*quick {
		cfg.Gap = *gap
	}
	if *zk != "" {
		cfg.ZK = strings.Split(*zk, ",")
	}
	cfg.ConfAgentBin, cfg.ConfPushBin, cfg.ZkrawBin, cfg.ZkfloorBin, cfg.PerfDir = *agentBin, *pushBin, *zkrawBin, *floorBin, *perfDir
	if *agentEnv != "" {
		cfg.ConfAgentEnv = strings.Split(*agentEnv, ",")
	}
	cfg.Keep = *keep
	fleet, err := loadFleet(*fleetPath, *out, set["fleet-results"])
	if err != nil {
		fmt.Fprintf(stderr, "confbench latency: --fleet-results: %v\n", err)
		return 2
	}
	cfg.Fleet = fleet
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	rep, err := bench.RunLatency(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "confbench latency: %v\n", err)
		return 1
	}
	if err := rep.Write(*out); err != nil {
		fmt.Fprintf(stderr, "confbench latency: write results: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, rep.Markdown())
	return 0
}

// loadFleet reads the fleet report whose targets join the summary: path,
// or out/results.json when path was not given and that file exists;
// "none" reads nothing.
func loadFleet(path, out string, given bool) (*bench.Report, error) {
	if path == "none" {
		return nil, nil
	}
	if !given {
		path = filepath.Join(out, "results.json")
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r bench.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// parseSizes parses "1k,4k,64k" (k: KiB) or byte counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		num, mult := f, 1
		if t, ok := strings.CutSuffix(f, "k"); ok {
			num, mult = t, 1024
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive size (1k, 64k, 1024)", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

func formatSizes(sizes []int) string {
	s := make([]string, len(sizes))
	for i, z := range sizes {
		if z%1024 == 0 {
			s[i] = fmt.Sprintf("%dk", z/1024)
		} else {
			s[i] = strconv.Itoa(z)
		}
	}
	return strings.Join(s, ",")
}

// parseIndependent parses --independent: "all" is every shape of sets,
// "none" nothing, otherwise shapes as --sets takes them.
func parseIndependent(s string, sets []bench.LatencySet) ([]bench.LatencySet, error) {
	switch strings.TrimSpace(s) {
	case "none":
		return nil, nil
	case "all":
		var out []bench.LatencySet
		for _, x := range sets {
			shape := bench.LatencySet{Items: x.Items, Changed: x.Changed}
			if !slices.Contains(out, shape) {
				out = append(out, shape)
			}
		}
		return out, nil
	}
	return parseSets(s)
}

// parseSets parses "20/1,100/100" (the shapes; sizes come apart).
func parseSets(s string) ([]bench.LatencySet, error) {
	var out []bench.LatencySet
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), "/")
		items, err1 := strconv.Atoi(a)
		changed, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || items < 1 || changed < 1 || changed > items {
			return nil, fmt.Errorf("%q is not items/changed with 1 ≤ changed ≤ items", f)
		}
		out = append(out, bench.LatencySet{Items: items, Changed: changed})
	}
	return out, nil
}

func formatSets(sets []bench.LatencySet) string {
	s := make([]string, len(sets))
	for i, x := range sets {
		s[i] = fmt.Sprintf("%d/%d", x.Items, x.Changed)
	}
	return strings.Join(s, ",")
}

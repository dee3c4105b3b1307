// Command confbench is zkconf's benchmark harness: it measures propagation
// to fleets of followers against the raw go-zookeeper floor and naive
// baselines in the same run, publish latency, ZooKeeper requests per
// publish per follower, and confagent's propagation and footprint, and
// writes a markdown table, the raw numbers (JSON) and a chart to --out.
//
//	confbench                       # the full benchmark (make bench)
//	confbench --quick --out /tmp/b  # the smoke version, a few seconds
//	confbench --zk host:2181 --agents 1,10 --publishes 100
//	confbench latency               # single host: confagent vs confd-style
//
// See package bench for what is measured and how.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/zkconf/zkconf/tools/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "latency" {
		return runLatency(ctx, args[1:], stdout, stderr)
	}
	cfg, out, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "confbench: %v\n", err)
		return 2
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "confbench: %v\n", err)
		return 1
	}
	if err := rep.Write(out); err != nil {
		fmt.Fprintf(stderr, "confbench: write results: %v\n", err)
		return 1
	}
	if rep.Canary != nil {
		fmt.Fprintf(stdout, "canary rollouts: %s\n", rep.Canary.Summary())
	}
	if cfg.CanaryOnly {
		fmt.Fprintf(stdout, "results written to %s (canary-requests.md, results.json)\n", out)
		return 0
	}
	fmt.Fprintf(stdout, "results written to %s (results.md, results.json, propagation.png)\n\n", out)
	for _, t := range rep.Targets() {
		fmt.Fprintf(stdout, "%-8s %s: %s\n", t.Status, t.Target, t.Measured)
	}
	return 0
}

// parseFlags builds the configuration: --quick picks the smoke defaults,
// and every flag given explicitly overrides them.
func parseFlags(args []string, stderr io.Writer) (bench.Config, string, error) {
	fs := flag.NewFlagSet("confbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := bench.DefaultConfig()
	var (
		zk        = fs.String("zk", "", "ZooKeeper servers (host:port,...); empty starts a throw-away server")
		ensemble  = fs.Int("ensemble", d.Ensemble, "servers to start when --zk is empty (1: standalone, 3: ensemble)")
		observers = fs.Int("observers", 0, "observers added to the own ensemble: followers connect only to them, publishers to the voters")
		heap      = fs.String("server-heap", "1g", "-Xmx of each own ZooKeeper server")
		kinds     = fs.String("kinds", "", "follower kinds to measure, comma-separated (zkconf,floor,naive; default all)")
		onePass   = fs.Bool("one-kind-per-pass", false, "measure one kind of follower at a time: N sessions open at once instead of 3N (N=10000 under a 20000 descriptor limit)")
		herd      = fs.Int("herd", 0, "herd measurement with this many zkconf followers: restart their busiest server (0: none)")
		jitter    = fs.Duration("resync-jitter", 0, "the herd's caches' resync jitter (cache.WithResyncJitter)")
		items     = fs.Int("items", d.Items, "items in each followed root")
		itemSize  = fs.Int("item-size", d.ItemSize, "bytes per item")
		changed   = fs.Int("changed", d.Changed, "items changed per publish")
		agents    = fs.String("agents", joinInts(d.Fleets), "fleet sizes: followers per kind, each with its own session")
		publishes = fs.Int("publishes", d.Publishes, "measured publishes per fleet size and kind (at least 50 unless --quick)")
		warmup    = fs.Int("warmup", d.Warmup, "unmeasured publishes before each measurement")
		runs      = fs.Int("runs", d.Runs, "repetitions; the report gives their medians")
		confAgent = fs.Int("confagents", d.ConfAgents, "confagent processes to measure (0: none; >0 also measures the footprint)")
		agentBin  = fs.String("confagent-bin", "", "confagent binary (default: go build ./cmd/confagent)")
		agentEnv  = fs.String("confagent-env", "", "KEY=VALUE,... added to the confagents' environment (e.g. GOGC=50)")
		fpIdle    = fs.Duration("footprint-idle", d.FootprintIdle, "idle phase of the footprint measurement")
		fpLoad    = fs.Duration("footprint-load", d.FootprintLoad, "1 publish/s phase of the footprint measurement")
		out       = fs.String("out", "docs/bench", "directory for results.md, results.json and propagation.png")
		profile   = fs.String("profile", "", "directory for CPU and allocation profiles (largest fleet, publish, in-process agent)")
		quick     = fs.Bool("quick", false, "smoke version: N=10, a few publishes, a short footprint")
		canaryN   = fs.Int("canary-followers", d.CanaryFollowers, "labelled caches of the canary-rollout request measurement (0: none)")
		canaryOn  = fs.Bool("canary-only", false, "measure only the requests per follower during canary rollouts (canary-requests.md)")
		verbose   = fs.Bool("v", false, "debug logging")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: confbench [flags]\n\nMeasures zkconf against raw go-zookeeper baselines on the same ZooKeeper.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return bench.Config{}, "", err
	}
	if fs.NArg() > 0 {
		return bench.Config{}, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := d
	if *quick {
		cfg = bench.QuickConfig()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["agents"] || !*quick {
		fleets, err := parseInts(*agents)
		if err != nil {
			return bench.Config{}, "", fmt.Errorf("--agents: %w", err)
		}
		cfg.Fleets = fleets
	}
	override := func(name string, dst *int, v int) {
		if set[name] || !*quick {
			*dst = v
		}
	}
	override("ensemble", &cfg.Ensemble, *ensemble)
	override("items", &cfg.Items, *items)
	override("item-size", &cfg.ItemSize, *itemSize)
	override("changed", &cfg.Changed, *changed)
	override("publishes", &cfg.Publishes, *publishes)
	override("warmup", &cfg.Warmup, *warmup)
	override("runs", &cfg.Runs, *runs)
	override("confagents", &cfg.ConfAgents, *confAgent)
	override("canary-followers", &cfg.CanaryFollowers, *canaryN)
	cfg.CanaryOnly = *canaryOn
	if set["footprint-idle"] || !*quick {
		cfg.FootprintIdle = *fpIdle
	}
	if set["footprint-load"] || !*quick {
		cfg.FootprintLoad = *fpLoad
	}
	cfg.Observers, cfg.ServerHeap, cfg.OneKindPerPass, cfg.Herd, cfg.ResyncJitter = *observers, *heap, *onePass, *herd, *jitter
	if *kinds != "" {
		cfg.Kinds = strings.Split(*kinds, ",")
	}
	if *zk != "" {
		cfg.ZK = strings.Split(*zk, ",")
	}
	cfg.ConfAgentBin, cfg.ProfileDir = *agentBin, *profile
	if *agentEnv != "" {
		cfg.ConfAgentEnv = strings.Split(*agentEnv, ",")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	return cfg, *out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

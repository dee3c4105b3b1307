package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
		sets      = fs.String("sets", formatSets(d.Sets), "sets measured: items/changed,...")
		itemSize  = fs.Int("item-size", d.ItemSize, "bytes per item")
		publishes = fs.Int("publishes", d.Publishes, "measured publishes per set and publisher")
		warmup    = fs.Int("warmup", d.Warmup, "unmeasured publishes before each measurement")
		gap       = fs.Duration("gap", d.Gap, "pause between publishes, once every follower caught up")
		agentBin  = fs.String("confagent-bin", "", "confagent binary (default: go build ./cmd/confagent)")
		pushBin   = fs.String("confpush-bin", "", "confpush binary (default: go build ./cmd/confpush)")
		out       = fs.String("out", "docs/bench", "directory for latency-results.md and latency-results.json")
		quick     = fs.Bool("quick", false, "smoke version: two sets, a couple of publishes")
		verbose   = fs.Bool("v", false, "debug logging")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: confbench latency [flags]\n\nSingle host: confagent (dir and template targets) and a confd-style raw follower, commit-ack → rendered, phase by phase.\n\n")
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
	if set["sets"] || !*quick {
		s, err := parseSets(*sets)
		if err != nil {
			fmt.Fprintf(stderr, "confbench latency: --sets: %v\n", err)
			return 2
		}
		cfg.Sets = s
	}
	if set["item-size"] || !*quick {
		cfg.ItemSize = *itemSize
	}
	if set["publishes"] || !*quick {
		cfg.Publishes = *publishes
	}
	if set["warmup"] || !*quick {
		cfg.Warmup = *warmup
	}
	if set["gap"] || !*quick {
		cfg.Gap = *gap
	}
	if *zk != "" {
		cfg.ZK = strings.Split(*zk, ",")
	}
	cfg.ConfAgentBin, cfg.ConfPushBin = *agentBin, *pushBin
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

// parseSets parses "20/1,100/100".
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

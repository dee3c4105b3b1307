// Command confchaos runs zkconf's chaos suite (package chaos): a 3-node
// ZooKeeper ensemble, confagent processes behind fault proxies, a
// publisher committing continuously, a seeded fault schedule, and an
// independent checker. It prints a summary (and writes it with --summary);
// any violation makes it exit 1 after printing the seed and the history
// around each violation. `make chaos` runs it for CHAOS_DURATION (10m).
//
//	confchaos --duration 10m [--seed N] [--agents 5] [--confagent bin/confagent] [--summary FILE] [--workdir DIR] [--keep]
//
// Exit codes: 0 no violation, 1 violations, 2 the harness failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/tools/chaos"
	"github.com/zkconf/zkconf/tools/internal/confagentbin"
)

func main() { os.Exit(run()) }

func run() int {
	var cfg chaos.Config
	var keep bool
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "length of the run (faults stop 25s before its end)")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the fault schedule and the workload (0: from the clock); replays a run")
	flag.IntVar(&cfg.Agents, "agents", 5, "number of confagent processes (at least 5)")
	flag.StringVar(&cfg.Confagent, "confagent", "", "confagent binary (default: built with go build into the work directory)")
	flag.StringVar(&cfg.Confpush, "confpush", "", "confpush binary, for init and acl --repair (default: built with go build into the work directory)")
	flag.StringVar(&cfg.SummaryPath, "summary", "", "also write the summary to this file")
	flag.StringVar(&cfg.WorkDir, "workdir", "", "work directory (default: a new temporary directory)")
	flag.BoolVar(&keep, "keep", false, "keep the work directory even when the run passes")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "confchaos: unexpected arguments %v\n", flag.Args())
		return 2
	}
	if cfg.WorkDir == "" {
		d, err := os.MkdirTemp("", "zkconf-chaos-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "confchaos: %v\n", err)
			return 2
		}
		cfg.WorkDir = d
	}
	for name, bin := range map[string]*string{"confagent": &cfg.Confagent, "confpush": &cfg.Confpush} {
		if *bin == "" {
			*bin = filepath.Join(cfg.WorkDir, name)
			if err := confagentbin.BuildCommand(context.Background(), name, *bin); err != nil {
				fmt.Fprintf(os.Stderr, "confchaos: %v\n", err)
				return 2
			}
		} else if abs, err := filepath.Abs(*bin); err == nil {
			*bin = abs
		}
	}
	cfg.Out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sum, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "confchaos: the harness failed: %v\nwork directory kept: %s\n", err, cfg.WorkDir)
		return 2
	}
	text := sum.Text()
	fmt.Print("\n" + text)
	if cfg.SummaryPath != "" {
		if err := os.WriteFile(cfg.SummaryPath, []byte(text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "confchaos: %v\n", err)
		}
	}
	if sum.Failed() {
		fmt.Print(sum.ViolationsText(20))
		fmt.Printf("\nFAIL: %d violations (seed %d; replay: make chaos CHAOS_SEED=%d CHAOS_DURATION=%v); work directory kept: %s\n",
			len(sum.Violations), sum.Seed, sum.Seed, cfg.Duration, cfg.WorkDir)
		return 1
	}
	if !keep {
		os.RemoveAll(cfg.WorkDir)
	}
	fmt.Println("PASS: 0 violations")
	return 0
}

package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Report is everything one invocation measured.
type Report struct {
	Started  time.Time   `json:"started"`
	Seconds  float64     `json:"seconds"`
	Env      Environment `json:"environment"`
	Settings Settings    `json:"settings"`
	// Runs holds each repetition; the markdown report gives their medians.
	Runs []RunResult `json:"runs"`
	// Footprint is measured once (it is a minute idle and a minute loaded).
	Footprint *Footprint `json:"footprint,omitempty"`
	// InProcess is the in-process agent's propagation, measured while
	// profiling (--profile), for the items set and the footprint set.
	InProcess []*AgentResult `json:"in_process_agent,omitempty"`
	// Herd is the herd measurement (Config.Herd).
	Herd *HerdResult `json:"herd,omitempty"`
	// Canary is the request cost of followers during canary rollouts.
	Canary *CanaryResult `json:"canary,omitempty"`
	// FramingErrors counts writes the taps could not read as one packet:
	// non-zero means the request counts cannot be trusted.
	FramingErrors int64 `json:"tap_framing_errors"`
}

// Environment describes where the numbers come from.
type Environment struct {
	CPU       string  `json:"cpu"`
	Cores     int     `json:"cores"`
	Go        string  `json:"go"`
	ZooKeeper string  `json:"zookeeper"`
	Servers   int     `json:"servers"`
	OwnServer bool    `json:"own_server"`
	LoadStart float64 `json:"load_average_start"`
	LoadEnd   float64 `json:"load_average_end"`
	FDLimit   uint64  `json:"fd_limit"`
	// Roles names each own server ("1 follower", "4 observer"), in the
	// order of FleetResult.ServerCPUEach.
	Roles []string `json:"server_roles,omitempty"`
	// Observers is the number of observers; followers connect only to
	// them when it is positive.
	Observers int `json:"observers"`
}

// Settings are the parameters of the measurement.
type Settings struct {
	Items, ItemSize, Changed int
	Fleets                   []int
	Publishes, Warmup, Runs  int
	ConfAgents               int
	ConfAgentEnv             []string `json:",omitempty"`
	Concurrency              int
	SessionTimeout           string
	Quick                    bool
	Kinds                    []string `json:",omitempty"`
	OneKindPerPass           bool     `json:",omitempty"`
}

// RunResult is one repetition.
type RunResult struct {
	Fleets  []FleetResult `json:"fleets"`
	Publish *PublishCost  `json:"publish_cost"`
	Agents  *AgentResult  `json:"confagents,omitempty"`
}

// Run measures everything cfg asks for and returns the report. ctx bounds
// the whole run; every server and process it started is gone when it
// returns.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	log := cfg.Logger
	rep = &Report{Started: time.Now(), Settings: Settings{
		Items: cfg.Items, ItemSize: cfg.ItemSize, Changed: cfg.Changed, Fleets: cfg.Fleets,
		Publishes: cfg.Publishes, Warmup: cfg.Warmup, Runs: cfg.Runs, ConfAgents: cfg.ConfAgents,
		Concurrency: cfg.Concurrency, SessionTimeout: cfg.SessionTimeout.String(), Quick: cfg.Quick,
		ConfAgentEnv: cfg.ConfAgentEnv, Kinds: cfg.kinds(), OneKindPerPass: cfg.OneKindPerPass,
	}}
	rep.Env = Environment{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(),
		Servers: cfg.Ensemble + cfg.Observers, Observers: cfg.Observers, OwnServer: len(cfg.ZK) == 0, LoadStart: loadAvg()}
	if len(cfg.ZK) > 0 {
		rep.Env.Servers = len(cfg.ZK)
	}
	// One socket per follower session open at once, plus agents, the
	// server's if it is ours, and slack.
	need := uint64(cfg.sessionsAtOnce() + 8*cfg.ConfAgents + 1024)
	if rep.Env.FDLimit, err = raiseFDLimit(need); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}

	log.Info("starting ZooKeeper", "servers", cfg.Ensemble, "given", cfg.ZK)
	srv, err := startServer(cfg.ZK, cfg.Ensemble, cfg.Observers, cfg.serverHeap())
	if err != nil {
		return nil, fmt.Errorf("bench: ZooKeeper: %w", err)
	}
	defer srv.close()
	rep.Env.ZooKeeper = srv.version()
	rep.Env.Roles = srv.roles()
	e := newEnv(cfg, srv)
	if _, merr := srv.mntr(); merr != nil {
		log.Warn("the server does not answer mntr: server-side request counts are not available", "err", merr)
	} else {
		e.mntrOK = true
	}
	defer func() {
		if cerr := e.cleanup(context.WithoutCancel(ctx)); cerr != nil {
			log.Warn("could not delete the benchmark's znodes", "prefix", e.prefix, "err", cerr)
		}
	}()

	bin := cfg.ConfAgentBin
	if cfg.ConfAgents > 0 && bin == "" {
		dir, err := os.MkdirTemp("", "confbench-bin")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		log.Info("building confagent")
		if bin, err = buildConfAgent(ctx, dir); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}

	if cfg.CanaryFollowers > 0 {
		log.Info("measuring requests during canary rollouts", "followers", cfg.CanaryFollowers)
		if rep.Canary, err = e.measureCanary(ctx, cfg.CanaryFollowers, canaryPlain, canaryRounds); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	if cfg.CanaryOnly {
		rep.Env.LoadEnd = loadAvg()
		rep.Seconds = time.Since(rep.Started).Seconds()
		return rep, nil
	}
	for run := 1; run <= cfg.Runs; run++ {
		rr, err := e.run(ctx, run, bin)
		if err != nil {
			return nil, fmt.Errorf("bench: run %d: %w", run, err)
		}
		rep.Runs = append(rep.Runs, *rr)
	}
	if cfg.Herd > 0 {
		if rep.Herd, err = e.measureHerd(ctx); err != nil {
			return nil, fmt.Errorf("bench: herd: %w", err)
		}
	}
	if cfg.ConfAgents > 0 {
		log.Info("measuring the confagent footprint", "items", cfg.FootprintItems, "item_size", cfg.FootprintItemSize)
		if rep.Footprint, err = e.measureFootprint(ctx, bin); err != nil {
			return nil, fmt.Errorf("bench: footprint: %w", err)
		}
	}
	if cfg.ProfileDir != "" {
		sets := []struct {
			name  string
			sched *schedule
		}{
			{"agent", newSchedule("agentprof", cfg.Items, cfg.ItemSize, cfg.Changed)},
			{"agent-footprint", newSchedule("agentprof-fp", cfg.FootprintItems, cfg.FootprintItemSize, cfg.Changed)},
		}
		for _, s := range sets {
			log.Info("profiling an in-process agent", "profile", s.name)
			ar, err := e.profileAgent(ctx, s.name, s.sched)
			if err != nil {
				return nil, fmt.Errorf("bench: in-process agent: %w", err)
			}
			rep.InProcess = append(rep.InProcess, ar)
		}
	}
	rep.FramingErrors = e.framingErrors()
	rep.Env.LoadEnd = loadAvg()
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// run is one repetition: every fleet size, the publish cost, and the
// confagents.
func (e *env) run(ctx context.Context, run int, bin string) (*RunResult, error) {
	c := e.cfg
	targets := map[string]*target{}
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for _, kind := range c.kinds() {
		t, err := e.newTarget(ctx, fmt.Sprintf("%s-%d", kind, run), newSchedule(kind, c.Items, c.ItemSize, c.Changed))
		if err != nil {
			return nil, err
		}
		targets[kind] = t
	}
	rr := &RunResult{}
	for _, n := range c.Fleets {
		e.log.Info("measuring propagation", "run", run, "n", n, "publishes", c.Publishes)
		profile := c.ProfileDir != "" && run == 1 && n == c.maxFleet()
		fr, err := e.measureFleets(ctx, n, targets, profile)
		if err != nil {
			return nil, err
		}
		for _, f := range fr {
			e.log.Info("result", "run", run, "n", n, "kind", f.Kind, "p50_ms", f.Propagation.P50,
				"p99_ms", f.Propagation.P99, "last_p50_ms", f.Last.P50, "requests", f.ServerRequests)
		}
		rr.Fleets = append(rr.Fleets, fr...)
	}
	e.log.Info("measuring publish cost", "run", run, "items", c.PublishItems, "item_size", c.PublishItemSize)
	pc, err := e.measurePublishCost(ctx, run, c.ProfileDir != "" && run == 1)
	if err != nil {
		return nil, fmt.Errorf("publish cost: %w", err)
	}
	rr.Publish = pc
	if c.ConfAgents > 0 {
		e.log.Info("measuring confagent propagation", "run", run, "agents", c.ConfAgents)
		t, err := e.newTarget(ctx, fmt.Sprintf("agent-%d", run), newSchedule("agent", c.Items, c.ItemSize, c.Changed))
		if err != nil {
			return nil, err
		}
		targets["agent"] = t
		if rr.Agents, err = e.measureAgents(ctx, bin, t, c.ConfAgents); err != nil {
			return nil, fmt.Errorf("confagents: %w", err)
		}
	}
	return rr, nil
}

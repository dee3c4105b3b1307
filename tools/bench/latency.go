package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/benchshape"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/tools/internal/confagentbin"
)

// The single-host latency benchmark (RunLatency): one ZooKeeper, one
// confagent process rendering a dir target and a template target (sprig
// helpers over every item; every file fsynced, as always), and, in the
// same run on the same root, a "confd-style" follower: a raw go-zookeeper
// process (zkraw follow) that watches the root, reads every item and
// renders a file of every item and the same template, without
// verification or fsync. Each set (items, items changed per publish, item
// size) is published first by an in-process publisher, whose commit
// acknowledgement the benchmark sees on the wire (commit-ack → rendered),
// then by `confpush publish` processes (process start → rendered, end to
// end), each followed by its floor: a raw go-zookeeper process (zkfloor)
// that connects, sends one Multi of the same writes and closes, timing
// each of the three inside; then `confpush --version` and `zkfloor start`,
// the start-up of each program alone.
// Rendered means the benchmark's inotify watch saw the destination
// swapped in with the generation's content.

// Followers of the latency benchmark, in the order of the recorder. The
// dir target is compared with the confd-style follower's file of every
// item, the template target with its rendering of the same template.
const (
	latDir           = "confagent dir"
	latTemplate      = "confagent template"
	latConfd         = "confd-style"
	latConfdTemplate = "confd-style template"
)

// latFollowers are the followers of a full set; a memory run has only the
// dir target and the confd-style follower's file.
var latFollowers = []string{latDir, latTemplate, latConfd, latConfdTemplate}

// latBaseline is the follower each agent target is compared with.
var latBaseline = map[string]string{latDir: latConfd, latTemplate: latConfdTemplate}

// Phases of the agent's critical path reported by the latency benchmark,
// in order. notification is commit-ack → the cache's cycle starts (the
// watch event's delivery); reads is the cycle until every item is read and
// verified (root read included); verify is the part of it spent hashing
// (summed over reads in flight); persist the state file; stage, check and
// swap the renderer's; status is commit-ack → the status node reports the
// generation (written off the critical path). in hand is commit-ack → the
// agent's reads done (notification and reads), confd-style in hand the same
// instant of the confd-style follower (commit-ack → its last item read,
// from zkraw's timings): the reads of the two from the same instant.
var latPhases = []string{"notification", "reads", "verify", "in hand", "confd-style in hand", "persist", "stage", "check", "swap", "rendered", "status node"}

// LatencySet is one published set: Items items of Size bytes, Changed of
// them changed by every publish.
type LatencySet struct {
	Items, Changed, Size int
}

func (s LatencySet) String() string {
	return fmt.Sprintf("%d/%d × %s", s.Items, s.Changed, size(s.Size))
}

// LatencyConfig configures RunLatency.
type LatencyConfig struct {
	// ZK is the servers to use; empty starts a throw-away standalone one.
	ZK []string
	// Sets are measured one after the other, each on its own root.
	Sets []LatencySet
	// Publishes measured per set and publisher, after Warmup unmeasured.
	Publishes, Warmup int
	// Gap is the pause after every follower caught up, so that each
	// publish finds them idle.
	Gap time.Duration
	// Memory, when its Items is positive, is a separate run for the
	// agent's memory with a large set: the dir target only, no confpush,
	// MemoryPublishes measured publishes.
	Memory          LatencySet
	MemoryPublishes int
	// Independent are the shapes (items/changed, every size) whose sets
	// get a second in-process pass after their confpush phase, with the
	// agent restarted on the same state and outputs under `apply:
	// independent` beside the same confd-style follower: the dir target
	// measured like for like (measureIndependent). Empty: none.
	Independent []LatencySet
	// ConfPushAlone adds, per set after its confpush phase, confpush
	// against its floor like for like (measureConfPushAlone): both
	// publishing to roots nobody watches, alternated, the order swapped
	// every round. The confpush phase's own ratio is taken while the
	// set's agent and follower render confpush's publishes on the same
	// CPUs, and its floor writes a root nobody watches.
	ConfPushAlone bool
	// ConfAgentBin, ConfPushBin, ZkrawBin and ZkfloorBin: empty builds
	// them.
	ConfAgentBin, ConfPushBin, ZkrawBin, ZkfloorBin string
	// ConfAgentEnv adds KEY=VALUE settings to the agent's environment
	// (GOMEMLIMIT=off, GOGC=200: what the runtime's settings cost).
	ConfAgentEnv []string
	// Keep leaves the run's directory (every set's outputs, state and
	// logs) in place at the end instead of removing it: removing it frees
	// thousands of inodes, which the creations of a run started in the
	// next minutes step over where the file system puts its sets in the
	// same block groups (an A/B of alternated runs). The path is logged.
	Keep bool
	// PerfDir, when set, receives a `perf record` profile of the agent
	// over each set's measured in-process publishes: the perf.data file
	// and perf report text (the measurement then includes perf's own
	// cost: use a separate run).
	PerfDir string
	// Fleet is the fleet benchmark's report (results.json of `confbench`),
	// whose cache-library targets join the summary; nil: not measured.
	Fleet                       *Report
	SessionTimeout, WaitTimeout time.Duration
	Logger                      *slog.Logger
}

// LatencyShapes and LatencySizes are the default sets: every shape
// (items/changed) at every changed-item size.
var (
	LatencyShapes = []LatencySet{{Items: 20, Changed: 1}, {Items: 20, Changed: 20}, {Items: 100, Changed: 100}}
	LatencySizes  = []int{1 << 10, 4 << 10, 64 << 10}
)

// LatencySets is every shape at every size, the sizes outermost.
func LatencySets(shapes []LatencySet, sizes []int) []LatencySet {
	var out []LatencySet
	for _, z := range sizes {
		for _, s := range shapes {
			out = append(out, LatencySet{Items: s.Items, Changed: s.Changed, Size: z})
		}
	}
	return out
}

// independentPass says whether set gets the `apply: independent` pass.
func (lc LatencyConfig) independentPass(set LatencySet) bool {
	return slices.ContainsFunc(lc.Independent, func(s LatencySet) bool { return s.Items == set.Items && s.Changed == set.Changed })
}

// DefaultLatencyConfig is the full benchmark (make bench).
func DefaultLatencyConfig() LatencyConfig {
	return LatencyConfig{
		Sets:        LatencySets(LatencyShapes, LatencySizes),
		Independent: slices.Clone(LatencyShapes), ConfPushAlone: true,
		Publishes: 50, Warmup: 5, Gap: 200 * time.Millisecond,
		Memory: LatencySet{Items: 1000, Changed: 1, Size: 4 << 10}, MemoryPublishes: 10,
		SessionTimeout: 30 * time.Second, WaitTimeout: time.Minute,
	}
}

// QuickLatencyConfig is the smoke version: every row, phase and
// measurement, a couple of publishes; its second set is published in
// marker mode (20 × 64 KiB does not fit a Multi).
func QuickLatencyConfig() LatencyConfig {
	c := DefaultLatencyConfig()
	c.Sets = []LatencySet{{20, 1, 1 << 10}, {20, 20, 64 << 10}}
	c.Independent = []LatencySet{{Items: 20, Changed: 1}, {Items: 20, Changed: 20}}
	c.Publishes, c.Warmup, c.Gap = 2, 1, 20*time.Millisecond
	c.Memory, c.MemoryPublishes = LatencySet{Items: 50, Changed: 1, Size: 4 << 10}, 2
	return c
}

// Pct is a latency distribution in milliseconds.
type Pct struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	Max float64 `json:"max_ms"`
}

func pct(samples []int64) Pct {
	if len(samples) == 0 {
		return Pct{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Pct{N: len(s), P50: ms(rank(s, 0.5)), P90: ms(rank(s, 0.9)), Max: ms(s[len(s)-1])}
}

// LatencyRow is one follower of one set under one publisher.
type LatencyRow struct {
	Items    int    `json:"items"`
	Changed  int    `json:"changed"`
	Size     int    `json:"size"`
	Follower string `json:"follower"`
	// Publisher is "in-process" (one Multi, the ack seen on the wire) or
	// "confpush" (a `confpush publish` process).
	Publisher string `json:"publisher"`
	// Rendered is commit-ack → rendered (in-process publisher only).
	Rendered Pct `json:"ack_to_rendered"`
	// EndToEnd is publish start (call, or process start) → rendered.
	EndToEnd Pct `json:"start_to_rendered"`
}

// Memory is a process's resident set in MiB: Steady is the median and Max
// the largest of the samples taken after every measured publish (once
// the followers caught up and the gap passed), Peak the VmHWM at the end
// (since the process started, its first render included; at least Max).
type Memory struct {
	Steady float64 `json:"steady_rss_mib"`
	Max    float64 `json:"max_rss_mib"`
	Peak   float64 `json:"peak_rss_mib"`
	Anon   float64 `json:"anon_rss_mib"`
	File   float64 `json:"file_rss_mib"`
}

// LatencySetResult is everything measured for one set.
type LatencySetResult struct {
	Items   int `json:"items"`
	Changed int `json:"changed"`
	Size    int `json:"size"`
	// Mode is the publish mode of the set's publishes (multi, or marker
	// when the commit does not fit a Multi).
	Mode manifest.Mode `json:"mode"`
	// PassFigures are the in-process publisher's rows, the agent's phases
	// and both processes' CPU per publish under the agent's default
	// `apply: all`.
	PassFigures
	// AgentRSS and ConfdRSS: the processes' memory.
	AgentRSS Memory `json:"agent_memory"`
	ConfdRSS Memory `json:"confd_memory"`
	// Publish is the in-process publish call → commit acknowledged;
	// ConfPush is `confpush publish` process start → exit (its ack is its
	// last request: exit follows it); Floor is the raw floor's (zkfloor:
	// connect, one Multi, close) start → exit, run right after each
	// confpush; FloorItems is the number of items its Multi writes (the
	// changed items, as many as fit a Multi); FloorRatio is ConfPush.P50 /
	// Floor.P50. These are taken under the agents' load: confpush writes
	// the root the set's agent and follower watch, and its commit's
	// answer, close and exit run while they read and render on the same
	// CPUs; the floor's root nobody watches. They drive the confpush
	// rows (start → rendered) and are reported as information; the
	// target is judged on Alone.
	Publish    Pct     `json:"publish_call_to_ack"`
	ConfPush   Pct     `json:"confpush_start_to_exit"`
	Floor      Pct     `json:"floor_start_to_exit"`
	FloorItems int     `json:"floor_items"`
	FloorRatio float64 `json:"confpush_floor_ratio"`
	// FloorSession, FloorMulti and FloorClose are the floor's three server
	// writes, timed inside its process: zk.Connect → session established,
	// the Multi, the close. ConfPushStart and FloorStart are the start-up
	// alone (`confpush --version`, `zkfloor start`: process start → exit),
	// run after each floor.
	FloorSession  Pct `json:"floor_session"`
	FloorMulti    Pct `json:"floor_multi"`
	FloorClose    Pct `json:"floor_close"`
	ConfPushStart Pct `json:"confpush_version_start_to_exit"`
	FloorStart    Pct `json:"floor_start_start_to_exit"`
	// Fsync is a 4 KiB write and fsync of a new file, then an fsync of
	// its directory, in the agent's state directory, measured between the
	// two publishers' runs: what one durable step costs on the disk at
	// the time (the agent's critical path has several, confd-style none).
	Fsync Pct `json:"fsync_4k_file_and_dir"`
	// InodeBefore and InodeAfter are the inode-creation probe
	// (probeInodes) beside the agent's dir target, when the set
	// started (before any follower ran: what others and earlier sets left)
	// and after the in-process pass (what this set's publishes left). On
	// ext4 without a journal a creation steps over every inode of its
	// group freed in the last 60 s (360 s while the inode table block is
	// dirty), so the agent's per-item creations cost what these do
	// where the probe's group is the pool's (Groups).
	InodeBefore InodeProbe `json:"inode_probe_before"`
	InodeAfter  InodeProbe `json:"inode_probe_after"`
	// Groups are the block groups of the pool's, the after probe's and
	// the follower's inodes (ext4 only, nil elsewhere).
	Groups *InodeGroups `json:"inode_groups,omitempty"`
	// LoadStart and LoadEnd are the 1-minute load average when the set
	// started and ended.
	LoadStart float64 `json:"load_average_start"`
	LoadEnd   float64 `json:"load_average_end"`
	// Perf names the perf report files of the set (PerfDir); CPUPhases
	// is the agent's CPU by phase (CPUPhases' names: share of PerfSamples
	// samples, 0–1).
	Perf        []string           `json:"perf_reports,omitempty"`
	CPUPhases   map[string]float64 `json:"agent_cpu_phases,omitempty"`
	PerfSamples int                `json:"perf_samples,omitempty"`
	// Independent is the set's second in-process pass, the agent
	// restarted under `apply: independent` (LatencyConfig.Independent);
	// nil when the set had none.
	Independent *LatencyPass `json:"apply_independent,omitempty"`
	// Alone is confpush against its floor like for like
	// (LatencyConfig.ConfPushAlone); nil when the set had no such pass.
	Alone *ConfPushAlone `json:"confpush_alone,omitempty"`
}

// ConfPushAlone is confpush against its floor like for like: `confpush
// publish` writing a root of its own that nobody watches, brought first
// to the generation (and so the history and the history GC's rhythm) the
// set's root had when its confpush phase began, and the floor's root
// (nobody watches it either), alternated round by round in the same
// minutes in ABBA order (pushFirstIn), each process started after the
// same pause (half the gap) and confpush's input written and synced
// before the round's first pause.
type ConfPushAlone struct {
	// ConfPush and Floor are start → exit; Ratio is ConfPush.P50 /
	// Floor.P50 (the target), PairRatio the median of the rounds' own
	// ratios (the two of a round ran within a second of each other).
	ConfPush  Pct     `json:"confpush_start_to_exit"`
	Floor     Pct     `json:"floor_start_to_exit"`
	Ratio     float64 `json:"confpush_floor_ratio"`
	PairRatio float64 `json:"pair_ratio_p50"`
	// ConfPushFirst and ConfPushSecond are confpush's start → exit p50 in
	// the rounds it ran first and second, FloorFirst and FloorSecond the
	// floor's: what the order does.
	ConfPushFirst  float64 `json:"confpush_first_p50_ms"`
	ConfPushSecond float64 `json:"confpush_second_p50_ms"`
	FloorFirst     float64 `json:"floor_first_p50_ms"`
	FloorSecond    float64 `json:"floor_second_p50_ms"`
	// FloorSession, FloorMulti and FloorClose: the floor's three server
	// writes, timed inside its process.
	FloorSession Pct `json:"floor_session"`
	FloorMulti   Pct `json:"floor_multi"`
	FloorClose   Pct `json:"floor_close"`
	// From is the generation confpush's root was brought to in process
	// before the pass (the set's root's when its confpush phase began).
	From int64 `json:"from_generation"`
	// LoadStart and LoadEnd: the 1-minute load average around the pass;
	// Seconds its wall time, the root's preparation included.
	LoadStart float64 `json:"load_average_start"`
	LoadEnd   float64 `json:"load_average_end"`
	Seconds   float64 `json:"seconds"`
}

// PassFigures are what one in-process pass over a set measures.
type PassFigures struct {
	// Rows are the in-process publisher's, one per follower (the agent's
	// two targets and the confd-style follower's two outputs; the confpush
	// rows of LatencySetResult too).
	Rows []LatencyRow `json:"rows"`
	// Phases of the agent, see latPhases.
	Phases map[string]Pct `json:"agent_phases"`
	// AgentCPU and ConfdCPU are the CPU milliseconds per publish
	// (user+system, every thread: /proc/<pid>/task/*/schedstat) of the
	// agent and of the confd-style process, over the in-process
	// publisher's measured publishes; CPURatio is their ratio.
	AgentCPU float64 `json:"agent_cpu_ms_per_publish"`
	ConfdCPU float64 `json:"confd_cpu_ms_per_publish"`
	CPURatio float64 `json:"cpu_ratio"`
}

// LatencyPass is a further in-process pass over a set, after its
// confpush phase, with the agent restarted on the same state directory
// and outputs in another apply mode, beside the same confd-style
// follower, root and publisher.
type LatencyPass struct {
	// Apply is the agent's apply mode in the pass.
	Apply string `json:"apply"`
	// PassFigures are the pass's; under `apply: independent` the agent's
	// stage, check and swap phases are summed over the two targets, each
	// applied on its own (the dir target's alone are inside its rendered
	// figure).
	PassFigures
	// LoadStart and LoadEnd: the 1-minute load average around the pass.
	LoadStart float64 `json:"load_average_start"`
	LoadEnd   float64 `json:"load_average_end"`
	// Seconds is the pass's wall time, the agent's restart included: what
	// it adds to the run.
	Seconds float64 `json:"seconds"`
}

// LatencyReport is one RunLatency invocation.
type LatencyReport struct {
	Started time.Time          `json:"started"`
	Seconds float64            `json:"seconds"`
	Env     Environment        `json:"environment"`
	Config  LatencySettings    `json:"settings"`
	Sets    []LatencySetResult `json:"sets"`
	// Memory is the large-set memory run (LatencyConfig.Memory).
	Memory *LatencySetResult `json:"memory_run,omitempty"`
	// Fleet summarises the fleet report whose targets join the summary.
	Fleet *FleetTargets `json:"fleet,omitempty"`
	// Summary is every target of the single-host benchmark: Targets().
	Summary []Verdict `json:"summary"`
	// SpreadSets says each set's directory was placed in an ext4 block
	// group of its own (spreadSubdirs): on ext4 without a journal a
	// creation steps over the inodes its group freed in the last minutes,
	// whoever freed them, and the benchmark's own earlier sets, the
	// binaries' builds and the machine's other processes are not the
	// set's agent's and follower's cost.
	SpreadSets bool `json:"set_dirs_spread"`
}

// LatencySettings are the parameters of a latency run.
type LatencySettings struct {
	Sets              []LatencySet
	Publishes, Warmup int
	Gap               string
	Memory            LatencySet
	MemoryPublishes   int
	// Independent: the shapes with an `apply: independent` pass.
	Independent  []LatencySet `json:",omitempty"`
	ConfAgentEnv []string     `json:",omitempty"`
	// ConfPushAlone: confpush against its floor like for like.
	ConfPushAlone bool
}

// RunLatency runs the single-host latency benchmark.
func RunLatency(ctx context.Context, lc LatencyConfig) (*LatencyReport, error) {
	if lc.Logger == nil {
		lc.Logger = slog.Default()
	}
	if len(lc.Sets) == 0 || lc.Publishes < 1 || lc.Warmup < 0 {
		return nil, errors.New("latency: at least one set and one publish")
	}
	var errs []error
	for _, s := range append(slices.Clone(lc.Sets), lc.Memory) {
		if s == lc.Memory && s.Items == 0 {
			continue
		}
		if s.Items < 1 || s.Changed < 1 || s.Changed > s.Items || s.Size < 1 {
			errs = append(errs, fmt.Errorf("set %d/%d of %d bytes: changed must be between 1 and items, the size positive", s.Items, s.Changed, s.Size))
		}
	}
	if lc.Memory.Items > 0 && lc.MemoryPublishes < 1 {
		errs = append(errs, errors.New("the memory run needs at least one publish"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	rep := &LatencyReport{Started: time.Now(), Config: LatencySettings{Sets: lc.Sets,
		Publishes: lc.Publishes, Warmup: lc.Warmup, Gap: lc.Gap.String(), Memory: lc.Memory, MemoryPublishes: lc.MemoryPublishes,
		Independent: lc.Independent, ConfAgentEnv: lc.ConfAgentEnv, ConfPushAlone: lc.ConfPushAlone}}
	rep.Env = Environment{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(), Servers: 1, OwnServer: len(lc.ZK) == 0, LoadStart: loadAvg()}
	if lc.Fleet != nil {
		rep.Fleet = lc.Fleet.fleetTargets()
	}
	cfg := DefaultConfig()
	cfg.Logger, cfg.SessionTimeout, cfg.WaitTimeout = lc.Logger, lc.SessionTimeout, lc.WaitTimeout
	srv, err := startServer(lc.ZK, 1, 0, "1g")
	if err != nil {
		return nil, fmt.Errorf("latency: ZooKeeper: %w", err)
	}
	defer srv.close()
	rep.Env.ZooKeeper = srv.version()
	e := newEnv(cfg, srv)
	defer func() { _ = e.cleanup(context.WithoutCancel(ctx)) }()

	dir, err := os.MkdirTemp("", "confbench-latency")
	if err != nil {
		return nil, err
	}
	if lc.Keep {
		lc.Logger.Info("the run's directory is kept", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep.SpreadSets = spreadSubdirs(dir)
	bins := latencyBins{agent: lc.ConfAgentBin, push: lc.ConfPushBin, zkraw: lc.ZkrawBin, zkfloor: lc.ZkfloorBin}
	for _, b := range []struct {
		name  string
		dst   *string
		build func(context.Context, string) error
	}{
		{"confagent", &bins.agent, func(ctx context.Context, out string) error { return confagentbin.BuildCommand(ctx, "confagent", out) }},
		{"confpush", &bins.push, func(ctx context.Context, out string) error { return confagentbin.BuildCommand(ctx, "confpush", out) }},
		{"zkraw", &bins.zkraw, func(ctx context.Context, out string) error { return confagentbin.BuildTool(ctx, "zkraw", out) }},
		{"zkfloor", &bins.zkfloor, func(ctx context.Context, out string) error { return confagentbin.BuildTool(ctx, "zkfloor", out) }},
	} {
		if *b.dst == "" {
			*b.dst = filepath.Join(dir, b.name)
			if err := b.build(ctx, *b.dst); err != nil {
				return nil, fmt.Errorf("latency: %w", err)
			}
		}
	}
	for i, s := range lc.Sets {
		lc.Logger.Info("measuring single-host latency", "set", s.String())
		r, err := e.measureLatency(ctx, lc, s, fmt.Sprintf("lat-%d-%d-%d-%d", s.Items, s.Changed, s.Size, i), bins, dir, false)
		if err != nil {
			return nil, fmt.Errorf("latency: %s: %w", s, err)
		}
		rep.Sets = append(rep.Sets, *r)
	}
	if lc.Memory.Items > 0 {
		lc.Logger.Info("measuring the agent's memory with a large set", "set", lc.Memory.String())
		r, err := e.measureLatency(ctx, lc, lc.Memory, fmt.Sprintf("lat-mem-%d-%d", lc.Memory.Items, lc.Memory.Size), bins, dir, true)
		if err != nil {
			return nil, fmt.Errorf("latency: memory run %s: %w", lc.Memory, err)
		}
		rep.Memory = r
	}
	rep.Env.LoadEnd = loadAvg()
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Summary = rep.Targets()
	return rep, nil
}

// latencyBins are the programs a latency run starts.
type latencyBins struct {
	agent, push, zkraw, zkfloor string
}

// latencyAgent is the confagent process of one set.
type latencyAgent struct {
	*agentProc
}

// latencyOut are, under base, the agent's dir target and template
// target's file, and the confd-style follower's two files.
type latencyOut struct {
	dir, tmpl, confd, confdTmpl string
}

func latencyDests(base string) latencyOut {
	return latencyOut{
		dir: filepath.Join(base, "out", "d"), tmpl: filepath.Join(base, "out", "t", "all.conf"),
		confd: filepath.Join(base, "confd", "all.conf"), confdTmpl: filepath.Join(base, "confd", "tmpl.conf"),
	}
}

// latencyAgentSpec is how startLatencyAgent starts confagent: bin
// following root (servers, meta, session timeout) under base, with a dir
// target and, unless dirOnly, a template target of tmpl; apply is the
// apply mode ("": the default, all); name names its configuration and log
// files under base ("": confagent); env is added to its environment.
type latencyAgentSpec struct {
	bin                    string
	servers                []string
	root, meta, base, tmpl string
	dirOnly                bool
	apply, name            string
	sessionTimeout         time.Duration
	env                    []string
}

// startLatencyAgent starts confagent as s says, logging as shipped: at
// info level, one "applied" line per apply, which carries the apply's
// phases (readApplyTimings). JSON rather than the default text: the same
// lines and cost, with the cycle's start in nanoseconds (text gives times
// to the millisecond). Two agents of one set (the second with another
// apply mode) share the state directory and the outputs; they must not
// run at the same time.
func startLatencyAgent(s latencyAgentSpec) (*latencyAgent, error) {
	name := s.name
	if name == "" {
		name = "confagent"
	}
	out := latencyDests(s.base)
	a := &agentProc{id: "confbench-latency", base: s.base, dest: out.dir, log: name + ".log"}
	la := &latencyAgent{agentProc: a}
	more := ""
	if !s.dirOnly {
		more = fmt.Sprintf("  - name: t\n    type: template\n    src: %s\n    dest: %s\n", s.tmpl, out.tmpl)
	}
	cfg := agentYAML(s.servers, s.sessionTimeout, s.root, s.meta, a, `""`, "level: info\nformat: json", more)
	if s.apply != "" {
		cfg = "apply: " + s.apply + "\n" + cfg
	}
	cfgPath := filepath.Join(s.base, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if err := a.launch(s.bin, cfgPath, s.env); err != nil {
		return nil, err
	}
	return la, nil
}

// renderWatch records when each follower's output holds the generation
// being waited for, from inotify events: the dir target's ..data link
// created, a file renamed into place.
type renderWatch struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

// watchRendered watches paths[i] (a dir target's directory, or a file
// replaced by rename) for follower i.
func watchRendered(paths []string, rec *recorder) (*renderWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	type watched struct {
		i   int
		dir bool // a dir target: the generation is under ..data
	}
	byEvent := map[string]watched{}
	for i, p := range paths {
		fi, err := os.Stat(p)
		isDir := err == nil && fi.IsDir()
		watchDir := p
		if !isDir {
			watchDir = filepath.Dir(p)
		}
		if err := w.Add(watchDir); err != nil {
			w.Close()
			return nil, err
		}
		if isDir {
			byEvent[filepath.Join(p, render.DataLink)] = watched{i: i, dir: true}
		} else {
			byEvent[filepath.Clean(p)] = watched{i: i}
		}
	}
	rw := &renderWatch{w: w, done: make(chan struct{})}
	go func() {
		defer close(rw.done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				wd, ok := byEvent[filepath.Clean(ev.Name)]
				if !ok || !ev.Has(fsnotify.Create) {
					continue
				}
				now := time.Now().UnixNano()
				var g int64
				if wd.dir {
					// Any item of the generation names it in its header
					// only if it changed; the dir target's first item
					// changed last at some generation: read every header.
					g = dirGeneration(ev.Name)
				} else if b, err := os.ReadFile(ev.Name); err == nil {
					g = genOf(b)
				}
				if g > 0 {
					rec.reached(wd.i, g, now)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return rw, nil
}

// dirGeneration is the newest generation named by the headers of the
// items under a dir target's ..data link: the generation it holds.
func dirGeneration(data string) int64 {
	ents, err := os.ReadDir(data)
	if err != nil {
		return 0
	}
	var g int64
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(data, e.Name())); err == nil {
			g = max(g, genOf(b))
		}
	}
	return g
}

func (rw *renderWatch) close() {
	rw.w.Close()
	<-rw.done
}

// measureLatency measures one set. A memory run (memory) has the dir
// target only and no confpush phase. A set lc.independentPass names gets,
// after its confpush phase, a second in-process pass with the agent
// restarted under `apply: independent` (measureIndependent).
func (e *env) measureLatency(ctx context.Context, lc LatencyConfig, set LatencySet, name string, bins latencyBins, dir string, memory bool) (*LatencySetResult, error) {
	res := &LatencySetResult{Items: set.Items, Changed: set.Changed, Size: set.Size, PassFigures: PassFigures{Phases: map[string]Pct{}}, LoadStart: loadAvg()}
	sched := newSchedule(name, set.Items, set.Size, set.Changed)
	t, err := e.newTargetMode(ctx, name, sched, true)
	if err != nil {
		return nil, err
	}
	defer t.close()
	base := filepath.Join(dir, name)
	followers := latFollowers
	if memory {
		followers = []string{latDir, latConfd}
	}
	// Every output is watched before anything renders it.
	out := latencyDests(base)
	for _, d := range []string{out.dir, filepath.Dir(out.tmpl), filepath.Dir(out.confd)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	probeDir := filepath.Join(filepath.Dir(out.dir), "probe")
	if err := os.Mkdir(probeDir, 0o755); err != nil {
		return nil, err
	}
	if res.InodeBefore, err = probeInodes(probeDir, "before", inodeProbeFiles); err != nil {
		return nil, err
	}
	tmpl := filepath.Join(base, "all.conf.tmpl")
	if err := os.WriteFile(tmpl, []byte(benchshape.LatencyTemplate), 0o644); err != nil {
		return nil, err
	}
	paths := map[string]string{latDir: out.dir, latTemplate: out.tmpl, latConfd: out.confd, latConfdTemplate: out.confdTmpl}
	var watched []string
	for _, f := range followers {
		watched = append(watched, paths[f])
	}
	rec := newRecorder(len(followers))
	status := newRecorder(1)
	first := rec.expect(t.gen)
	firstStatus := status.expect(t.gen)
	rw, err := watchRendered(watched, rec)
	if err != nil {
		return nil, err
	}
	defer rw.close()
	spec := latencyAgentSpec{bin: bins.agent, servers: e.srv.addrs, root: t.root, meta: e.meta, base: base, tmpl: tmpl,
		dirOnly: memory, sessionTimeout: lc.SessionTimeout, env: lc.ConfAgentEnv}
	a, err := startLatencyAgent(spec)
	if err != nil {
		return nil, err
	}
	// The agent of the moment: the independent pass replaces it.
	agent := a
	defer func() { agent.stop() }()
	confdTmpl := ""
	if !memory {
		confdTmpl = out.confdTmpl
	}
	cd, err := startConfdStyle(bins.zkraw, e.srv.addrs, t.root, out.confd, tmpl, confdTmpl, base)
	if err != nil {
		return nil, err
	}
	defer cd.stop()
	obs, err := dial(ctx, dialOptions{servers: e.srv.addrs, sessionTimeout: lc.SessionTimeout, counts: e.newCounts(), log: e.quiet})
	if err != nil {
		return nil, err
	}
	defer obs.conn.Close()
	sw := watchStatus(ctx, obs.conn, []string{layout.New(t.root, e.meta).StatusNode(a.id)}, status)
	defer sw.close()
	if err := rec.wait(ctx, first, lc.WaitTimeout); err != nil {
		return nil, fmt.Errorf("first render: %w\nagent log:\n%s\nconfd-style log:\n%s", err, a.logTail(), cd.logTail())
	}
	if err := status.wait(ctx, firstStatus, lc.WaitTimeout); err != nil {
		return nil, fmt.Errorf("first status: %w", err)
	}

	// In-process publisher: commit-ack → rendered, phase by phase.
	publishes := lc.Publishes
	if memory {
		publishes = lc.MemoryPublishes
	}
	perfPath := ""
	if lc.PerfDir != "" && !memory {
		perfPath = filepath.Join(lc.PerfDir, perfName(set)+".perf.data")
	}
	run, err := e.publishInProcess(ctx, lc, t, rec, status, a, cd, len(followers), publishes, perfPath)
	if err != nil {
		return nil, err
	}
	res.Mode = t.mode
	res.AgentCPU, res.ConfdCPU, res.CPURatio = run.agentCPU, run.confdCPU, finite(ratio(run.agentCPU, run.confdCPU))
	res.AgentRSS, res.ConfdRSS = memoryOf(a.pid(), run.agentMem), memoryOf(cd.pid(), run.confdMem)
	if run.prof != nil {
		if res.Perf, res.CPUPhases, res.PerfSamples, err = run.prof.report(lc.PerfDir, perfName(set)); err != nil {
			return nil, err
		}
	}
	res.Publish = pct(run.pubCall)
	res.Rows = run.rows(set, followers)
	if res.Phases, err = run.phases(a.logPath(), cd.logPath); err != nil {
		return nil, err
	}

	if res.Fsync, err = probeFsync(filepath.Join(base, "state"), 20); err != nil {
		return nil, err
	}
	if res.InodeAfter, err = probeInodes(probeDir, "after", inodeProbeFiles); err != nil {
		return nil, err
	}
	if g, ok := ext4GroupsOf(probeDir); ok {
		res.Groups = g.inodeGroupsOf(filepath.Join(out.dir, poolDir), res.InodeAfter.firstIno, out.confd)
	}
	if !memory {
		fl, err := e.newFloor(obs.conn, t, base)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		res.FloorItems = len(fl.items)
		from := t.gen
		if err := e.measureConfPush(ctx, lc, t, res, rec, followers, bins, base, fl); err != nil {
			return nil, err
		}
		// A marker-mode set's ratio carries no bound (several
		// transactions by design), and its catch-up publishes would
		// rewrite the root dozens of times: no like-for-like pass.
		if lc.ConfPushAlone && res.Mode != manifest.ModeMarker {
			if res.Alone, err = e.measureConfPushAlone(ctx, lc, set, name, from, fl, bins, base, obs.conn); err != nil {
				return nil, fmt.Errorf("confpush alone: %w", err)
			}
		}
	}
	if !memory && lc.independentPass(set) {
		started := time.Now()
		a.stop()
		spec.apply, spec.name = "independent", "confagent-independent"
		if agent, err = startLatencyAgent(spec); err != nil {
			agent = a // stopped already; stopping it again is a no-op
			return nil, err
		}
		if res.Independent, err = e.measureIndependent(ctx, started, lc, set, t, rec, status, agent, cd, followers); err != nil {
			return nil, err
		}
	}
	if err := checkDir(a.dest, sched, t.gen); err != nil {
		return nil, err
	}
	res.LoadEnd = loadAvg()
	return res, nil
}

// measureIndependent is the like-for-like pass of the dir target: agent
// b, started on the same state directory and outputs as the set's first
// agent with only `apply: independent` added, published to in process
// beside the same confd-style follower cd. Under `apply: all` the dir
// target is swapped only once the template target is staged too; under
// `apply: independent` the dir target (configured first) is staged, made
// durable and swapped before the template target is rendered, as the
// follower writes its file before it renders its template. started is
// when the first agent's stop began (the pass's Seconds count from it).
func (e *env) measureIndependent(ctx context.Context, started time.Time, lc LatencyConfig, set LatencySet, t *target, rec, status *recorder, b *latencyAgent, cd *confdProc, followers []string) (*LatencyPass, error) {
	p := &LatencyPass{Apply: "independent", LoadStart: loadAvg()}
	// The restarted agent loads the state the first left (the outputs in
	// place hold it) and recreates its status node: ready once the node
	// says the generation in place.
	ready := status.expect(t.gen)
	if err := status.wait(ctx, ready, lc.WaitTimeout); err != nil {
		return nil, fmt.Errorf("apply: independent agent's start: %w\nagent log:\n%s", err, b.logTail())
	}
	run, err := e.publishInProcess(ctx, lc, t, rec, status, b, cd, len(followers), lc.Publishes, "")
	if err != nil {
		return nil, fmt.Errorf("apply: independent: %w", err)
	}
	p.AgentCPU, p.ConfdCPU, p.CPURatio = run.agentCPU, run.confdCPU, finite(ratio(run.agentCPU, run.confdCPU))
	p.Rows = run.rows(set, followers)
	if p.Phases, err = run.phases(b.logPath(), cd.logPath); err != nil {
		return nil, fmt.Errorf("apply: independent: %w", err)
	}
	p.LoadEnd, p.Seconds = loadAvg(), time.Since(started).Seconds()
	return p, nil
}

// inProcessRun is what one pass of the in-process publisher measured:
// per follower, commit-ack → rendered and publish call → rendered; the
// status node, the publish call → ack, each measured generation's ack;
// CPU per publish and RSS samples of both processes; the perf recording.
type inProcessRun struct {
	rendered, endToEnd [][]int64
	statusAt, pubCall  []int64
	acks               map[int64]int64 // generation → ack, unix ns
	agentCPU, confdCPU float64         // ms per publish
	agentMem, confdMem []int64
	prof               *perfRecord
}

// publishInProcess publishes t's next lc.Warmup+publishes generations
// with the in-process publisher, each awaited at every one of the n
// followers and at the status node, then lc.Gap; the last publishes are
// measured. perfPath, when set, receives a perf recording of agent a
// over the measured publishes (the caller reports or stops run.prof).
func (e *env) publishInProcess(ctx context.Context, lc LatencyConfig, t *target, rec, status *recorder, a *latencyAgent, cd *confdProc, n, publishes int, perfPath string) (run *inProcessRun, err error) {
	run = &inProcessRun{rendered: make([][]int64, n), endToEnd: make([][]int64, n), acks: map[int64]int64{}}
	defer func() {
		if err != nil && run.prof != nil {
			run.prof.stop()
		}
	}()
	var agentCPU0, confdCPU0 time.Duration
	for r := range lc.Warmup + publishes {
		measured := r >= lc.Warmup
		if r == lc.Warmup {
			agentCPU0, confdCPU0 = taskCPU(a.pid()), taskCPU(cd.pid())
			if perfPath != "" {
				if err := os.MkdirAll(filepath.Dir(perfPath), 0o755); err != nil {
					return nil, err
				}
				if run.prof, err = startPerf(a.pid(), perfPath); err != nil {
					return nil, err
				}
			}
		}
		g := t.gen + 1
		ar, sa := rec.expect(g), status.expect(g)
		pt, err := t.publish(ctx, g)
		if err != nil {
			return run, err
		}
		if err := rec.wait(ctx, ar, lc.WaitTimeout); err != nil {
			return run, fmt.Errorf("generation %d: %w\nagent log:\n%s\nconfd-style log:\n%s", g, err, a.logTail(), cd.logTail())
		}
		if err := status.wait(ctx, sa, lc.WaitTimeout); err != nil {
			return run, fmt.Errorf("generation %d status: %w", g, err)
		}
		if measured {
			for i := range n {
				run.rendered[i] = append(run.rendered[i], ar.at[i]-pt.acked)
				run.endToEnd[i] = append(run.endToEnd[i], ar.at[i]-pt.call)
			}
			run.statusAt = append(run.statusAt, sa.at[0]-pt.acked)
			run.pubCall = append(run.pubCall, pt.acked-pt.call)
			run.acks[g] = pt.acked
		}
		if err := work.Sleep(ctx, lc.Gap); err != nil {
			return run, err
		}
		if measured {
			if m, err := readMemStatus(a.pid()); err == nil {
				run.agentMem = append(run.agentMem, m.RSS)
			}
			if m, err := readMemStatus(cd.pid()); err == nil {
				run.confdMem = append(run.confdMem, m.RSS)
			}
		}
	}
	run.agentCPU = ms(int64(taskCPU(a.pid())-agentCPU0)) / float64(publishes)
	run.confdCPU = ms(int64(taskCPU(cd.pid())-confdCPU0)) / float64(publishes)
	return run, nil
}

// rows are the run's in-process rows of set, one per follower.
func (run *inProcessRun) rows(set LatencySet, followers []string) []LatencyRow {
	var out []LatencyRow
	for i, f := range followers {
		out = append(out, LatencyRow{Items: set.Items, Changed: set.Changed, Size: set.Size, Follower: f, Publisher: "in-process",
			Rendered: pct(run.rendered[i]), EndToEnd: pct(run.endToEnd[i])})
	}
	return out
}

// phases are the run's latPhases: the agent's from its log (agentLog),
// the confd-style follower's reads from its log, the first follower's
// (the dir target's) commit-ack → rendered and the status node.
func (run *inProcessRun) phases(agentLog, confdLog string) (map[string]Pct, error) {
	phases, err := readApplyTimings(agentLog, run.acks)
	if err != nil {
		return nil, err
	}
	if phases["confd-style in hand"], err = readConfdTimings(confdLog, run.acks); err != nil {
		return nil, err
	}
	phases["rendered"] = run.rendered[0]
	phases["status node"] = run.statusAt
	out := map[string]Pct{}
	for _, p := range latPhases {
		out[p] = pct(phases[p])
	}
	return out, nil
}

// measureConfPush publishes t's next generations with `confpush publish`
// processes (start → exit, start → rendered), each followed by the raw
// floor fl's process (start → exit, and its three server writes), then by
// the start-up alone of each program. confpush writes the root the set's
// agent and follower watch: its figures are under their load.
func (e *env) measureConfPush(ctx context.Context, lc LatencyConfig, t *target, res *LatencySetResult, rec *recorder, followers []string, bins latencyBins, base string, fl *floor) error {
	items := filepath.Join(base, "items")
	if err := os.MkdirAll(items, 0o755); err != nil {
		return err
	}
	endToEnd := make([][]int64, len(followers))
	var pushTimes, floorTimes, pushStarts, floorStarts []int64
	var floorSession, floorMulti, floorClose []int64
	for r := range lc.Warmup + lc.Publishes {
		g := t.gen + 1
		for n, b := range t.sched.set(g) {
			if err := writeSynced(filepath.Join(items, n), b); err != nil {
				return err
			}
		}
		ar := rec.expect(g)
		start, took, err := runConfPush(ctx, bins.push, e.srv.addrs, t.root, e.meta, items)
		if err != nil {
			return err
		}
		t.gen = g
		if err := rec.wait(ctx, ar, lc.WaitTimeout); err != nil {
			return fmt.Errorf("generation %d (confpush): %w", g, err)
		}
		floorTook, ft, err := fl.run(ctx, bins.zkfloor, e.srv.addrs)
		if err != nil {
			return err
		}
		_, pushStart, err := timedRun(exec.CommandContext(ctx, bins.push, "--version"))
		if err != nil {
			return err
		}
		_, floorStart, err := timedRun(exec.CommandContext(ctx, bins.zkfloor, "start"))
		if err != nil {
			return err
		}
		if r >= lc.Warmup {
			pushTimes = append(pushTimes, took)
			floorTimes = append(floorTimes, floorTook)
			floorSession, floorMulti, floorClose = append(floorSession, ft.Session), append(floorMulti, ft.Multi), append(floorClose, ft.Close)
			pushStarts, floorStarts = append(pushStarts, pushStart), append(floorStarts, floorStart)
			for i := range followers {
				endToEnd[i] = append(endToEnd[i], ar.at[i]-start)
			}
		}
		if err := work.Sleep(ctx, lc.Gap); err != nil {
			return err
		}
	}
	res.ConfPush, res.Floor = pct(pushTimes), pct(floorTimes)
	res.FloorSession, res.FloorMulti, res.FloorClose = pct(floorSession), pct(floorMulti), pct(floorClose)
	res.ConfPushStart, res.FloorStart = pct(pushStarts), pct(floorStarts)
	res.FloorRatio = finite(ratio(res.ConfPush.P50, res.Floor.P50))
	for i, f := range followers {
		res.Rows = append(res.Rows, LatencyRow{Items: len(t.sched.names), Changed: t.sched.changed, Size: t.sched.size, Follower: f, Publisher: "confpush",
			EndToEnd: pct(endToEnd[i])})
	}
	return nil
}

// measureConfPushAlone measures confpush against its floor like for like
// (ConfPushAlone): in the set's confpush phase confpush writes the root
// the set's agent and confd-style follower watch, so its commit's answer,
// its close and its exit run while the two read and render on the
// machine's CPUs, and the floor writes a root nobody watches. Here
// confpush publishes the same shape of set (a schedule of its own: the
// same items, sizes and changes per publish) to a root nobody watches
// either, which an in-process publisher first brings to generation from
// (the set's root's generation when its confpush phase began: the same
// history, so the history GC falls on the same publishes), while the
// floor fl writes its own root as before. Each round writes and syncs
// confpush's input, then runs the two, each after half the gap, in ABBA
// order (pushFirstIn: neither always follows the other); the
// first lc.Warmup rounds are not measured. The agent and the follower
// stay up (idle: nothing they watch changes). At the end the root must
// hold the last generation, item by item.
func (e *env) measureConfPushAlone(ctx context.Context, lc LatencyConfig, set LatencySet, name string, from int64, fl *floor, bins latencyBins, base string, conn *zk.Conn) (*ConfPushAlone, error) {
	started := time.Now()
	p := &ConfPushAlone{From: from, LoadStart: loadAvg()}
	sched := newSchedule(name+"-alone", set.Items, set.Size, set.Changed)
	t, err := e.newTargetMode(ctx, name+"-alone", sched, true)
	if err != nil {
		return nil, err
	}
	defer t.close()
	for g := t.gen + 1; g <= from; g++ {
		if _, err := t.publish(ctx, g); err != nil {
			return nil, err
		}
	}
	items := filepath.Join(base, "items-alone")
	if err := os.MkdirAll(items, 0o755); err != nil {
		return nil, err
	}
	var pushTimes, floorTimes, ratios []int64
	var pushBy, floorBy [2][]int64 // by position: first, second
	var floorSession, floorMulti, floorClose []int64
	pause := lc.Gap / 2
	for r := range lc.Warmup + lc.Publishes {
		g := t.gen + 1
		for n, b := range sched.set(g) {
			if err := writeSynced(filepath.Join(items, n), b); err != nil {
				return nil, err
			}
		}
		pushFirst := pushFirstIn(r - lc.Warmup)
		var took, floorTook int64
		var ft floorTimings
		for _, push := range []bool{pushFirst, !pushFirst} {
			if err := work.Sleep(ctx, pause); err != nil {
				return nil, err
			}
			if push {
				if _, took, err = runConfPush(ctx, bins.push, e.srv.addrs, t.root, e.meta, items); err != nil {
					return nil, err
				}
				t.gen = g
			} else if floorTook, ft, err = fl.run(ctx, bins.zkfloor, e.srv.addrs); err != nil {
				return nil, err
			}
		}
		if r < lc.Warmup {
			continue
		}
		pushTimes, floorTimes = append(pushTimes, took), append(floorTimes, floorTook)
		ratios = append(ratios, took*1000/max(1, floorTook)) // per mille
		floorSession, floorMulti, floorClose = append(floorSession, ft.Session), append(floorMulti, ft.Multi), append(floorClose, ft.Close)
		first := 0
		if !pushFirst {
			first = 1
		}
		pushBy[first] = append(pushBy[first], took)
		floorBy[1-first] = append(floorBy[1-first], floorTook)
	}
	if err := checkRoot(conn, t.root, sched, t.gen); err != nil {
		return nil, err
	}
	p.ConfPush, p.Floor = pct(pushTimes), pct(floorTimes)
	p.Ratio = finite(ratio(p.ConfPush.P50, p.Floor.P50))
	if len(ratios) > 0 {
		s := slices.Sorted(slices.Values(ratios))
		p.PairRatio = float64(rank(s, 0.5)) / 1000
	}
	p.ConfPushFirst, p.ConfPushSecond = pct(pushBy[0]).P50, pct(pushBy[1]).P50
	p.FloorFirst, p.FloorSecond = pct(floorBy[0]).P50, pct(floorBy[1]).P50
	p.FloorSession, p.FloorMulti, p.FloorClose = pct(floorSession), pct(floorMulti), pct(floorClose)
	p.LoadEnd, p.Seconds = loadAvg(), time.Since(started).Seconds()
	return p, nil
}

// pushFirstIn says whether confpush runs before the floor in round i of
// the like-for-like pass (i counts the measured rounds from 0; negative
// for warm-up rounds): ABBA order, confpush first in rounds 0 and 3 of
// every four. Each program runs first in half the rounds, and a drift of
// the machine's load within four rounds falls on both alike. Plain
// alternation (ABAB) would put every history GC of confpush (every sixth
// publish: always rounds of one parity) in the same order, so the
// programs' p50s by order would measure the GC as well; in ABBA, rounds
// six apart have opposite orders.
func pushFirstIn(i int) bool {
	i = (i%4 + 4) % 4
	return i == 0 || i == 3
}

// checkRoot checks that root holds generation g of sched: its manifest
// names g and every item of the set with its content.
func checkRoot(conn *zk.Conn, root string, sched *schedule, g int64) error {
	data, _, err := conn.Get(root)
	if err != nil {
		return fmt.Errorf("read %s: %w", root, err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", root, err)
	}
	want := sched.set(g)
	if m.Generation != g || len(m.Items) != len(want) {
		return fmt.Errorf("%s holds generation %d of %d items, want %d of %d", root, m.Generation, len(m.Items), g, len(want))
	}
	for n, b := range want {
		if !m.Matches(n, b) {
			return fmt.Errorf("%s: item %s is not generation %d's", root, n, g)
		}
	}
	return nil
}

// memoryOf summarises the RSS samples of pid with its current status.
func memoryOf(pid int, samples []int64) Memory {
	var m Memory
	if len(samples) > 0 {
		s := slices.Sorted(slices.Values(samples))
		m.Steady, m.Max = mib(rank(s, 0.5)), mib(s[len(s)-1])
	}
	if st, err := readMemStatus(pid); err == nil {
		// The kernel updates VmHWM lazily: memory returned to it (the Go
		// scavenger's madvise) can leave it below a sample taken before.
		m.Peak, m.Anon, m.File = max(mib(st.HWM), m.Max), mib(st.RSSAnon), mib(st.RSSFile)
	}
	return m
}

// finite is v, or 0 for NaN (JSON has no NaN).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// perfName is the base name of a set's perf files.
func perfName(set LatencySet) string {
	return fmt.Sprintf("latency-agent-%dx%d-%s", set.Items, set.Changed, sizeTag(set.Size))
}

// sizeTag names a size in file names: 1k, 64k, 100b.
func sizeTag(b int) string {
	if b%1024 == 0 {
		return fmt.Sprintf("%dk", b/1024)
	}
	return fmt.Sprintf("%db", b)
}

// InodeProbe is one run of the inode-creation probe: N empty files
// created one after another in a directory (an exclusive open and a
// close, as the dir target's pool makes its files).
type InodeProbe struct {
	// N is the number of files; Create is one creation (ms, as every
	// Pct; the report prints µs); Total is the N creations together, ms;
	// Load is the 1-minute load average just before the probe.
	N      int     `json:"n"`
	Create Pct     `json:"create"`
	Total  float64 `json:"create_all_ms"`
	Load   float64 `json:"load_average"`
	// firstIno is the inode number the first file got (InodeGroups).
	firstIno uint64
}

// poolDir is the agent's dir target's pool of empty files
// (internal/render.PoolDir, which this module cannot import).
const poolDir = "..pool"

// inodeProbeFiles is how many files one inode-creation probe makes:
// enough for a p90.
const inodeProbeFiles = 100

// probeInodes times n creations of empty files in dir, named after tag
// (InodeProbe). dir is a directory of the benchmark's own, beside the
// agent's dir target (never inside an output: the agent would see the
// files), so that the kernel places the files in the same block group as
// the outputs, as far as ext4's placement allows. The files stay, removed
// with the run's directory at its end: removed now, they would be
// recently freed inodes of that group, which every creation of the
// set's agent and follower (and the next probe) would step over for the
// next minutes. An error removes what the probe made.
func probeInodes(dir, tag string, n int) (InodeProbe, error) {
	p := InodeProbe{N: n, Load: loadAvg()}
	names := make([]string, 0, n)
	samples := make([]int64, 0, n)
	start := time.Now()
	var err error
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("%s-%d", tag, i))
		t := time.Now()
		var f *os.File
		if f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			break
		}
		samples = append(samples, int64(time.Since(t)))
		names = append(names, name)
		if i == 0 {
			if st, serr := f.Stat(); serr == nil {
				if sys, ok := st.Sys().(*syscall.Stat_t); ok {
					p.firstIno = sys.Ino
				}
			}
		}
		if err = f.Close(); err != nil {
			break
		}
	}
	if err != nil {
		for _, name := range names {
			_ = os.Remove(name) // the creation's error is the one returned
		}
		return InodeProbe{}, fmt.Errorf("inode probe: %w", err)
	}
	p.Total, p.Create = ms(int64(time.Since(start))), pct(samples)
	return p, nil
}

// probeFsync times n durable 4 KiB file creations in dir (write, fsync,
// fsync of dir).
func probeFsync(dir string, n int) (Pct, error) {
	var samples []int64
	buf := bytes.Repeat([]byte("x"), 4096)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf(".fsync-probe-%d", i))
		start := time.Now()
		f, err := os.Create(p)
		if err != nil {
			return Pct{}, err
		}
		_, err = f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err == nil {
			var d *os.File
			if d, err = os.Open(dir); err == nil {
				err = d.Sync()
				d.Close()
			}
		}
		samples = append(samples, int64(time.Since(start)))
		os.Remove(p)
		if err != nil {
			return Pct{}, fmt.Errorf("fsync probe: %w", err)
		}
	}
	return pct(samples), nil
}

// writeSynced writes b to the file path (created or truncated) and
// returns once it is on disk. confpush's input is rewritten right before
// each of its runs; left to the kernel, the writeback of those bytes
// (ext4 starts it at the close of a truncated file) shares the disk with
// the ZooKeeper server's transaction-log fsyncs of confpush's session and
// commit, and the floor, which has no input, runs without it: at 20/1 ×
// 64 KiB (1.28 MB rewritten per publish) confpush's session came 2.5–4.4
// ms after the floor's, and level with it once the items were synced
// first (docs/bench/latency-pushsmall-2026-11-28b/notes.md). An
// operator's files are written before the publish, not during it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runConfPush runs `confpush publish DIR` and returns when it started
// (unix ns) and how long it ran.
func runConfPush(ctx context.Context, bin string, servers []string, root, meta, dir string) (int64, int64, error) {
	return timedRun(exec.CommandContext(ctx, bin, "--zk", strings.Join(servers, ","), "--root", root, "--meta", meta, "publish", dir))
}

// timedRun runs cmd and returns when it started (unix ns) and how long it
// ran (ns); its output goes into the error (its standard output only
// when cmd.Stdout is not set).
func timedRun(cmd *exec.Cmd) (int64, int64, error) {
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args[:min(2, len(cmd.Args))], " "), err, out.Bytes())
	}
	return start.UnixNano(), int64(took), nil
}

// readConfdTimings reads the confd-style follower's "zkraw timings" lines
// and returns commit-ack → every item in hand of the generations in acks,
// from the first line of each: in marker mode the next publish's step 6c
// rewrites the root with the manifest unchanged, and the follower reads
// and renders the same generation a second time, a publish later (a
// second line, hundreds of ms after that generation's ack at 20 × 64
// KiB), which is not when it first had the items.
func readConfdTimings(path string, acks map[int64]int64) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int64
	seen := map[int64]bool{}
	for line := range bytes.Lines(b) {
		js, ok := bytes.CutPrefix(line, []byte("zkraw timings "))
		if !ok {
			continue
		}
		var l struct {
			Generation int64 `json:"generation"`
			Items      int64 `json:"items"`
		}
		if err := json.Unmarshal(js, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ack, ok := acks[l.Generation]; ok && !seen[l.Generation] {
			seen[l.Generation] = true
			out = append(out, l.Items-ack)
		}
	}
	return out, nil
}

// readApplyTimings reads the phases off the agent's "applied" lines (an
// info-level line per apply that changed an output) and returns, per
// phase, the samples of the generations in acks (commit-ack, unix ns).
func readApplyTimings(path string, acks map[int64]int64) (map[string][]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"msg":"applied"`)) {
			continue
		}
		var l struct {
			Level      string    `json:"level"`
			Generation int64     `json:"generation"`
			CycleStart time.Time `json:"cycle_start"`
			Fetch      float64   `json:"fetch_seconds"`
			Verify     float64   `json:"verify_seconds"`
			Persist    float64   `json:"persist_seconds"`
			Stage      float64   `json:"stage_seconds"`
			Check      float64   `json:"check_seconds"`
			Swap       float64   `json:"swap_seconds"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ack, ok := acks[l.Generation]
		if !ok || l.Level != "INFO" || l.CycleStart.IsZero() {
			continue // not measured, the cache's debug line, or no fetch
		}
		ns := func(sec float64) int64 { return int64(sec * 1e9) }
		out["notification"] = append(out["notification"], l.CycleStart.UnixNano()-ack)
		out["reads"] = append(out["reads"], ns(l.Fetch))
		out["in hand"] = append(out["in hand"], l.CycleStart.UnixNano()+ns(l.Fetch)-ack)
		out["verify"] = append(out["verify"], ns(l.Verify))
		out["persist"] = append(out["persist"], ns(l.Persist))
		out["stage"] = append(out["stage"], ns(l.Stage))
		out["check"] = append(out["check"], ns(l.Check))
		out["swap"] = append(out["swap"], ns(l.Swap))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n := len(out["reads"]); n != len(acks) {
		return nil, fmt.Errorf("%s: %d applies with timings for %d measured publishes (a publish coalesced, or the agent's applied lines lack them)", path, n, len(acks))
	}
	return out, nil
}

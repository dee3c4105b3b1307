// Package bench is zkconf's benchmark harness (cmd/confbench, make bench).
//
// It measures what a config distribution system is judged by, each figure
// beside a baseline measured in the same run on the same ZooKeeper:
//
//   - Propagation: from the moment the publisher's commit (its Multi)
//     leaves the client to the moment each follower holds the new
//     generation, for fleets of N followers in one process, each with its
//     own session: zkconf caches, the floor (raw go-zookeeper: GetW on the
//     root, then read only the changed items) and the naive re-read (raw
//     go-zookeeper: read every item after each notification, as confd
//     does). All three follow roots written by the same publisher, so the
//     server holds the same data and runs the same transactions; their
//     publishes are interleaved round-robin so that load from elsewhere on
//     the machine hits all three alike.
//   - Publish latency (call to commit acknowledged), and the publish of
//     100 × 4 KiB against a raw Multi of the same writes.
//   - ZooKeeper cost: requests per publish per follower, counted by the
//     followers, by a tap on every connection, and by the server
//     (mntr zk_packets_received), which must all agree.
//   - confagent: propagation to the rendered file on disk, and the
//     footprint (RSS, CPU) of one agent holding 100 × 4 KiB items, idle and
//     under one publish per second.
//
// Commit times come from a tap on the publisher's connection (the first
// Multi after the publish starts, and its reply), so package publish is
// measured as it is, without hooks.
package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Config says what to measure. Zero values take the defaults of
// DefaultConfig; Quick shrinks them to a smoke run of a few seconds.
type Config struct {
	// ZK lists servers to use; empty starts a throw-away ZooKeeper of
	// Ensemble servers (1: standalone).
	ZK       []string
	Ensemble int
	// Observers adds observers to an own ensemble: followers connect only
	// to them and publishers only to the Ensemble voters, the layout the
	// README recommends for large fleets.
	Observers int
	// ServerHeap is each own server's -Xmx ("1g" when empty).
	ServerHeap string
	// Kinds are the follower kinds measured (zkconf, floor, naive; all
	// three when empty).
	Kinds []string
	// OneKindPerPass measures one kind of follower at a time instead of
	// interleaving their publishes: only N sessions are open at once (not
	// one per kind), so N = 10,000 fits a 20,000 descriptor limit.
	OneKindPerPass bool
	// Herd, when positive, measures the herd after the propagation
	// measurement: Herd zkconf caches on the followers' servers, one of
	// which is restarted (see herd.go).
	Herd int
	// ResyncJitter is the caches' cache.WithResyncJitter in the herd
	// measurement (0: none).
	ResyncJitter time.Duration
	// Items, ItemSize and Changed shape the followed roots: Items items of
	// ItemSize bytes, Changed of which change per publish.
	Items, ItemSize, Changed int
	// Fleets are the fleet sizes N to measure.
	Fleets []int
	// Publishes is the number of measured publishes per fleet size and
	// kind; Warmup publishes precede them unmeasured.
	Publishes, Warmup int
	// Runs repeats the propagation, publish and confagent measurements;
	// the report gives the median of the runs.
	Runs int
	// ConfAgents is the number of confagent processes rendering a dir
	// target (0: no confagent measurement, footprint included).
	ConfAgents int
	// ConfAgentBin is a built confagent; empty builds ./cmd/confagent.
	// ConfAgentEnv adds KEY=VALUE settings to the agents' environment
	// (GOGC or GOMEMLIMIT, say, to see how they move the footprint).
	ConfAgentBin string
	ConfAgentEnv []string
	// FootprintItems × FootprintItemSize is the set the footprint agent
	// holds; FootprintIdle and FootprintLoad are the durations of its idle
	// and 1 publish/s phases.
	FootprintItems, FootprintItemSize int
	FootprintIdle, FootprintLoad      time.Duration
	// PublishItems × PublishItemSize is the set of the publish-cost
	// measurement (every item changes at every publish).
	PublishItems, PublishItemSize int
	// Concurrency is the number of reads the baselines keep in flight
	// (the cache's default fetch concurrency, for a like-for-like
	// comparison).
	Concurrency int
	// SessionTimeout of every benchmark session.
	SessionTimeout time.Duration
	// Gap is the pause between two publishes, once every follower caught
	// up. AgentGap is the pause between two publishes to confagents: longer
	// than their drift-repair debounce (200 ms) and the repair itself, so
	// that each publish finds them idle, as in production where publishes
	// are minutes apart.
	Gap, AgentGap time.Duration
	// WaitTimeout bounds the wait for a fleet to reach a generation.
	WaitTimeout time.Duration
	// ProfileDir, when set, receives CPU and allocation profiles of the
	// largest fleet, of the publish cost measurement and of an in-process
	// agent rendering the confagent workload.
	ProfileDir string
	// Quick is the smoke version: small fleets, few publishes, short
	// footprint phases.
	Quick bool
	// CanaryFollowers is the number of labelled caches of the canary
	// measurement (canary.go; 0: not measured); CanaryOnly measures
	// nothing else.
	CanaryFollowers int
	CanaryOnly      bool
	// Logger receives progress; slog.Default when nil.
	Logger *slog.Logger
}

// DefaultConfig returns the full benchmark's configuration.
func DefaultConfig() Config {
	return Config{
		Ensemble: 1, Items: 20, ItemSize: 1024, Changed: 1,
		Fleets:    []int{1, 10, 100, 1000},
		Publishes: 50, Warmup: 5, Runs: 3,
		FootprintItems: 100, FootprintItemSize: 4096,
		FootprintIdle: 60 * time.Second, FootprintLoad: 60 * time.Second,
		PublishItems: 100, PublishItemSize: 4096,
		Concurrency:    8,
		SessionTimeout: 30 * time.Second,
		Gap:            20 * time.Millisecond,
		AgentGap:       500 * time.Millisecond,
		WaitTimeout:    2 * time.Minute,

		CanaryFollowers: 20,
	}
}

// QuickConfig returns the smoke version: N=10, a few publishes, a short
// footprint. Fields it does not set keep DefaultConfig's values.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Fleets = []int{10}
	c.Publishes, c.Warmup, c.Runs = 5, 1, 1
	c.FootprintIdle, c.FootprintLoad = time.Second, 2*time.Second
	c.Gap, c.AgentGap = 5*time.Millisecond, 250*time.Millisecond
	c.WaitTimeout = 30 * time.Second
	c.Quick = true
	c.CanaryFollowers = 4
	return c
}

// minPublishes is the least number of measured publishes of a full run.
const minPublishes = 50

// validate checks the configuration.
func (c *Config) validate() error {
	var errs []error
	if c.Ensemble < 1 {
		errs = append(errs, fmt.Errorf("ensemble %d: at least 1 server", c.Ensemble))
	}
	if c.Observers < 0 || (c.Observers > 0 && (c.Ensemble < 2 || len(c.ZK) > 0)) {
		errs = append(errs, fmt.Errorf("observers %d: an own ensemble of at least 2 voters takes observers (--ensemble 3, no --zk)", c.Observers))
	}
	for _, k := range c.Kinds {
		if !slices.Contains(allKinds(), k) {
			errs = append(errs, fmt.Errorf("kind %q: one of %v", k, allKinds()))
		}
	}
	if c.Herd < 0 || c.ResyncJitter < 0 {
		errs = append(errs, fmt.Errorf("herd %d, resync jitter %v: out of range", c.Herd, c.ResyncJitter))
	}
	if c.Items < 1 || c.ItemSize < 1 {
		errs = append(errs, fmt.Errorf("items %d × %d bytes: both must be positive", c.Items, c.ItemSize))
	}
	if c.Changed < 1 || c.Changed > c.Items {
		errs = append(errs, fmt.Errorf("changed %d: between 1 and items (%d)", c.Changed, c.Items))
	}
	if len(c.Fleets) == 0 || slices.ContainsFunc(c.Fleets, func(n int) bool { return n < 1 }) {
		errs = append(errs, fmt.Errorf("fleet sizes %v: at least one, all positive", c.Fleets))
	}
	if c.Publishes < 1 || (!c.Quick && c.Publishes < minPublishes) {
		errs = append(errs, fmt.Errorf("publishes %d: at least %d (or use --quick)", c.Publishes, minPublishes))
	}
	if c.Warmup < 0 || c.Runs < 1 || c.ConfAgents < 0 {
		errs = append(errs, fmt.Errorf("warmup %d, runs %d, confagents %d: out of range", c.Warmup, c.Runs, c.ConfAgents))
	}
	if c.FootprintItems < 1 || c.FootprintItemSize < 1 || c.PublishItems < 1 || c.PublishItemSize < 1 {
		errs = append(errs, errors.New("footprint and publish sets must have positive sizes"))
	}
	if c.Concurrency < 1 || c.SessionTimeout <= 0 || c.WaitTimeout <= 0 || c.Gap < 0 || c.AgentGap < 0 {
		errs = append(errs, errors.New("concurrency, session timeout and wait timeout must be positive"))
	}
	if c.CanaryFollowers < 0 || c.CanaryFollowers == 1 || (c.CanaryOnly && c.CanaryFollowers == 0) {
		errs = append(errs, fmt.Errorf("canary followers %d: 0 (none, not with canary-only) or at least 2 (half of them are the canary side)", c.CanaryFollowers))
	}
	return errors.Join(errs...)
}

func (c *Config) maxFleet() int { return slices.Max(c.Fleets) }

// allKinds are the follower kinds, in measurement order.
func allKinds() []string { return []string{kindProject, kindFloor, kindNaive} }

// kinds are the kinds measured.
func (c *Config) kinds() []string {
	if len(c.Kinds) == 0 {
		return allKinds()
	}
	return c.Kinds
}

// sessionsAtOnce is the most follower sessions open at one time.
func (c *Config) sessionsAtOnce() int {
	n := c.maxFleet()
	if !c.OneKindPerPass {
		n *= len(c.kinds())
	}
	return max(n, c.Herd)
}

func (c *Config) serverHeap() string {
	if c.ServerHeap == "" {
		return "1g"
	}
	return c.ServerHeap
}

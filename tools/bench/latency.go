package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/tools/internal/confagentbin"
)

// The single-host latency benchmark (RunLatency): one ZooKeeper, one
// confagent process rendering a dir target and a template target (every
// file fsynced, as always), and, in the same run on the same root, a
// "confd-style" follower: raw go-zookeeper that watches the root, reads
// every item and renders one file, without verification or fsync. Each set
// (items, items changed per publish) is published first by an in-process
// publisher, whose commit acknowledgement the benchmark sees on the wire
// (commit-ack → rendered), then by `confpush publish` processes (process
// start → rendered, end to end). Rendered means the benchmark's inotify
// watch saw the destination swapped in with the generation's content.

// Followers of the latency benchmark, in the order of the recorder.
const (
	latDir      = "confagent dir"
	latTemplate = "confagent template"
	latConfd    = "confd-style"
)

var latFollowers = []string{latDir, latTemplate, latConfd}

// Phases of the agent's critical path reported by the latency benchmark,
// in order. notification is commit-ack → the cache's cycle starts (the
// watch event's delivery); reads is the cycle until every item is read and
// verified (root read included); verify is the part of it spent hashing
// (summed over reads in flight); persist the state file; stage, check and
// swap the renderer's; status is commit-ack → the status node reports the
// generation (written off the critical path).
var latPhases = []string{"notification", "reads", "verify", "persist", "stage", "check", "swap", "rendered", "status node"}

// LatencySet is one published set: Items items, Changed of them changed
// by every publish.
type LatencySet struct {
	Items, Changed int
}

// LatencyConfig configures RunLatency.
type LatencyConfig struct {
	// ZK is the servers to use; empty starts a throw-away standalone one.
	ZK []string
	// Sets are measured one after the other, each on its own root.
	Sets     []LatencySet
	ItemSize int
	// Publishes measured per set and publisher, after Warmup unmeasured.
	Publishes, Warmup int
	// Gap is the pause after every follower caught up, so that each
	// publish finds them idle.
	Gap time.Duration
	// ConfAgentBin and ConfPushBin: empty builds them.
	ConfAgentBin, ConfPushBin   string
	SessionTimeout, WaitTimeout time.Duration
	Logger                      *slog.Logger
}

// DefaultLatencyConfig is the full benchmark (make bench).
func DefaultLatencyConfig() LatencyConfig {
	return LatencyConfig{
		Sets:     []LatencySet{{20, 1}, {20, 20}, {100, 1}, {100, 100}},
		ItemSize: 1024, Publishes: 50, Warmup: 5, Gap: 200 * time.Millisecond,
		SessionTimeout: 30 * time.Second, WaitTimeout: time.Minute,
	}
}

// QuickLatencyConfig is the smoke version: every row and phase, a couple
// of publishes.
func QuickLatencyConfig() LatencyConfig {
	c := DefaultLatencyConfig()
	c.Sets = []LatencySet{{20, 1}, {20, 20}}
	c.Publishes, c.Warmup, c.Gap = 2, 1, 20*time.Millisecond
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
	Follower string `json:"follower"`
	// Publisher is "in-process" (one Multi, the ack seen on the wire) or
	// "confpush" (a `confpush publish` process).
	Publisher string `json:"publisher"`
	// Rendered is commit-ack → rendered (in-process publisher only).
	Rendered Pct `json:"ack_to_rendered"`
	// EndToEnd is publish start (call, or process start) → rendered.
	EndToEnd Pct `json:"start_to_rendered"`
}

// LatencySetResult is everything measured for one set.
type LatencySetResult struct {
	Items   int          `json:"items"`
	Changed int          `json:"changed"`
	Rows    []LatencyRow `json:"rows"`
	// Phases of the agent (in-process publisher), see latPhases.
	Phases map[string]Pct `json:"agent_phases"`
	// AgentCPU is the agent's CPU milliseconds per publish (user+system,
	// /proc), in-process publisher.
	AgentCPU float64 `json:"agent_cpu_ms_per_publish"`
	// Publish is the in-process publish call → commit acknowledged;
	// ConfPush is `confpush publish` process start → exit (its ack is its
	// last request: exit follows it).
	Publish  Pct `json:"publish_call_to_ack"`
	ConfPush Pct `json:"confpush_start_to_exit"`
	// Fsync is a 4 KiB write and fsync of a new file, then an fsync of
	// its directory, in the agent's state directory, measured between the
	// two publishers' runs: what one durable step costs on the disk at
	// the time (the agent's critical path has several, confd-style none).
	Fsync Pct `json:"fsync_4k_file_and_dir"`
}

// LatencyReport is one RunLatency invocation.
type LatencyReport struct {
	Started time.Time          `json:"started"`
	Seconds float64            `json:"seconds"`
	Env     Environment        `json:"environment"`
	Config  LatencySettings    `json:"settings"`
	Sets    []LatencySetResult `json:"sets"`
}

// LatencySettings are the parameters of a latency run.
type LatencySettings struct {
	Sets              []LatencySet
	ItemSize          int
	Publishes, Warmup int
	Gap               string
}

// RunLatency runs the single-host latency benchmark.
func RunLatency(ctx context.Context, lc LatencyConfig) (*LatencyReport, error) {
	if lc.Logger == nil {
		lc.Logger = slog.Default()
	}
	if len(lc.Sets) == 0 || lc.Publishes < 1 || lc.ItemSize < 1 || lc.Warmup < 0 {
		return nil, errors.New("latency: at least one set, one publish and a positive item size")
	}
	for _, s := range lc.Sets {
		if s.Items < 1 || s.Changed < 1 || s.Changed > s.Items {
			return nil, fmt.Errorf("latency: set %d/%d: changed must be between 1 and items", s.Items, s.Changed)
		}
	}
	rep := &LatencyReport{Started: time.Now(), Config: LatencySettings{Sets: lc.Sets, ItemSize: lc.ItemSize,
		Publishes: lc.Publishes, Warmup: lc.Warmup, Gap: lc.Gap.String()}}
	rep.Env = Environment{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(), Servers: 1, OwnServer: len(lc.ZK) == 0, LoadStart: loadAvg()}
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
	defer os.RemoveAll(dir)
	agentBin, pushBin := lc.ConfAgentBin, lc.ConfPushBin
	for _, b := range []struct {
		name string
		dst  *string
	}{{"confagent", &agentBin}, {"confpush", &pushBin}} {
		if *b.dst == "" {
			*b.dst = filepath.Join(dir, b.name)
			if err := confagentbin.BuildCommand(ctx, b.name, *b.dst); err != nil {
				return nil, fmt.Errorf("latency: %w", err)
			}
		}
	}
	for i, s := range lc.Sets {
		lc.Logger.Info("measuring single-host latency", "items", s.Items, "changed", s.Changed)
		r, err := e.measureLatency(ctx, lc, s, fmt.Sprintf("lat-%d-%d-%d", s.Items, s.Changed, i), agentBin, pushBin, dir)
		if err != nil {
			return nil, fmt.Errorf("latency: %d items, %d changed: %w", s.Items, s.Changed, err)
		}
		rep.Sets = append(rep.Sets, *r)
	}
	rep.Env.LoadEnd = loadAvg()
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// latencyAgent is the confagent process of one set.
type latencyAgent struct {
	*agentProc
	tmplDest string
	logPath  string
}

// latencyDests are, under base, the agent's dir target, its template
// target's file and the confd-style follower's file.
func latencyDests(base string) (dir, tmpl, confd string) {
	return filepath.Join(base, "out", "d"), filepath.Join(base, "out", "t", "all.conf"), filepath.Join(base, "confd", "all.conf")
}

// latencyTemplate renders the generation (first line, as the items'
// headers say it) and every item.
const latencyTemplate = `gen={{ printf "%08d" generation }}
{{ range names }}{{ item . }}{{ end }}`

// startLatencyAgent starts confagent with a dir and a template target on
// root, logging at debug level in JSON (the "apply timings" lines).
func startLatencyAgent(bin string, servers []string, root, meta, base string, sessionTimeout time.Duration) (*latencyAgent, error) {
	dirDest, tmplDest, _ := latencyDests(base)
	a := &agentProc{id: "confbench-latency", base: base, dest: dirDest}
	la := &latencyAgent{agentProc: a, tmplDest: tmplDest, logPath: filepath.Join(base, "confagent.log")}
	tmpl := filepath.Join(base, "all.conf.tmpl")
	if err := os.WriteFile(tmpl, []byte(latencyTemplate), 0o644); err != nil {
		return nil, err
	}
	cfg := agentYAML(servers, sessionTimeout, root, meta, a, `""`, "level: debug\nformat: json",
		fmt.Sprintf("  - name: t\n    type: template\n    src: %s\n    dest: %s\n", tmpl, la.tmplDest))
	cfgPath := filepath.Join(base, "confagent.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if err := a.launch(bin, cfgPath, nil); err != nil {
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

// measureLatency measures one set.
func (e *env) measureLatency(ctx context.Context, lc LatencyConfig, set LatencySet, name, agentBin, pushBin, dir string) (*LatencySetResult, error) {
	sched := newSchedule(name, set.Items, lc.ItemSize, set.Changed)
	t, err := e.newTarget(ctx, name, sched)
	if err != nil {
		return nil, err
	}
	defer t.close()
	base := filepath.Join(dir, name)
	// Every output is watched before anything renders it.
	dirDest, tmplDest, confdDest := latencyDests(base)
	for _, d := range []string{dirDest, filepath.Dir(tmplDest), filepath.Dir(confdDest)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	rec := newRecorder(len(latFollowers))
	status := newRecorder(1)
	first := rec.expect(t.gen)
	firstStatus := status.expect(t.gen)
	rw, err := watchRendered([]string{dirDest, tmplDest, confdDest}, rec)
	if err != nil {
		return nil, err
	}
	defer rw.close()
	a, err := startLatencyAgent(agentBin, e.srv.addrs, t.root, e.meta, base, lc.SessionTimeout)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	cd, err := startConfdStyle(ctx, e, t.root, confdDest, set.Items, lc.ItemSize)
	if err != nil {
		return nil, err
	}
	defer cd.close()
	obs, err := dial(ctx, dialOptions{servers: e.srv.addrs, sessionTimeout: lc.SessionTimeout, counts: e.newCounts(), log: e.quiet})
	if err != nil {
		return nil, err
	}
	defer obs.conn.Close()
	sw := watchStatus(ctx, obs.conn, []string{layout.New(t.root, e.meta).StatusNode(a.id)}, status)
	defer sw.close()
	if err := rec.wait(ctx, first, lc.WaitTimeout); err != nil {
		return nil, fmt.Errorf("first render: %w\nagent log:\n%s", err, a.logTail())
	}
	if err := status.wait(ctx, firstStatus, lc.WaitTimeout); err != nil {
		return nil, fmt.Errorf("first status: %w", err)
	}

	res := &LatencySetResult{Items: set.Items, Changed: set.Changed, Phases: map[string]Pct{}}
	// In-process publisher: commit-ack → rendered, phase by phase.
	rendered := make([][]int64, len(latFollowers))
	endToEnd := make([][]int64, len(latFollowers))
	var statusAt, pubCall []int64
	acks := map[int64]int64{} // generation → ack, unix ns
	var cpu0 time.Duration
	for r := range lc.Warmup + lc.Publishes {
		measured := r >= lc.Warmup
		if r == lc.Warmup {
			cpu0 = a.cpu()
		}
		g := t.gen + 1
		ar, sa := rec.expect(g), status.expect(g)
		pt, err := t.publish(ctx, g)
		if err != nil {
			return nil, err
		}
		if err := rec.wait(ctx, ar, lc.WaitTimeout); err != nil {
			return nil, fmt.Errorf("generation %d: %w\nagent log:\n%s", g, err, a.logTail())
		}
		if err := status.wait(ctx, sa, lc.WaitTimeout); err != nil {
			return nil, fmt.Errorf("generation %d status: %w", g, err)
		}
		if measured {
			for i := range latFollowers {
				rendered[i] = append(rendered[i], ar.at[i]-pt.acked)
				endToEnd[i] = append(endToEnd[i], ar.at[i]-pt.call)
			}
			statusAt = append(statusAt, sa.at[0]-pt.acked)
			pubCall = append(pubCall, pt.acked-pt.call)
			acks[g] = pt.acked
		}
		if err := work.Sleep(ctx, lc.Gap); err != nil {
			return nil, err
		}
	}
	res.AgentCPU = ms(int64(a.cpu()-cpu0)) / float64(lc.Publishes)
	res.Publish = pct(pubCall)
	for i, f := range latFollowers {
		res.Rows = append(res.Rows, LatencyRow{Items: set.Items, Changed: set.Changed, Follower: f, Publisher: "in-process",
			Rendered: pct(rendered[i]), EndToEnd: pct(endToEnd[i])})
	}
	phases, err := readApplyTimings(a.logPath, acks)
	if err != nil {
		return nil, err
	}
	phases["rendered"] = rendered[0]
	phases["status node"] = statusAt
	for _, p := range latPhases {
		res.Phases[p] = pct(phases[p])
	}

	if res.Fsync, err = probeFsync(filepath.Join(base, "state"), 20); err != nil {
		return nil, err
	}

	// confpush processes: start → exit, and start → rendered.
	items := filepath.Join(base, "items")
	if err := os.MkdirAll(items, 0o755); err != nil {
		return nil, err
	}
	endToEnd = make([][]int64, len(latFollowers))
	var pushTimes []int64
	for r := range lc.Warmup + lc.Publishes {
		g := t.gen + 1
		for n, b := range sched.set(g) {
			if err := os.WriteFile(filepath.Join(items, n), b, 0o644); err != nil {
				return nil, err
			}
		}
		ar := rec.expect(g)
		start, took, err := runConfPush(ctx, pushBin, e.srv.addrs, t.root, e.meta, items)
		if err != nil {
			return nil, err
		}
		t.gen = g
		if err := rec.wait(ctx, ar, lc.WaitTimeout); err != nil {
			return nil, fmt.Errorf("generation %d (confpush): %w\nagent log:\n%s", g, err, a.logTail())
		}
		if r >= lc.Warmup {
			pushTimes = append(pushTimes, took)
			for i := range latFollowers {
				endToEnd[i] = append(endToEnd[i], ar.at[i]-start)
			}
		}
		if err := work.Sleep(ctx, lc.Gap); err != nil {
			return nil, err
		}
	}
	res.ConfPush = pct(pushTimes)
	for i, f := range latFollowers {
		res.Rows = append(res.Rows, LatencyRow{Items: set.Items, Changed: set.Changed, Follower: f, Publisher: "confpush",
			EndToEnd: pct(endToEnd[i])})
	}
	if err := checkDir(a.dest, sched, t.gen); err != nil {
		return nil, err
	}
	return res, nil
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

// cpu is the agent's CPU time so far.
func (a *latencyAgent) cpu() time.Duration {
	st, err := readProcStat(a.pid())
	if err != nil {
		return 0
	}
	return st.cpu
}

// runConfPush runs `confpush publish DIR` and returns when it started
// (unix ns) and how long it ran.
func runConfPush(ctx context.Context, bin string, servers []string, root, meta, dir string) (int64, int64, error) {
	cmd := exec.CommandContext(ctx, bin, "--zk", strings.Join(servers, ","), "--root", root, "--meta", meta, "publish", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("confpush publish: %w\n%s", err, out.Bytes())
	}
	return start.UnixNano(), int64(took), nil
}

// readApplyTimings reads the agent's "apply timings" lines and returns,
// per phase, the samples of the generations in acks (commit-ack, unix ns).
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
		if !bytes.Contains(line, []byte(`"apply timings"`)) {
			continue
		}
		var l struct {
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
		if !ok {
			continue
		}
		ns := func(sec float64) int64 { return int64(sec * 1e9) }
		out["notification"] = append(out["notification"], l.CycleStart.UnixNano()-ack)
		out["reads"] = append(out["reads"], ns(l.Fetch))
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
		return nil, fmt.Errorf("%s: %d apply timings for %d measured publishes (a publish coalesced, or debug logging off)", path, n, len(acks))
	}
	return out, nil
}

// confdStyle is the confd-equivalent baseline: a raw go-zookeeper
// follower that watches the root, reads every item (several in flight on
// its one connection) and renders them into one file by rename, with no
// verification and no fsync.
type confdStyle struct {
	cl     *client
	cancel context.CancelFunc
	done   chan struct{}
}

func startConfdStyle(ctx context.Context, e *env, root, dest string, items, itemSize int) (*confdStyle, error) {
	cl, err := dial(ctx, e.followerDial(e.newCounts(), items, itemSize))
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &confdStyle{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for rctx.Err() == nil {
			data, _, ch, err := cl.conn.GetW(root)
			if err == nil {
				err = c.render(rctx, root, data, dest)
			}
			if err != nil {
				e.log.Warn("confd-style follower: retrying", "err", err)
				if work.Sleep(rctx, 100*time.Millisecond) != nil {
					return
				}
				continue
			}
			select {
			case <-ch:
			case <-rctx.Done():
			}
		}
	}()
	return c, nil
}

// render reads every item the manifest names and writes dest.
func (c *confdStyle) render(ctx context.Context, root string, data []byte, dest string) error {
	m, err := manifest.Decode(data)
	if err != nil {
		return err
	}
	names := m.Names()
	vals := make([][]byte, len(names))
	// One goroutine per item: go-zookeeper pipelines them on the
	// connection, as confd's backends issue their reads.
	if err := work.Parallel(ctx, len(names), len(names), func(_ context.Context, i int) error {
		b, _, err := c.cl.conn.Get(root + "/" + names[i])
		vals[i] = b
		return err
	}); err != nil {
		return err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "gen=%08d\n", m.Generation)
	for _, v := range vals {
		buf.Write(v)
	}
	tmp := dest + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

func (c *confdStyle) close() {
	c.cancel()
	c.cl.conn.Close()
	<-c.done
}

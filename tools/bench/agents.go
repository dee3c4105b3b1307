package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/tools/internal/confagentbin"
)

// AgentResult is the propagation to M confagent processes rendering a dir
// target (every file fsynced), in one run.
type AgentResult struct {
	Agents int `json:"agents"`
	// File is commit sent → the changed file, with the new content, is
	// visible under the target directory (seen with inotify, not polled).
	File Dist `json:"file_visible"`
	// Status is commit sent → the agent's status node reports the
	// generation.
	Status Dist `json:"status_reported"`
	// Publish is the publish call → commit acknowledged.
	Publish Dist `json:"publish"`
	// CPU is the agents' CPU milliseconds per publish (from /proc).
	CPU float64 `json:"agent_cpu_ms_per_publish"`
	// ServerRequests is what the server received from the agents per
	// publish per agent (packets_received less every tapped packet; the
	// agents' pings included).
	ServerRequests float64 `json:"server_requests_per_publish_per_agent"`
	// ReadKiB and WrittenKiB are what each agent passed to read and write
	// calls per publish (/proc/<pid>/io: files, state file and sockets),
	// to set against ChangedKiB, the size of the items that changed.
	ReadKiB    float64 `json:"read_kib_per_publish"`
	WrittenKiB float64 `json:"written_kib_per_publish"`
	ChangedKiB float64 `json:"changed_kib_per_publish"`
	// Writes is the number of write calls per publish per agent.
	Writes float64 `json:"write_calls_per_publish"`
}

// agentProc is one confagent process and the benchmark's view of it.
type agentProc struct {
	i      int
	id     string
	base   string
	dest   string
	cmd    *exec.Cmd
	exited chan struct{}
	logf   *os.File
	// log is the log file's name under base ("": confagent.log).
	log string
}

// buildConfAgent builds cmd/confagent into dir.
func buildConfAgent(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "confagent")
	if err := confagentbin.Build(ctx, bin); err != nil {
		return "", fmt.Errorf("%w (or pass --confagent-bin)", err)
	}
	return bin, nil
}

// agentSpec says how to run agents for one root.
type agentSpec struct {
	bin, root, meta string
	servers         []string
	sessionTimeout  time.Duration
	http            bool     // serve /status etc. on a loopback port, as by default
	env             []string // added to the environment
}

// startAgent starts confagent i rendering root into a dir target under base.
func startAgent(spec agentSpec, base string, i int) (*agentProc, error) {
	a := &agentProc{i: i, id: fmt.Sprintf("confbench-%d", i), base: filepath.Join(base, fmt.Sprintf("agent-%d", i))}
	a.dest = filepath.Join(a.base, "out", "d")
	// The target directory exists before the agent starts, so that its
	// first swap is seen.
	if err := os.MkdirAll(a.dest, 0o755); err != nil {
		return nil, err
	}
	listen := `""`
	if spec.http {
		// confagent refuses port 0: take a free port (a race with another
		// process taking it first only fails this run).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listen = l.Addr().String()
		l.Close()
	}
	cfg := agentYAML(spec.servers, spec.sessionTimeout, spec.root, spec.meta, a, listen, "level: warn", "")
	cfgPath := filepath.Join(a.base, "confagent.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if err := a.launch(spec.bin, cfgPath, spec.env); err != nil {
		return nil, err
	}
	return a, nil
}

// agentYAML is the configuration of agent a following root: state under
// a.base, HTTP on listen (`""`: none), the log settings logYAML (lines of
// the log block), a dir target at a.dest, then moreTargets (YAML list
// entries, indented as the first).
func agentYAML(servers []string, sessionTimeout time.Duration, root, meta string, a *agentProc, listen, logYAML, moreTargets string) string {
	return fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: %s
root: %s
meta: %s
state_dir: %s
agent_id: %s
http:
  listen: %s
log:
  %s
targets:
  - name: d
    type: dir
    dest: %s
%s`, strings.Join(servers, ", "), sessionTimeout, root, meta, filepath.Join(a.base, "state"), a.id, listen,
		strings.ReplaceAll(logYAML, "\n", "\n  "), a.dest, moreTargets)
}

// launch starts confagent with configuration cfgPath and env added to the
// environment, logging to a.logPath().
func (a *agentProc) launch(bin, cfgPath string, env []string) error {
	logf, err := os.Create(a.logPath())
	if err != nil {
		return err
	}
	a.logf = logf
	a.cmd = exec.Command(bin, "--config", cfgPath)
	a.cmd.Env = append(os.Environ(), env...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start confagent: %w", err)
	}
	a.exited = make(chan struct{})
	go func() {
		_ = a.cmd.Wait()
		close(a.exited)
	}()
	return nil
}

func (a *agentProc) pid() int { return a.cmd.Process.Pid }

// stop ends the agent with SIGTERM (SIGKILL after 10 s).
func (a *agentProc) stop() {
	stopProcess(a.cmd.Process, a.exited)
	a.logf.Close()
}

// stopProcess sends p SIGTERM and waits until exited is closed, killing p
// after 10 s.
func stopProcess(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// logPath is the agent's log file.
func (a *agentProc) logPath() string {
	if a.log == "" {
		return filepath.Join(a.base, "confagent.log")
	}
	return filepath.Join(a.base, a.log)
}

// logTail returns the end of the agent's log, for error messages.
func (a *agentProc) logTail() string {
	b, _ := os.ReadFile(a.logPath())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// fileWatch records, for each agent, when the target directory swaps in the
// generation being waited for: on every inotify event for "..data" it reads
// the first item the generation changed and checks its header.
type fileWatch struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

func watchFiles(dests []string, sched *schedule, rec *recorder) (*fileWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, d := range dests {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
		index[filepath.Clean(d)] = i
	}
	fw := &fileWatch{w: w, done: make(chan struct{})}
	go func() {
		defer close(fw.done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) != render.DataLink || !ev.Has(fsnotify.Create) {
					continue
				}
				dir := filepath.Dir(ev.Name)
				g := rec.want()
				if g == 0 {
					continue
				}
				// Through ..data: on the first render the top-level links
				// appear only after the swap.
				b, err := os.ReadFile(filepath.Join(dir, render.DataLink, sched.changedAt(g)[0]))
				if err == nil && genOf(b) == g {
					rec.reached(index[dir], g, time.Now().UnixNano())
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return fw, nil
}

func (fw *fileWatch) close() {
	fw.w.Close()
	<-fw.done
}

// statusWatch follows agents' status nodes (GetW, no polling) and records
// when each reports the generation being waited for.
type statusWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func watchStatus(ctx context.Context, conn *zk.Conn, paths []string, rec *recorder) *statusWatch {
	ctx, cancel := context.WithCancel(ctx)
	sw := &statusWatch{cancel: cancel}
	for i, p := range paths {
		sw.wg.Go(func() {
			for ctx.Err() == nil {
				data, _, ch, err := conn.GetW(p)
				if errors.Is(err, zk.ErrNoNode) {
					var ok bool
					ok, _, ch, err = conn.ExistsW(p)
					if err == nil && ok {
						continue
					}
				}
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				if data != nil {
					var st fleet.Status
					if json.Unmarshal(data, &st) == nil && st.Generation > 0 {
						rec.reached(i, st.Generation, time.Now().UnixNano())
					}
				}
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
		})
	}
	return sw
}

func (sw *statusWatch) close() {
	sw.cancel()
	sw.wg.Wait()
}

// checkDir verifies that a dir target holds exactly generation g.
func checkDir(dest string, sched *schedule, g int64) error {
	files, err := render.ReadCurrent(dest)
	if err != nil {
		return err
	}
	want := sched.set(g)
	if len(files) != len(want) {
		return fmt.Errorf("%s: %d files, want %d", dest, len(files), len(want))
	}
	for n, b := range want {
		if !bytes.Equal(files[n], b) {
			return fmt.Errorf("%s: %s differs from generation %d", dest, n, g)
		}
	}
	return nil
}

// agentFleet is M confagents following one target, with their watchers.
type agentFleet struct {
	procs  []*agentProc
	file   *recorder
	status *recorder
	fw     *fileWatch
	sw     *statusWatch
	obs    *client
}

// startAgents starts m agents on t's root and waits until every one has
// rendered t's current generation.
func (e *env) startAgents(ctx context.Context, bin, base string, t *target, m int, http bool) (*agentFleet, error) {
	af := &agentFleet{file: newRecorder(m), status: newRecorder(m)}
	spec := agentSpec{bin: bin, root: t.root, meta: e.meta, servers: e.srv.followers, sessionTimeout: e.cfg.SessionTimeout,
		http: http, env: e.cfg.ConfAgentEnv}
	var dests, paths []string
	for i := range m {
		a, err := startAgent(spec, base, i)
		if err != nil {
			af.close()
			return nil, err
		}
		af.procs = append(af.procs, a)
		dests = append(dests, a.dest)
		paths = append(paths, layout.New(t.root, e.meta).StatusNode(a.id))
	}
	// Agents render at start-up; wait through the status nodes, which say
	// which generation each applied.
	a := af.status.expect(t.gen)
	obs, err := dial(ctx, dialOptions{servers: e.srv.addrs, sessionTimeout: e.cfg.SessionTimeout, counts: e.newCounts(), log: e.quiet})
	if err != nil {
		af.close()
		return nil, err
	}
	af.obs = obs
	af.sw = watchStatus(ctx, obs.conn, paths, af.status)
	// An agent that exits (a configuration it refuses, say) ends the wait.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, p := range af.procs {
		go func() {
			select {
			case <-p.exited:
				cancel(fmt.Errorf("confagent %d exited", p.i))
			case <-wctx.Done():
			}
		}()
	}
	if err := af.status.wait(wctx, a, e.cfg.WaitTimeout); err != nil {
		if cause := context.Cause(wctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		err = fmt.Errorf("confagents did not apply generation %d: %w\nlog of agent 0:\n%s", t.gen, err, af.procs[0].logTail())
		af.close()
		return nil, err
	}
	if af.fw, err = watchFiles(dests, t.sched, af.file); err != nil {
		af.close()
		return nil, err
	}
	return af, nil
}

func (af *agentFleet) close() {
	if af.fw != nil {
		af.fw.close()
	}
	if af.sw != nil {
		af.sw.close()
	}
	if af.obs != nil {
		af.obs.conn.Close()
	}
	for _, p := range af.procs {
		p.stop()
	}
}

// io is the agents' I/O so far.
func (af *agentFleet) io() procIO {
	var sum procIO
	for _, p := range af.procs {
		if v, err := readProcIO(p.pid()); err == nil {
			sum.rchar += v.rchar
			sum.wchar += v.wchar
			sum.syscr += v.syscr
			sum.syscw += v.syscw
		}
	}
	return sum
}

func (af *agentFleet) cpu() time.Duration {
	var d time.Duration
	for _, p := range af.procs {
		if st, err := readProcStat(p.pid()); err == nil {
			d += st.cpu
		}
	}
	return d
}

// measureAgents measures propagation to m confagents on target t.
func (e *env) measureAgents(ctx context.Context, bin string, t *target, m int) (*AgentResult, error) {
	base, err := os.MkdirTemp("", "confbench-agents")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	af, err := e.startAgents(ctx, bin, base, t, m, false)
	if err != nil {
		return nil, err
	}
	defer af.close()
	var file, status, pub []int64
	// CPU, I/O and server packets are taken over the whole measured phase,
	// so that work an agent does after rendering (status node, drift
	// check) is counted too.
	var cpu0 time.Duration
	var io0 procIO
	var mntr0, tapped0 int64
	for r := range e.cfg.Warmup + e.cfg.Publishes {
		measured := r >= e.cfg.Warmup
		if r == e.cfg.Warmup {
			cpu0, io0, tapped0 = af.cpu(), af.io(), e.tapped()
			if e.mntrOK {
				mntr0, _ = e.srv.packets()
			}
		}
		g := t.gen + 1
		fa, sa := af.file.expect(g), af.status.expect(g)
		pt, err := t.publish(ctx, g)
		if err != nil {
			return nil, err
		}
		if err := af.file.wait(ctx, fa, e.cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("confagent files: %w\nlog of agent 0:\n%s", err, af.procs[0].logTail())
		}
		if err := af.status.wait(ctx, sa, e.cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("confagent status: %w", err)
		}
		if measured {
			for i := range m {
				file = append(file, fa.at[i]-pt.sent)
				status = append(status, sa.at[i]-pt.sent)
			}
			pub = append(pub, pt.acked-pt.call)
		}
		// Each publish finds the agents idle (Config.AgentGap).
		if err := work.Sleep(ctx, e.cfg.AgentGap); err != nil {
			return nil, err
		}
	}
	cpu := af.cpu() - cpu0
	io := af.io().sub(io0)
	var serverPkts int64
	if e.mntrOK {
		if p, err := e.srv.packets(); err == nil {
			serverPkts = (p - mntr0) - (e.tapped() - tapped0)
		}
	}
	for _, p := range af.procs {
		if err := checkDir(p.dest, t.sched, t.gen); err != nil {
			return nil, err
		}
	}
	n := float64(e.cfg.Publishes)
	per := n * float64(m)
	return &AgentResult{
		Agents: m, File: summarize(file), Status: summarize(status), Publish: summarize(pub),
		CPU:            ms(int64(cpu)) / n,
		ServerRequests: float64(serverPkts) / per,
		ReadKiB:        float64(io.rchar) / 1024 / per,
		WrittenKiB:     float64(io.wchar) / 1024 / per,
		ChangedKiB:     float64(t.sched.changed*t.sched.size) / 1024,
		Writes:         float64(io.syscw) / per,
	}, nil
}

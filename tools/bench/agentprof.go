package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/zkclient"
)

// profileAgent runs confagent's daemon (package agent, the same code as
// cmd/confagent) in this process on a dir target, publishes to it while a
// CPU profile runs, and returns its propagation to disk. The profiles go
// to <ProfileDir>/<name>.*.pprof.
func (e *env) profileAgent(ctx context.Context, name string, sched *schedule) (*AgentResult, error) {
	t, err := e.newTarget(ctx, name, sched)
	if err != nil {
		return nil, err
	}
	defer t.close()
	base, err := os.MkdirTemp("", "confbench-inproc")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	dest := filepath.Join(base, "out", "d")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	rec := newRecorder(1)
	fw, err := watchFiles([]string{dest}, sched, rec)
	if err != nil {
		return nil, err
	}
	defer fw.close()
	d, err := agent.NewDaemon(ctx, agent.Options{
		Root: t.root, Meta: e.meta, AgentID: "confbench-inproc", StateDir: filepath.Join(base, "state"),
		ZK:     zkclient.Config{Servers: e.srv.addrs, SessionTimeout: e.cfg.SessionTimeout, Logger: e.quiet},
		Logger: e.quiet,
		Targets: []agent.TargetSpec{{Name: "d", Kind: agent.KindDir, Dest: dest, Mode: 0o640,
			UID: -1, GID: -1, Timeout: 30 * time.Second}},
	})
	if err != nil {
		return nil, err
	}
	a := rec.expect(t.gen)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
		d.Close()
	}()
	if err := rec.wait(ctx, a, e.cfg.WaitTimeout); err != nil {
		return nil, fmt.Errorf("in-process agent: %w", err)
	}
	stop, err := e.startProfile(name)
	if err != nil {
		return nil, err
	}
	defer stop()
	cpu0 := selfCPU()
	var file, pub []int64
	for r := range e.cfg.Warmup + e.cfg.Publishes {
		g := t.gen + 1
		a := rec.expect(g)
		pt, err := t.publish(ctx, g)
		if err != nil {
			return nil, err
		}
		if err := rec.wait(ctx, a, e.cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("in-process agent: %w", err)
		}
		if r >= e.cfg.Warmup {
			file = append(file, a.at[0]-pt.sent)
			pub = append(pub, pt.acked-pt.call)
		}
		if err := work.Sleep(ctx, e.cfg.AgentGap); err != nil {
			return nil, err
		}
	}
	cpu := selfCPU() - cpu0
	stop()
	if err := checkDir(dest, sched, t.gen); err != nil {
		return nil, err
	}
	n := e.cfg.Warmup + e.cfg.Publishes
	return &AgentResult{Agents: 1, File: summarize(file), Publish: summarize(pub),
		CPU: ms(int64(cpu)) / float64(n)}, nil
}

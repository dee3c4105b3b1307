package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/zkconf/zkconf/internal/work"
)

// Footprint is one confagent's resource use while it holds (and renders,
// as a dir target) Items × ItemSize bytes.
type Footprint struct {
	Items    int `json:"items"`
	ItemSize int `json:"item_size"`
	// IdleSeconds and LoadSeconds are the lengths of the two phases;
	// Publishes the number of publishes (one per second, Changed items
	// each) of the loaded phase.
	IdleSeconds float64 `json:"idle_seconds"`
	LoadSeconds float64 `json:"load_seconds"`
	Publishes   int     `json:"publishes"`
	// IdleCPU and LoadCPU are percentages of one core.
	IdleCPU float64 `json:"idle_cpu_percent"`
	LoadCPU float64 `json:"load_cpu_percent"`
	// RSS in MiB: at the end of the idle phase, the most seen while
	// loaded, the peak since start (VmHWM), and the anonymous and
	// file-backed parts at the end.
	IdleRSS float64 `json:"idle_rss_mib"`
	LoadRSS float64 `json:"load_rss_max_mib"`
	PeakRSS float64 `json:"peak_rss_mib"`
	AnonRSS float64 `json:"anon_rss_mib"`
	FileRSS float64 `json:"file_rss_mib"`
	// I/O calls while idle (a ping every few seconds is all there should
	// be: no polling), and bytes read and written per publish while
	// loaded, against the size of the items that changed (/proc/<pid>/io).
	IdleReads      int64   `json:"idle_read_calls"`
	IdleWrites     int64   `json:"idle_write_calls"`
	LoadReadKiB    float64 `json:"load_read_kib_per_publish"`
	LoadWrittenKiB float64 `json:"load_written_kib_per_publish"`
	LoadWrites     float64 `json:"load_write_calls_per_publish"`
	ChangedKiB     float64 `json:"changed_kib_per_publish"`
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// measureFootprint runs one confagent (HTTP endpoint on, as by default)
// holding the footprint set: idle, then one publish per second.
func (e *env) measureFootprint(ctx context.Context, bin string) (*Footprint, error) {
	c := e.cfg
	sched := newSchedule("footprint", c.FootprintItems, c.FootprintItemSize, c.Changed)
	t, err := e.newTarget(ctx, "footprint", sched)
	if err != nil {
		return nil, err
	}
	defer t.close()
	base, err := os.MkdirTemp("", "confbench-footprint")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	af, err := e.startAgents(ctx, bin, base, t, 1, true)
	if err != nil {
		return nil, err
	}
	defer af.close()
	pid := af.procs[0].pid()

	// Let start-up settle (first render, state file, GC) before measuring.
	settle := 5 * time.Second
	if c.Quick {
		settle = 300 * time.Millisecond
	}
	if err := work.Sleep(ctx, settle); err != nil {
		return nil, err
	}
	f := &Footprint{Items: c.FootprintItems, ItemSize: c.FootprintItemSize}
	e.log.Info("footprint: idle", "seconds", c.FootprintIdle.Seconds())
	s0, err := readProcStat(pid)
	if err != nil {
		return nil, err
	}
	io0, err := readProcIO(pid)
	if err != nil {
		return nil, err
	}
	w0 := time.Now()
	if err := work.Sleep(ctx, c.FootprintIdle); err != nil {
		return nil, err
	}
	s1, err := readProcStat(pid)
	if err != nil {
		return nil, err
	}
	w1 := time.Now()
	m1, err := readMemStatus(pid)
	if err != nil {
		return nil, err
	}
	io1, err := readProcIO(pid)
	if err != nil {
		return nil, err
	}
	f.IdleReads, f.IdleWrites = io1.syscr-io0.syscr, io1.syscw-io0.syscw
	f.IdleSeconds = w1.Sub(w0).Seconds()
	f.IdleCPU = 100 * (s1.cpu - s0.cpu).Seconds() / f.IdleSeconds
	f.IdleRSS = mib(m1.RSS)

	n := max(1, int(c.FootprintLoad/time.Second))
	e.log.Info("footprint: one publish per second", "publishes", n)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last *arrivals
	maxRSS := m1.RSS
	for i := range n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g := t.gen + 1
		if i == n-1 {
			// Expect the last generation before publishing it: arrivals
			// recorded before expect are not kept.
			last = af.status.expect(g)
		}
		if _, err := t.publish(ctx, g); err != nil {
			return nil, err
		}
		if m, err := readMemStatus(pid); err == nil {
			maxRSS = max(maxRSS, m.RSS)
		}
	}
	if err := af.status.wait(ctx, last, c.WaitTimeout); err != nil {
		return nil, fmt.Errorf("footprint agent: %w\n%s", err, af.procs[0].logTail())
	}
	// Let the last publish's after-work (drift check, state file) finish.
	if err := work.Sleep(ctx, e.cfg.AgentGap); err != nil {
		return nil, err
	}
	s2, err := readProcStat(pid)
	if err != nil {
		return nil, err
	}
	w2 := time.Now()
	m2, err := readMemStatus(pid)
	if err != nil {
		return nil, err
	}
	io2, err := readProcIO(pid)
	if err != nil {
		return nil, err
	}
	d := io2.sub(io1)
	f.LoadReadKiB = float64(d.rchar) / 1024 / float64(n)
	f.LoadWrittenKiB = float64(d.wchar) / 1024 / float64(n)
	f.LoadWrites = float64(d.syscw) / float64(n)
	f.ChangedKiB = float64(sched.changed*sched.size) / 1024
	f.Publishes = n
	f.LoadSeconds = w2.Sub(w1).Seconds()
	f.LoadCPU = 100 * (s2.cpu - s1.cpu).Seconds() / f.LoadSeconds
	f.LoadRSS = mib(max(maxRSS, m2.RSS))
	f.PeakRSS = mib(m2.HWM)
	f.AnonRSS, f.FileRSS = mib(m2.RSSAnon), mib(m2.RSSFile)
	if err := checkDir(af.procs[0].dest, sched, t.gen); err != nil {
		return nil, err
	}
	return f, nil
}

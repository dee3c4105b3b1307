package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// The processes of the latency benchmark besides confagent and confpush:
// the raw go-zookeeper programs of tools/cmd/zkraw (the confd-style
// follower) and tools/cmd/zkfloor (the floor of a publish), and perf.

// confdProc is the confd-style follower's process (zkraw follow).
type confdProc struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	logf    *os.File
}

// startConfdStyle starts `zkraw follow` on root, writing dest and, unless
// tmplOut is empty, the template tmpl into tmplOut; it logs under base.
func startConfdStyle(bin string, servers []string, root, dest, tmpl, tmplOut, base string) (*confdProc, error) {
	c := &confdProc{logPath: filepath.Join(base, "confd-style.log"), exited: make(chan struct{})}
	logf, err := os.Create(c.logPath)
	if err != nil {
		return nil, err
	}
	c.logf = logf
	args := []string{"follow", "--zk", strings.Join(servers, ","), "--root", root, "--out", dest}
	if tmplOut != "" {
		args = append(args, "--template", tmpl, "--template-out", tmplOut)
	}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start zkraw follow: %w", err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *confdProc) pid() int { return c.cmd.Process.Pid }

// stop ends the follower with SIGTERM (SIGKILL after 10 s).
func (c *confdProc) stop() {
	stopProcess(c.cmd.Process, c.exited)
	c.logf.Close()
}

func (c *confdProc) logTail() string {
	b, _ := os.ReadFile(c.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// floor is the raw floor of `confpush publish` for one set: a root of its
// own, written by zkfloor processes with the operations of the
// set's commit: the root's data (a manifest's size), the changed items
// (as many as fit a Multi), a Check of each one's departing content's
// blob, and a history entry.
type floor struct {
	root, blobs, history string
	rootBytes, itemBytes int
	items, checks        []string
	n                    int
}

// newFloor creates the floor's root for target t: items of t's size,
// their blobs, the history parent.
func (e *env) newFloor(conn *zk.Conn, t *target, base string) (*floor, error) {
	data, _, err := conn.Get(t.root)
	if err != nil {
		return nil, err
	}
	per := t.sched.size + 256 // an item's SetData and its blob's Check
	k := max(1, min(t.sched.changed, (publish.DefaultMultiBudget-2*len(data))/per))
	sched := newSchedule(filepath.Base(base)+"-floor", k, t.sched.size, k)
	r, err := e.newRawRoot(conn, filepath.Base(base)+"-floor", sched, true)
	if err != nil {
		return nil, err
	}
	f := &floor{root: r.path, blobs: r.blobs, history: r.history, rootBytes: len(data), itemBytes: t.sched.size}
	gen1 := sched.set(1)
	for _, n := range sched.names {
		f.items = append(f.items, r.path+"/"+n)
		f.checks = append(f.checks, r.blobs+"/"+manifest.Hash(gen1[n]))
	}
	return f, nil
}

// floorTimings are what zkfloor prints: nanoseconds of its three server
// writes.
type floorTimings struct {
	Session int64 `json:"session_ns"`
	Multi   int64 `json:"multi_ns"`
	Close   int64 `json:"close_ns"`
}

// run runs one zkfloor and returns how long the process took and its
// own timings.
func (f *floor) run(ctx context.Context, bin string, servers []string) (int64, floorTimings, error) {
	f.n++
	var ft floorTimings
	cmd := exec.CommandContext(ctx, bin, "--zk", strings.Join(servers, ","), "--root", f.root,
		"--items", strings.Join(f.items, ","), "--checks", strings.Join(f.checks, ","),
		"--create", fmt.Sprintf("%s/g-%019d", f.history, f.n),
		"--root-bytes", strconv.Itoa(f.rootBytes), "--item-bytes", strconv.Itoa(f.itemBytes))
	var out bytes.Buffer
	cmd.Stdout = &out
	_, took, err := timedRun(cmd)
	if err != nil {
		return 0, ft, err
	}
	if err := json.Unmarshal(out.Bytes(), &ft); err != nil {
		return 0, ft, fmt.Errorf("zkfloor's timings %q: %w", out.Bytes(), err)
	}
	return took, ft, nil
}

// taskCPU is the CPU time of every live thread of pid, from
// /proc/<pid>/task/*/schedstat (nanoseconds on a CPU; /proc/<pid>/stat
// counts in 10 ms ticks, too coarse for a follower that spends a
// millisecond per publish), or /proc/<pid>/stat when schedstat is not
// there. 0 when the process is gone.
func taskCPU(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err == nil {
		var sum time.Duration
		ok := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread exited meanwhile
			}
			f := strings.Fields(string(b))
			if err != nil || len(f) == 0 {
				ok = false
				break
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				ok = false
				break
			}
			sum += time.Duration(ns)
		}
		if ok {
			return sum
		}
	}
	st, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return st.cpu
}

// perfRecord is a `perf record` of one process.
type perfRecord struct {
	cmd  *exec.Cmd
	data string
	out  bytes.Buffer
	done bool
}

// startPerf samples pid's stacks (user and kernel) at 999 Hz into data.
func startPerf(pid int, data string) (*perfRecord, error) {
	p := &perfRecord{data: data}
	p.cmd = exec.Command("perf", "record", "-F", "999", "-g", "-p", strconv.Itoa(pid), "-o", data)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record (is perf installed?): %w", err)
	}
	return p, nil
}

// stop ends the recording (SIGINT: perf writes its file and exits).
func (p *perfRecord) stop() {
	if p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
}

// report stops the recording and writes, to dir (beside the perf.data
// file), name.children.txt (the
// functions by the share of samples under them) and name.self.txt (by
// the samples in them); it returns their names, and the agent's CPU by
// phase (perfPhases) with the number of samples.
func (p *perfRecord) report(dir, name string) ([]string, map[string]float64, int, error) {
	p.stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, 0, err
	}
	var files []string
	for _, r := range []struct {
		suffix string
		args   []string
	}{
		{"children", []string{"--children", "--percent-limit", "1.5"}},
		{"self", []string{"--no-children", "--percent-limit", "0.4"}},
	} {
		args := append([]string{"report", "-i", p.data, "--stdio", "--sort", "sym", "-g", "none"}, r.args...)
		out, err := exec.Command("perf", args...).Output()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("perf report: %w\n%s", err, p.out.Bytes())
		}
		f := name + "." + r.suffix + ".txt"
		if err := os.WriteFile(filepath.Join(dir, f), out, 0o644); err != nil {
			return nil, nil, 0, err
		}
		files = append(files, f)
	}
	script := exec.Command("perf", "script", "-i", p.data)
	out, err := script.StdoutPipe()
	if err != nil {
		return nil, nil, 0, err
	}
	if err := script.Start(); err != nil {
		return nil, nil, 0, fmt.Errorf("perf script: %w", err)
	}
	phases, n, perr := perfPhases(out)
	if err := script.Wait(); err != nil || perr != nil {
		return nil, nil, 0, fmt.Errorf("perf script: %w", errors.Join(err, perr))
	}
	return files, phases, n, nil
}

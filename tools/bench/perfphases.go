package bench

import (
	"bufio"
	"io"
	"strings"
)

// The agent's CPU by phase, from `perf script` output: each sample is
// put in the phase of the first frame, from the leaf, that belongs to
// zkconf or go-zookeeper (the standard library and the runtime called on
// their behalf count for their caller), the garbage collector's work
// wherever it runs, and the runtime's own (scheduler, timers, network
// poller) apart. Package and receiver names decide, not function names,
// so that a redesign inside a package keeps its phase.

// Phases of the agent's CPU, in report order.
const (
	cpuGC       = "GC"
	cpuPersist  = "persist (state file)"
	cpuTemplate = "template execution"
	cpuRender   = "stage and swap (render, agent's targets)"
	cpuReads    = "reads (cache: fetch, verify, decode)"
	cpuZK       = "ZooKeeper client"
	cpuAgent    = "agent (status node, metrics, loop)"
	cpuConfig   = "other zkconf"
	cpuRuntime  = "runtime (scheduler, poller, timers)"
	cpuOther    = "other"
)

// CPUPhases lists the phases in report order.
var CPUPhases = []string{cpuGC, cpuPersist, cpuTemplate, cpuRender, cpuReads, cpuZK, cpuAgent, cpuConfig, cpuRuntime, cpuOther}

// gcFrames are the runtime functions doing the collector's work: a
// sample with one of them anywhere on its stack is GC.
var gcFrames = []string{
	"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge",
	"runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination", "runtime.sweepone",
	"runtime.(*mheap).reclaim", "runtime.markrootSpans", "runtime.gcDrain",
}

// phaseOf classifies one frame's symbol: "" when it decides nothing (the
// standard library, the runtime, the kernel).
func phaseOf(sym string) string {
	const zkconf = "github.com/zkconf/zkconf/"
	switch {
	case strings.Contains(sym, "github.com/go-zookeeper/zk."):
		return cpuZK
	case !strings.Contains(sym, zkconf):
		return ""
	}
	s := sym[strings.Index(sym, zkconf)+len(zkconf):]
	switch {
	case strings.HasPrefix(s, "internal/durable."):
		// Shared by the state file and the renderer: its caller decides
		// (the renderer's file writes and fsyncs were counted as persist).
		return ""
	case strings.HasPrefix(s, "cache.(*stateStore)"), strings.HasPrefix(s, "cache.writeState"),
		strings.HasPrefix(s, "cache.encodeRecordBody"), strings.HasPrefix(s, "cache.encodePointer"),
		strings.HasPrefix(s, "cache.trailer"), strings.HasPrefix(s, "cache.writeAll"), strings.HasPrefix(s, "cache.createFile"),
		strings.HasPrefix(s, "cache.datasyncClose"):
		return cpuPersist
	case strings.HasPrefix(s, "internal/template."):
		return cpuTemplate
	case strings.HasPrefix(s, "internal/render."), strings.HasPrefix(s, "agent.(*Renderer)"), strings.HasPrefix(s, "agent.(*target)"):
		return cpuRender
	case strings.HasPrefix(s, "cache."), strings.HasPrefix(s, "manifest."):
		return cpuReads
	case strings.HasPrefix(s, "zkclient."):
		return cpuZK
	case strings.HasPrefix(s, "agent."):
		return cpuAgent
	}
	return cpuConfig
}

// perfPhases reads `perf script` output (a header line per sample, then
// one line per frame, leaf first: address, symbol, (object); a blank line
// between samples) and returns each phase's share of the samples (0–1)
// and the number of samples.
func perfPhases(r io.Reader) (map[string]float64, int, error) {
	counts := map[string]int{}
	total := 0
	var frames []string
	flush := func() {
		if len(frames) == 0 {
			return
		}
		total++
		counts[classify(frames)]++
		frames = frames[:0]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inSample := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			inSample = false
		case line[0] != ' ' && line[0] != '\t':
			flush()
			inSample = true
		case inSample:
			// "\t    55d5c8 runtime.mallocgc+0x1a (/path/confagent)"
			f := strings.Fields(line)
			if len(f) >= 2 {
				frames = append(frames, f[1])
			} else {
				frames = append(frames, "[unknown]")
			}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	out := map[string]float64{}
	for p, n := range counts {
		out[p] = float64(n) / float64(max(total, 1))
	}
	return out, total, nil
}

// classify gives one sample's phase from its frames, leaf first.
func classify(frames []string) string {
	for _, f := range frames {
		for _, g := range gcFrames {
			if strings.HasPrefix(f, g) {
				return cpuGC
			}
		}
	}
	for _, f := range frames {
		if p := phaseOf(f); p != "" {
			return p
		}
	}
	for _, f := range frames {
		if strings.HasPrefix(f, "runtime.") {
			return cpuRuntime
		}
	}
	return cpuOther
}

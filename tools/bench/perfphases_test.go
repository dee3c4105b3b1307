package bench

import (
	"math"
	"strings"
	"testing"
)

// TestPerfPhases classifies hand-written `perf script` samples: the first
// zkconf or go-zookeeper frame from the leaf decides (a write syscall
// under the state file is persist, a sha256 under the cache's fetch is a
// read), the collector's work anywhere on the stack is GC, the runtime's
// own work and a stack with nothing known are apart.
func TestPerfPhases(t *testing.T) {
	const bin = " (/tmp/confagent)\n"
	sample := func(frames ...string) string {
		var b strings.Builder
		b.WriteString("confagent 1234 [001] 100.000001:    1001001 cpu-clock:ppp: \n")
		for i, f := range frames {
			b.WriteString("\t    " + strings.Repeat("a", i+1) + " " + f + bin)
		}
		return b.String() + "\n"
	}
	in := sample("ext4_fsync_file+0x1", "syscall.Syscall+0x2", "os.(*File).Sync+0x3",
		"github.com/zkconf/zkconf/internal/durable.SyncClose+0x4", "github.com/zkconf/zkconf/cache.(*stateStore).writeDurable+0x5") +
		sample("crypto/sha256.block+0x1", "github.com/zkconf/zkconf/cache.(*Cache).fetch+0x2", "runtime.goexit+0x3") +
		sample("runtime.scanobject+0x1", "runtime.gcDrain+0x2", "runtime.gcBgMarkWorker+0x3") +
		sample("runtime.memmove+0x1", "runtime.mallocgc+0x2", "runtime.gcAssistAlloc+0x3", "github.com/zkconf/zkconf/internal/template.(*Template).Execute+0x4") +
		sample("text/template.(*state).walk+0x1", "github.com/zkconf/zkconf/internal/template.(*Template).Execute+0x2") +
		sample("unix.Renameat+0x1", "github.com/zkconf/zkconf/internal/render.(*DirWriter).swap+0x2") +
		sample("net.(*conn).Read+0x1", "github.com/go-zookeeper/zk.(*Conn).recvLoop+0x2") +
		sample("runtime.findRunnable+0x1", "runtime.schedule+0x2") +
		sample("[unknown]") +
		sample("github.com/zkconf/zkconf/agent.(*statusNode).write+0x1") +
		// internal/durable is the renderer's too: its caller decides.
		sample("ext4_fsync_file+0x1", "github.com/zkconf/zkconf/internal/durable.WriteTempIn+0x2",
			"github.com/zkconf/zkconf/internal/render.stage+0x3")
	got, n, err := perfPhases(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if n != 11 {
		t.Fatalf("%d samples, want 11", n)
	}
	want := map[string]float64{cpuPersist: 1.0 / 11, cpuReads: 1.0 / 11, cpuGC: 2.0 / 11, cpuTemplate: 1.0 / 11, cpuRender: 2.0 / 11, cpuZK: 1.0 / 11, cpuRuntime: 1.0 / 11, cpuOther: 1.0 / 11, cpuAgent: 1.0 / 11}
	for p, w := range want {
		if math.Abs(got[p]-w) > 1e-9 {
			t.Errorf("%s: %.2f, want %.2f (all: %v)", p, got[p], w, got)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected phase %q", p)
		}
	}
}

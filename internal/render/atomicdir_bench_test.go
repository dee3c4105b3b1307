package render

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
)

// BenchmarkDirWriteAllChanged measures a dir target's stage and swap when
// every file of the set changed (issue 27's 20/20 and 100/100 sets, 1 KiB
// files): a new generation directory, one new inode and one fsync per
// file, then the swap. cpu-ns/op is the process's CPU (wall time is
// meaningless on a shared machine; the fsyncs' waits show in ns/op).
func BenchmarkDirWriteAllChanged(b *testing.B) {
	for _, n := range []int{20, 100} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			w := NewDirWriter(b.TempDir())
			sets := [2]map[string][]byte{{}, {}}
			for g := range sets {
				for i := range n {
					sets[g][fmt.Sprintf("item-%03d.conf", i)] = bytes.Repeat([]byte{byte(g + 1)}, 1024)
				}
			}
			if _, err := w.Write(sets[1], DefaultFileOptions()); err != nil {
				b.Fatal(err)
			}
			cpu0 := benchCPU()
			i := 0
			for b.Loop() {
				if _, err := w.Write(sets[i%2], DefaultFileOptions()); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(benchCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func benchCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

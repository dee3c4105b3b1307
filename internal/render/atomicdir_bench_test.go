package render

import (
	"bytes"
	"fmt"
	"maps"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDirWriteAllChanged measures a dir target's stage and swap when
// every file of the set changed (issue 27's 20/20 and 100/100 sets, 1 KiB
// files): a new generation directory, one new inode and one fsync per
// file, then the swap. cpu-ns/op is the process's CPU (wall time is
// meaningless on a shared machine; the fsyncs' waits show in ns/op).
// With pool=on, Refill runs after each write, outside the timer and the
// CPU counted (it is off the agent's path to readers): its CPU is
// refill-cpu-ns/op.
func BenchmarkDirWriteAllChanged(b *testing.B) {
	for _, n := range []int{20, 100} {
		for _, pool := range []bool{false, true} {
			b.Run(fmt.Sprintf("files=%d/pool=%v", n, pool), func(b *testing.B) {
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
				var refill int64
				fill := func() {
					if !pool {
						return
					}
					b.StopTimer()
					c := benchCPU()
					if err := w.Refill(); err != nil {
						b.Fatal(err)
					}
					refill += benchCPU() - c
					b.StartTimer()
				}
				fill()
				cpu0 := benchCPU()
				i := 0
				for b.Loop() {
					if _, err := w.Write(sets[i%2], DefaultFileOptions()); err != nil {
						b.Fatal(err)
					}
					fill()
					i++
				}
				b.ReportMetric(float64(benchCPU()-cpu0-refill)/float64(b.N), "cpu-ns/op")
				if pool {
					b.ReportMetric(float64(refill)/float64(b.N), "refill-cpu-ns/op")
				}
			})
		}
	}
}

func benchCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkDirPublishOneChanged is one apply of a dir target as the agent
// runs it for issue 27's 20/1 set (20 files of 1 KiB, one changed per
// publish): StageIfChanged, Commit, the Sweep that follows every apply
// (with a grace period that has passed by then, so each apply removes the
// generation the one before retired), with pool=true the Refill after it,
// and the post-apply MatchesCurrent. Run it under strace -c -f to count
// the system calls of one publish.
func BenchmarkDirPublishOneChanged(b *testing.B) {
	for _, pool := range []bool{false, true} {
		b.Run(fmt.Sprintf("pool=%v", pool), func(b *testing.B) {
			w := NewDirWriter(b.TempDir())
			w.SetGrace(time.Nanosecond)
			w.SetOwnerSweeps(true)
			opts := DefaultFileOptions()
			files := oneKiBSet()
			publishOneChanged(b, w, files, opts, 1, pool)
			loopOneChanged(b, w, files, opts, pool)
		})
	}
}

// BenchmarkDirApplyAllChanged is one apply of a dir target as the agent
// runs it when every file changed (issue 27's 20/20), split where the
// agent's path to readers ends: StageIfChanged and Commit (the swap) are
// timed and their CPU is cpu-ns/op; the Sweep and the Refill that follow
// every apply (off that path) are not timed, their CPU is
// after-cpu-ns/op. With pool=false there is no Refill: every file is
// created on the path, as before the pool.
func BenchmarkDirApplyAllChanged(b *testing.B) {
	for _, n := range []int{20, 100} {
		for _, pool := range []bool{false, true} {
			b.Run(fmt.Sprintf("files=%d/pool=%v", n, pool), func(b *testing.B) {
				w := NewDirWriter(b.TempDir())
				w.SetGrace(time.Nanosecond)
				w.SetOwnerSweeps(true)
				opts := DefaultFileOptions()
				sets := [2]map[string][]byte{{}, {}}
				for g := range sets {
					for i := range n {
						sets[g][fmt.Sprintf("item-%03d.conf", i)] = bytes.Repeat([]byte{byte(g + 1)}, 1024)
					}
				}
				var after int64
				afterApply := func() {
					b.StopTimer()
					c := benchCPU()
					if _, err := w.Sweep(); err != nil {
						b.Fatal(err)
					}
					if pool {
						if err := w.Refill(); err != nil {
							b.Fatal(err)
						}
					}
					after += benchCPU() - c
					b.StartTimer()
				}
				apply := func(files map[string][]byte) {
					sd, err := w.StageIfChanged(files, opts)
					if err != nil || sd == nil {
						b.Fatal(err, sd)
					}
					if _, err := sd.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				apply(sets[1])
				afterApply()
				after = 0
				cpu0 := benchCPU()
				i := 0
				for b.Loop() {
					apply(sets[i%2])
					afterApply()
					i++
				}
				b.ReportMetric(float64(benchCPU()-cpu0-after)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(after)/float64(b.N), "after-cpu-ns/op")
			})
		}
	}
}

// BenchmarkDirPublishOneChangedWatched is BenchmarkDirPublishOneChanged
// for a DirWriter whose links its owner watches (SetLinksWatched, as the
// agent's drift watcher does): the writes then read no top-level link
// that a check found ours before. The owner's Matches after the first
// write records them.
func BenchmarkDirPublishOneChangedWatched(b *testing.B) {
	w := NewDirWriter(b.TempDir())
	w.SetGrace(time.Nanosecond)
	w.SetOwnerSweeps(true)
	w.SetLinksWatched(true)
	opts := DefaultFileOptions()
	files := oneKiBSet()
	if _, err := w.Write(files, opts); err != nil {
		b.Fatal(err)
	}
	if ok, err := w.Matches(files, opts); err != nil || !ok {
		b.Fatal(ok, err)
	}
	reads := w.linkReads
	loopOneChanged(b, w, files, opts, false)
	if n := w.linkReads - reads; n != 0 {
		b.Fatalf("%d links read after the first Matches, want 0", n)
	}
}

// publishOneChanged is one 20/1 apply as the agent runs it: files with
// item-007.conf changed (its content alternating with i), staged and
// committed, the Sweep after it, the Refill when pool, then the
// post-apply MatchesCurrent.
func publishOneChanged(b *testing.B, w *DirWriter, files map[string][]byte, opts FileOptions, i int, pool bool) {
	b.Helper()
	next := maps.Clone(files)
	next["item-007.conf"] = bytes.Repeat([]byte{byte('b' + i%2)}, 1024)
	sd, err := w.StageIfChanged(next, opts)
	if err != nil || sd == nil {
		b.Fatal(err, sd)
	}
	if _, err := sd.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Sweep(); err != nil {
		b.Fatal(err)
	}
	if pool {
		if err := w.Refill(); err != nil {
			b.Fatal(err)
		}
	}
	if ok, err := w.MatchesCurrent(next, opts); err != nil || !ok {
		b.Fatal(ok, err)
	}
}

// oneKiBSet is issue 27's 20-item set: 20 files of 1 KiB.
func oneKiBSet() map[string][]byte {
	files := map[string][]byte{}
	for i := range 20 {
		files[fmt.Sprintf("item-%03d.conf", i)] = bytes.Repeat([]byte{'a'}, 1024)
	}
	return files
}

// loopOneChanged runs publishOneChanged as b's loop and reports its CPU
// per apply (cpu-ns/op).
func loopOneChanged(b *testing.B, w *DirWriter, files map[string][]byte, opts FileOptions, pool bool) {
	cpu0 := benchCPU()
	i := 0
	for b.Loop() {
		publishOneChanged(b, w, files, opts, i, pool)
		i++
	}
	b.ReportMetric(float64(benchCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

package cache

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
)

// BenchmarkFollowCycle measures the CPU a cache spends on one publish
// outside ZooKeeper's client (decode the root, reuse the held items,
// verify the changed one, build the snapshot), for many caches in one
// process as in confbench's fleet, so that each cycle finds its cache's
// memory cold: 20 items of 1 KiB, one changed per publish.
func BenchmarkFollowCycle(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("caches=%d", n), func(b *testing.B) { benchFollowCycle(b, n) })
	}
}

func benchFollowCycle(b *testing.B, n int) {
	const items = 20
	type follower struct {
		held  *Snapshot
		roots [2][]byte // the two generations' root data, alternately
		item  [2][]byte // the changed item's content in each
	}
	fs := make([]*follower, n)
	for i := range fs {
		contents := map[string][]byte{}
		for j := range items {
			contents[fmt.Sprintf("item-%02d.conf", j)] = bytes.Repeat([]byte{byte(i + j)}, 1024)
		}
		f := &follower{}
		inc := manifest.NewIncarnation()
		for g := range 2 {
			contents["item-00.conf"] = bytes.Repeat([]byte{byte(i + g + 100)}, 1024)
			f.item[g] = contents["item-00.conf"]
			m := &manifest.Manifest{Format: 1, Generation: int64(g + 1), PublishID: fmt.Sprintf("%032x", i*2+g), PublishedAt: time.Now(),
				Publisher: "deploy@build-host-01", Mode: manifest.ModeMulti, Incarnation: inc, Items: map[string]manifest.Item{}}
			for name, b := range contents {
				m.Items[name] = manifest.ItemOf(b)
			}
			f.roots[g] = m.Encode()
			if g == 0 {
				held := map[string][]byte{}
				for name, b := range contents {
					held[name] = b
				}
				f.held = newSnapshot(m, 1, held, false)
			}
		}
		fs[i] = f
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		f := fs[i%n]
		g := (i / n % 2) ^ 1
		i++
		m, rnames, metas, err := manifest.DecodeOwnedSorted(bytes.Clone(f.roots[g])) // the client's fresh copy, as readRoot decodes it
		if err != nil {
			b.Fatal(err)
		}
		items, todo := reuseHeld(rnames, metas, f.held)
		left := f.held.nextLeft(m.Incarnation)
		for _, j := range todo {
			data := bytes.Clone(f.item[g]) // the client's fresh copy
			if !items[j].meta.Matches(data) {
				b.Fatal("mismatch")
			}
			items[j].data = data
		}
		s := &Snapshot{m: m, zxid: int64(g + 1), names: rnames, items: items, left: left}
		f.held = s
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's CPU time in nanoseconds (wall time is
// meaningless on a shared machine).
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package cache

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
)

// BenchmarkFetchMany measures the reads of a publish that changed every
// item (issue 27's 20/20 and 100/100 sets, 1 KiB items) against a real
// server: fetchMany's workers, results and verification ("cache"), beside
// the confd-style follower's reads (tools/cmd/zkraw: one goroutine per
// Get, a WaitGroup, no verification: "raw") on the same connection, so
// that what fetchMany adds to the round trip shows as cpu-ns/op (wall
// time is meaningless on a shared machine).
func BenchmarkFetchMany(b *testing.B) {
	zkc := zktest.Start(b)
	conn := zkc.Connect(b, 10*time.Second)
	paths := layout.New("/bench", "/zkconf")
	if _, err := conn.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{20, 100} {
		m := &manifest.Manifest{Items: map[string]manifest.Item{}}
		for i := range n {
			name := fmt.Sprintf("n%d-item-%03d.conf", n, i)
			data := bytes.Repeat([]byte{byte(i)}, 1024)
			if _, err := conn.Create(paths.Item(name), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
				b.Fatal(err)
			}
			m.Items[name] = manifest.ItemOf(data)
		}
		names := m.Names()
		metas := make([]manifest.Item, n)
		for i, name := range names {
			metas[i] = m.Items[name]
		}
		todo := make([]int, n)
		for i := range todo {
			todo[i] = i
		}
		c := &Cache{conn: conn, paths: paths, itemPath: paths.Item, opts: options{concurrency: DefaultFetchConcurrency}}
		b.Run(fmt.Sprintf("items=%d/cache", n), func(b *testing.B) {
			ctx := context.Background()
			cpu0 := processCPU()
			for b.Loop() {
				items := make([]entry, n)
				for i, name := range names {
					items[i].meta = m.Items[name]
				}
				if err := c.fetchMany(ctx, m, names, metas, c.batches(names, todo, items), c.itemPath, items); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("items=%d/raw", n), func(b *testing.B) {
			cpu0 := processCPU()
			for b.Loop() {
				vals := make([][]byte, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i, name := range names {
					wg.Go(func() { vals[i], _, errs[i] = conn.Get(paths.Item(name)) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

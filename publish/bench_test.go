package publish

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
)

// benchServer starts a server for benchmarks with a 1 GiB heap. ZooKeeper
// keeps its last ~500 committed transactions in memory (it refuses a lower
// zookeeper.commitLogCount), so hundreds of half-megabyte transactions
// exhaust the test servers' default 256 MiB heap (OutOfMemoryError in the
// SyncRequestProcessor). Production servers need the same headroom.
func benchServer(b *testing.B) *zktest.Cluster {
	return zktest.StartWith(b, zktest.Options{Size: 1, JVMFlags: []string{"-Xmx1g"}})
}

// benchPublish publishes a set of n items of size bytes, every item
// changed at every iteration, and reports the latency of Publish (reads,
// commit and GC included).
func benchPublish(b *testing.B, n, size int, wantMode manifest.Mode, opts ...Option) {
	c := benchServer(b)
	p := newPub(b, c, "/bench", opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A first publish so every iteration is a change, not a creation.
	if _, err := p.Publish(ctx, Request{Items: items(n, size, "warm")}); err != nil {
		b.Fatal(err)
	}
	sets := make([]map[string][]byte, b.N)
	for i := range sets {
		sets[i] = items(n, size, strconv.Itoa(i))
	}
	b.SetBytes(int64(n * size))
	b.ResetTimer()
	for i := range b.N {
		res, err := p.Publish(ctx, Request{Items: sets[i]})
		if err != nil {
			b.Fatal(err)
		}
		if res.Mode != wantMode {
			b.Fatalf("mode %s, want %s", res.Mode, wantMode)
		}
	}
}

// BenchmarkPublish10x1KiB is a small set in multi mode.
func BenchmarkPublish10x1KiB(b *testing.B) { benchPublish(b, 10, 1<<10, "multi") }

// BenchmarkPublish100x4KiB is a 400 KiB set in multi mode.
func BenchmarkPublish100x4KiB(b *testing.B) { benchPublish(b, 100, 4<<10, "multi") }

// BenchmarkPublish5MiBMarker is a 5 MiB set (20 x 256 KiB), marker mode.
// Every iteration changes every item, so each generation stores 5 MiB of
// new blobs: the retention is lowered to 2 to keep the test server's heap
// (256 MiB) from filling up with history.
func BenchmarkPublish5MiBMarker(b *testing.B) {
	benchPublish(b, 20, 256<<10, "marker", WithRetention(2))
}

// BenchmarkRawMulti100x4KiB is the baseline: one raw Multi setting the same
// 100 items of 4 KiB (and the root), without reads, blobs, history or GC.
func BenchmarkRawMulti100x4KiB(b *testing.B) {
	c := benchServer(b)
	conn := c.Connect(b, 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/raw", nil, 0, acl); err != nil {
		b.Fatal(err)
	}
	for name, data := range items(100, 4<<10, "warm") {
		if _, err := conn.Create("/raw/"+name, data, 0, acl); err != nil {
			b.Fatal(err)
		}
	}
	sets := make([]map[string][]byte, b.N)
	for i := range sets {
		sets[i] = items(100, 4<<10, strconv.Itoa(i))
	}
	b.SetBytes(100 * 4 << 10)
	b.ResetTimer()
	for i := range b.N {
		ops := []any{&zk.SetDataRequest{Path: "/raw", Data: []byte(fmt.Sprint(i)), Version: int32(i)}}
		for _, name := range sortedNames(sets[i]) {
			ops = append(ops, &zk.SetDataRequest{Path: "/raw/" + name, Data: sets[i][name], Version: -1})
		}
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	}
}

package publish

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"syscall"
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

// BenchmarkPublishCost100x4KiB is the fleet benchmark's publish-cost
// measurement (tools/bench/pubcost.go) in one process: a publish of 100
// items of 4 KiB, every item changed, interleaved with a raw Multi of the
// same writes on the same server. It reports the medians: pub-ms is the
// call → the commit acknowledged, prep-ms the call → the commit about to
// be sent (reads, hashing, planning; the client's encoding of the Multi
// is in commit-ms, as it is in raw-ms), commit-ms the commit sent →
// acknowledged, call-ms the whole call, raw-ms the raw Multi, and ratio
// pub-ms / raw-ms (the fleet benchmark's bound: 1.5); pubcpu-ms is the
// process's CPU time per publish call (the client's goroutines and the
// runtime's included), the measure that a loaded machine leaves
// comparable.
func BenchmarkPublishCost100x4KiB(b *testing.B) {
	const n, size = 100, 4 << 10
	c := benchServer(b)
	var sent, acked time.Time
	p := newPub(b, c, "/bench", WithMeta("/benchmeta"),
		withBeforeCommit(func(string) { sent = time.Now() }),
		withAfterCommit(func() bool { acked = time.Now(); return false }))
	conn := c.Connect(b, 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/raw", nil, 0, acl); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	warm := items(n, size, "warm")
	for name, data := range warm {
		if _, err := conn.Create("/raw/"+name, data, 0, acl); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := p.Publish(ctx, Request{Items: warm}); err != nil {
		b.Fatal(err)
	}
	sets := make([]map[string][]byte, b.N)
	for i := range sets {
		sets[i] = items(n, size, strconv.Itoa(i))
	}
	var pub, prep, commit, call, raw []time.Duration
	var cpu time.Duration
	b.SetBytes(n * size)
	b.ResetTimer()
	for i := range b.N {
		c0 := cpuTime()
		t0 := time.Now()
		res, err := p.Publish(ctx, Request{Items: sets[i]})
		end := time.Now()
		cpu += cpuTime() - c0
		if err != nil {
			b.Fatal(err)
		}
		if res.Mode != manifest.ModeMulti || res.CommitAttempts != 1 {
			b.Fatalf("mode %s, %d commit attempts: want one multi-mode commit", res.Mode, res.CommitAttempts)
		}
		pub, prep, commit, call = append(pub, acked.Sub(t0)), append(prep, sent.Sub(t0)), append(commit, acked.Sub(sent)), append(call, end.Sub(t0))
		ops := []any{&zk.SetDataRequest{Path: "/raw", Data: []byte(strconv.Itoa(i)), Version: int32(i)}}
		for _, name := range sortedNames(sets[i]) {
			ops = append(ops, &zk.SetDataRequest{Path: "/raw/" + name, Data: sets[i][name], Version: -1})
		}
		t0 = time.Now()
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(t0))
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(med(pub), "pub-ms")
	b.ReportMetric(med(prep), "prep-ms")
	b.ReportMetric(med(commit), "commit-ms")
	b.ReportMetric(med(call), "call-ms")
	b.ReportMetric(med(raw), "raw-ms")
	b.ReportMetric(med(pub)/med(raw), "ratio")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond), "pubcpu-ms")
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPrepare100x4KiB is the CPU a publish of 100 items of 4 KiB,
// every item changed, spends between its reads and its commit, without
// the reads: checking and hashing the request (step 1), decoding the
// root's manifest, the checks, the plan and the transaction (steps 3 to
// 5).
func BenchmarkPrepare100x4KiB(b *testing.B) {
	p := newPub(b, startZK(b), "/prep")
	ctx := context.Background()
	live := &manifest.Manifest{Format: 1, Generation: 41, PublishID: newPublishID(), PublishedAt: time.Now().UTC(),
		Publisher: "tester@test", Mode: manifest.ModeMulti, Incarnation: manifest.NewIncarnation(),
		Items: hashItems(items(100, 4<<10, "live"))}
	rootData := live.Encode()
	next := items(100, 4<<10, "next")
	gens := make([]int64, 20)
	for i := range gens {
		gens[i] = int64(22 + i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	defer func() {
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/float64(time.Microsecond), "cpu-us/op")
	}()
	for range b.N {
		req := Request{Items: next}
		hashed, err := p.checkRequest(req, nil)
		if err != nil {
			b.Fatal(err)
		}
		m, err := manifest.Decode(rootData)
		if err != nil {
			b.Fatal(err)
		}
		st := &state{rootStat: &zk.Stat{Version: 40}, rootData: rootData, live: m, children: m.Names(),
			tree: newTree(m.Names()), history: gens, haveMeta: true, histStat: &zk.Stat{}, incarnation: m.Incarnation}
		if err := p.check(ctx, st, req, hashed); err != nil {
			b.Fatal(err)
		}
		pl, _, err := p.planNext(ctx, st, req, hashed, inherited{Item: p.cfg.acl, Meta: p.cfg.acl})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.chooseMode(st, req, pl, &Result{}); err != nil {
			b.Fatal(err)
		}
	}
}

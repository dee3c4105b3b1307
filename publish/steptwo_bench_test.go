package publish

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStepTwo20x1KiB times step 2's reads of a one-item publish of a
// 20-item set of 1 KiB items, as a new Publisher (a confpush run) makes
// them: the ACLs too. One iteration: startStepTwo to done, the server
// warmed first (its JIT) and holding a history of 25 generations, as in
// confbench latency (docs/bench/latency-pushlist-2026-11-28c).
func BenchmarkStepTwo20x1KiB(b *testing.B) {
	c := benchServer(b)
	p := newPub(b, c, "/bench")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	set := items(20, 1<<10, "v1")
	for i := range 25 { // a history, as in the latency benchmark
		s := clone(set)
		s["item-00.conf"] = content(1<<10, "w"+strconv.Itoa(i))
		if _, err := p.Publish(ctx, Request{Items: s}); err != nil {
			b.Fatal(err)
		}
	}
	next := clone(set)
	next["item-00.conf"] = content(1<<10, "next")
	sp, _ := speculate(next)
	for range 300 { // the server's JIT
		p.mu.Lock()
		p.acls = nil
		p.mu.Unlock()
		<-p.startStepTwo(ctx, sp, nil).done
	}
	b.ResetTimer()
	for range b.N {
		p.mu.Lock()
		p.acls = nil
		p.mu.Unlock()
		r := p.startStepTwo(ctx, sp, nil)
		<-r.done
		if r.stErr != nil || r.aclErr != nil {
			b.Fatal(r.stErr, r.aclErr)
		}
	}
}

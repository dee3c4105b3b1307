package publish

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestStepTwoEndsWithItsContext: step 2's reads make their blocking calls
// in their own goroutines (inlineReads), and the batch still ends when
// its context does, without waiting for the calls: with the server
// stopped (SIGSTOP: the reads are sent and never answered), cancelling
// the context closes done while the session is still connected, and the
// result reports the context's error for the state and the ACLs. A batch
// that waited for its calls would close done only once the client gave
// up on the connection.
func TestStepTwoEndsWithItsContext(t *testing.T) {
	c := startOwnZK(t)
	ctx := testCtx(t)
	p := newPub(t, c, "/steptwo")
	mustPublish(t, p, Request{Items: items(5, 100, "g1")})
	p.mu.Lock()
	p.acls = nil // read the ACLs too
	p.mu.Unlock()

	pid := c.PID(0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	before := blockedRequests()
	sp, _ := speculate(items(5, 100, "g2"))
	r := p.startStepTwo(rctx, sp, nil)
	// Wait until the reads are blocked in the client, unanswered.
	for blockedRequests() < before+3 {
		select {
		case <-r.done:
			t.Fatalf("step 2 ended with the server stopped: %v", r.stErr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-r.done
	if st := p.conn().State(); st != zk.StateHasSession {
		t.Fatalf("done closed only after the connection was given up (state %v)", st)
	}
	if !errors.Is(r.stErr, context.Canceled) || r.st != nil {
		t.Errorf("state: %v, %v; want context.Canceled", r.st, r.stErr)
	}
	if r.acl == nil || !errors.Is(r.aclErr, context.Canceled) {
		t.Errorf("ACLs: %v, %v; want context.Canceled", r.acl, r.aclErr)
	}
}

// blockedRequests counts the goroutines waiting for a ZooKeeper answer.
func blockedRequests() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "zk.(*Conn).request(")
}

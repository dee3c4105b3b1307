package zkclient

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestMultiQueueOrdered: a Multi queued with MultiQueue (the patched
// client's ordered asynchronous submit, third_party/go-zookeeper-zk) is
// sent before its answer arrives, and a Multi queued after it is sent
// behind it and run after it by the server. The counting proxy holds the
// server's answers from the first Multi on until a second one is
// outstanding (or 2 s pass): the second is written while the first is
// unanswered, and it can only succeed if the server ran the first before
// it (it checks the node the first creates). A failed Multi answers its
// per-op errors as Multi does; an op of an unknown type fails at once;
// a closed connection answers with ErrConnectionClosed.
func TestMultiQueueOrdered(t *testing.T) {
	counter := zktest.CountRequests(t, sharedZooKeeper.For(t).Addrs()[0])
	counter.Hold(zktest.OpMulti, 1, 2*time.Second)
	conn := dialFresh(t, []string{counter.Addr()})
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)

	first := conn.MultiQueue(&zk.CreateRequest{Path: "/q", Data: []byte("first"), Acl: acl})
	second := conn.MultiQueue(
		&zk.CheckVersionRequest{Path: "/q", Version: 0},
		&zk.CreateRequest{Path: "/q/after", Data: []byte("second"), Acl: acl},
	)
	if _, err := first.Result(); err != nil {
		t.Fatalf("first multi: %v", err)
	}
	resp, err := second.Result()
	if err != nil {
		t.Fatalf("second multi (checks the first's node): %v", err)
	}
	if len(resp) != 2 || resp[1].String != "/q/after" {
		t.Fatalf("second multi answered %+v, want the check and the create of /q/after", resp)
	}
	if most := counter.MaxOutstanding(zktest.OpMulti); most < 2 {
		t.Fatalf("at most %d Multi outstanding: the second was sent only after the first's answer", most)
	}

	// A failing Multi: nothing applied, the failing op's error in its slot.
	failed := conn.MultiQueue(
		&zk.CreateRequest{Path: "/q/new", Data: nil, Acl: acl},
		&zk.CreateRequest{Path: "/q/after", Data: nil, Acl: acl},
	)
	resp, err = failed.Result()
	if err == nil || len(resp) != 2 || !errors.Is(resp[1].Error, zk.ErrNodeExists) {
		t.Fatalf("multi creating an existing node: %+v, %v; want NodeExists on its second op", resp, err)
	}
	if ok, _, err := conn.Exists("/q/new"); err != nil || ok {
		t.Fatalf("a failed multi applied its first op (exists %v, %v)", ok, err)
	}

	bad := conn.MultiQueue("not an op")
	select {
	case <-bad.Done():
	default:
		t.Fatal("an op of an unknown type did not fail at once")
	}
	if _, err := bad.Result(); err == nil {
		t.Fatal("an op of an unknown type was accepted")
	}

	conn.Close()
	if _, err := conn.MultiQueue(&zk.CheckVersionRequest{Path: "/q", Version: -1}).Result(); !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("multi on a closed connection: %v, want a closed connection", err)
	}
}

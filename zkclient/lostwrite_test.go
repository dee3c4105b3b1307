package zkclient

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestIsLostWrite: a request the client failed to write (its answer is
// the socket's error, wrapped as callers wrap it) is a lost write; a read
// failure of the socket, ZooKeeper's own errors and nil are not.
func TestIsLostWrite(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{reset, true},
		{fmt.Errorf("read ACL /r: %w", reset), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{zk.ErrConnectionClosed, false},
		{zk.ErrNoAuth, false},
		{errors.New("write"), false},
		{nil, false},
	} {
		if got := IsLostWrite(c.err); got != c.want {
			t.Errorf("IsLostWrite(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

package zkclient_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// TestIsQuotaExceeded: the client library's text for code -125, wrapped
// or not, and errors already classified are quota errors; other codes and
// sentinels are not. The real server's reply is pinned by
// cmd/confpush/internal/access TestQuotaServerFacts.
func TestIsQuotaExceeded(t *testing.T) {
	lib := errors.New("unknown error: -125")
	for err, want := range map[error]bool{
		lib:                              true,
		fmt.Errorf("create /x: %w", lib): true,
		fmt.Errorf("%w: /x", zkclient.ErrQuotaExceeded): true,
		errors.New("unknown error: -12"):                false,
		zk.ErrNoAuth:                                    false,
		nil:                                             false,
	} {
		if got := zkclient.IsQuotaExceeded(err); got != want {
			t.Errorf("IsQuotaExceeded(%v) = %v; want %v", err, got, want)
		}
	}
}

package zkclient_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

func TestExplain(t *testing.T) {
	if zkclient.Explain(nil, "/x", zkclient.OpRead) != nil {
		t.Fatal("Explain(nil) != nil")
	}
	other := errors.New("boom")
	if zkclient.Explain(other, "/x", zkclient.OpRead) != other {
		t.Fatal("Explain changed an unrelated error")
	}
	for _, c := range []struct {
		op         zkclient.Op
		path, want string
	}{
		{zkclient.OpRead, "/config", "permission denied: read on /config (the ZooKeeper identity in use lacks READ; check the credentials file"},
		{zkclient.OpList, "/config", "lacks READ;"},
		{zkclient.OpWrite, "/config", "permission denied: write on /config (the ZooKeeper identity in use lacks WRITE;"},
		{zkclient.OpCreate, "/config/app.json", "permission denied: create on /config/app.json (the ZooKeeper identity in use lacks CREATE on /config;"},
		{zkclient.OpDelete, "/config/app.json", "lacks DELETE on /config;"},
		{zkclient.OpSetACL, "/config", "lacks ADMIN;"},
		{zkclient.OpReadACL, "/config", "lacks READ or ADMIN;"},
	} {
		err := zkclient.Explain(fmt.Errorf("get: %w", zk.ErrNoAuth), c.path, c.op)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q; want it to contain %q", c.op, err, c.want)
		}
		var pe *zkclient.PermissionError
		if !errors.Is(err, zkclient.ErrPermission) || !errors.Is(err, zk.ErrNoAuth) || !errors.As(err, &pe) || pe.Path != c.path {
			t.Errorf("%s: %v is not a *PermissionError wrapping zk.ErrNoAuth", c.op, err)
		}
		if again := zkclient.Explain(err, "/elsewhere", zkclient.OpWrite); again != err {
			t.Errorf("explaining twice changed %q into %q", err, again)
		}
	}
	err := zkclient.Explain(zk.ErrAuthFailed, "/config", zkclient.OpRead)
	if !errors.Is(err, zkclient.ErrAuthFailed) || !errors.Is(err, zk.ErrAuthFailed) || !strings.Contains(err.Error(), "/config") {
		t.Errorf("auth failed: %v", err)
	}
}

func TestExplainMulti(t *testing.T) {
	ops := []any{
		&zk.CheckVersionRequest{Path: "/config", Version: 3},
		&zk.CreateRequest{Path: "/config/a"},
		&zk.DeleteRequest{Path: "/config/b"},
	}
	res := []zk.MultiResponse{{}, {}, {Error: zk.ErrNoAuth}}
	err := zkclient.ExplainMulti(zk.ErrNoAuth, ops, res)
	if !strings.Contains(err.Error(), "delete on /config/b") || !strings.Contains(err.Error(), "DELETE on /config;") {
		t.Errorf("ExplainMulti = %v", err)
	}
	if err := zkclient.ExplainMulti(zk.ErrBadVersion, ops, res); err != zk.ErrBadVersion {
		t.Errorf("ExplainMulti changed BadVersion: %v", err)
	}
	if err := zkclient.ExplainMulti(zk.ErrNoAuth, nil, nil); !errors.Is(err, zkclient.ErrPermission) {
		t.Errorf("ExplainMulti without responses = %v", err)
	}
}

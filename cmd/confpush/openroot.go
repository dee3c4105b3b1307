package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/internal/clidoc"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// publishes reports whether cmd publishes a generation: each of these
// warns once when the root has no access control.
func publishes(cmd *cobra.Command) bool {
	switch strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") {
	case "publish", "rollback", "put", "delete", "watch", "import", "rollout promote", "rollout abort":
		return true
	}
	return false
}

// openRootFlags gives every publishing command --allow-open
// (CONFPUSH_ALLOW_OPEN, allow-open in the --config file).
func (a *app) openRootFlags(root *cobra.Command) {
	clidoc.Walk(root, func(c *cobra.Command) {
		if publishes(c) {
			c.Flags().Bool("allow-open", false, "publish to a root without access control (no 'confpush init') without the warning")
		}
	})
}

// warnOpenRoot warns, once per publishing command, when the root is
// writable by anyone who can reach ZooKeeper: a root 'confpush init' never
// protected has the world ACL, and so does a root the publish is about to
// create (the nodes a publish creates copy the root's ACL). --allow-open
// silences it. A root whose ACL cannot be read is not judged: the publish
// itself reports what it may not do.
func (a *app) warnOpenRoot(ctx context.Context, conn *zk.Conn) {
	if w := a.checkOpenRoot(ctx, conn, nil); w != nil {
		a.printOpenRoot(<-w)
	}
}

// checkOpenRoot sends warnOpenRoot's read and returns at once the channel
// that receives its warning ("" for none), or nil with --allow-open: the
// read can then be in flight with others (connect sends it with the access
// probe's, one round trip for the three). sessionUp is as for
// startConnect: a read answered with a lost connection is made again
// (againWhileLost).
func (a *app) checkOpenRoot(ctx context.Context, conn *zk.Conn, sessionUp <-chan struct{}) <-chan string {
	if a.v.GetBool("allow-open") {
		return nil
	}
	w := make(chan string, 1)
	go func() {
		warning, _ := againWhileLost(ctx, sessionUp, func() (string, error) { return a.openRootWarning(conn) })
		w <- warning
	}()
	return w
}

// printOpenRoot prints warning, if any, on stderr.
func (a *app) printOpenRoot(warning string) {
	if warning != "" {
		fmt.Fprint(a.stderr, warning)
	}
}

// openRootWarning reads the root's ACL and returns warnOpenRoot's warning,
// or "" when the root is protected or its ACL cannot be read (then with
// the read's error).
func (a *app) openRootWarning(conn *zk.Conn) (string, error) {
	acl, _, err := conn.GetACL(a.paths().Root)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return a.openRootText(nil, false), nil
	case err != nil:
		return "", err
	}
	return a.openRootText(acl, true), nil
}

// openRootFrom is checkOpenRoot on the root's ACL as the pending
// prefetch of p reads it (publish.Publisher.PrefetchACLs), instead of a
// read of its own; nil with --allow-open, and the check's own read when
// p has no such prefetch.
func (a *app) openRootFrom(ctx context.Context, p *publish.Publisher, conn *zk.Conn, sessionUp <-chan struct{}) <-chan string {
	if a.v.GetBool("allow-open") {
		return nil
	}
	w := make(chan string, 1)
	go func() {
		acls, ok := p.PrefetchACLs(ctx)
		switch {
		case !ok:
			w <- <-a.checkOpenRoot(ctx, conn, sessionUp)
		case acls.Err != nil:
			w <- "" // as for a root whose ACL cannot be read
		default:
			w <- a.openRootText(acls.Root, acls.RootExists)
		}
	}()
	return w
}

// openRootText is warnOpenRoot's warning for the root's ACL acl (exists:
// false when the root does not exist), "" for a protected root.
func (a *app) openRootText(acl []zk.ACL, exists bool) string {
	root := a.paths().Root
	var what string
	if !exists {
		what = fmt.Sprintf("root %s does not exist yet: publishing creates it without access control (world:anyone:cdrwa)", root)
	} else {
		open := worldWritable(acl)
		if open == "" {
			return ""
		}
		what = fmt.Sprintf("root %s has no access control (its ACL gives world:anyone:%s)", root, open)
	}
	return fmt.Sprintf("confpush: warning: %s; anyone who can reach ZooKeeper can change or delete its configuration "+
		"and forge the agents' status. Protect it with 'confpush init %s --publisher-auth-file F --agent-auth-file F...' "+
		"(docs/security.md), or pass --allow-open (CONFPUSH_ALLOW_OPEN=true) to publish to an open root without this warning\n",
		what, root)
}

// worldWritable returns the permissions beyond READ an ACL gives
// world:anyone, as zkCli writes them ("" when none).
func worldWritable(acl []zk.ACL) string {
	var perms int32
	for _, e := range acl {
		if e.Scheme == "world" && e.ID == "anyone" {
			perms |= e.Perms
		}
	}
	if perms&^zk.PermRead == 0 {
		return ""
	}
	return aclmodel.PermString(perms)
}

// againWhileLost runs check, and runs it again while its answer is a lost
// connection (zkclient.IsRecoverable, or the request's write failed:
// zkclient.IsLostWrite), until ctx ends; it returns the last
// answer. A lost connection answers nothing about the check: the client
// reconnects on its own, and a read may always be sent again. With
// sessionUp (startConnect's), the second attempt waits for the dial to
// end first. The pauses are the publisher's read retries' (from 25 ms):
// a request queued while the client pauses before it goes round its
// servers again (a second when there is one server) is answered
// ErrNoServer at once, and the check must outlast that.
func againWhileLost[T any](ctx context.Context, sessionUp <-chan struct{}, check func() (T, error)) (T, error) {
	v, err := check()
	for attempt := 0; zkclient.IsRecoverable(err) || zkclient.IsLostWrite(err); attempt++ {
		if sessionUp != nil {
			select {
			case <-sessionUp:
			case <-ctx.Done():
				return v, err
			}
		}
		if attempt > 0 {
			if (backoff.Policy{Base: 25 * time.Millisecond, Max: 800 * time.Millisecond}).Sleep(ctx, attempt) != nil {
				return v, err
			}
		}
		v, err = check()
	}
	return v, err
}

// Package election elects one leader among processes that share a
// ZooKeeper directory, the recipe of the ZooKeeper documentation with the
// fixes its known edge cases need:
//
//  1. Create an ephemeral-sequential node "<dir>/_c_<guid>-n_" with a fresh
//     GUID in its name.
//  2. If the create fails with a connection loss, it may have landed: once
//     reconnected, list the directory and look for the GUID before creating
//     again (a blind retry could leave two nodes, and the orphan would be
//     elected one day with nobody behind it).
//  3. List the directory; the node with the lowest sequence leads.
//  4. Otherwise watch only the node just before ours (exists watch), so a
//     leader change wakes one process, not the herd, and go to 3 when it
//     fires.
//
// The leader's node is its fencing token: the publisher adds a check that
// the node still exists to every commit (publish.Request.Fence), so a
// leader whose session expired, and whose node the server deleted, cannot
// publish even before it learns that it lost.
package election

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// Candidate runs for leadership in one directory.
type Candidate struct {
	cl   *zkclient.Client
	dir  string
	acl  []zk.ACL
	data []byte
}

// New returns a candidate for dir on cl; data is stored in its node (who
// it is). Its node is ephemeral: it goes with cl's session.
func New(cl *zkclient.Client, dir string, data []byte, acl []zk.ACL) *Candidate {
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	return &Candidate{cl: cl, dir: dir, acl: acl, data: data}
}

// Leadership is held while Node exists.
type Leadership struct {
	// Node is the leader's election node: the fence.
	Node string
	// Epoch is the session epoch in which leadership was won; a different
	// epoch means the connection was lost since (see zkclient.Status).
	Epoch uint64
}

// Campaign creates this candidate's node and blocks until it leads or ctx
// ends.
func (c *Candidate) Campaign(ctx context.Context) (Leadership, error) {
	if err := zkclient.EnsurePath(ctx, c.cl.Conn(), c.dir, c.acl); err != nil {
		return Leadership{}, err
	}
	node, err := c.create(ctx)
	if err != nil {
		return Leadership{}, err
	}
	for {
		st := c.cl.Session().Status()
		kids, _, err := c.cl.Conn().Children(c.dir)
		if err != nil {
			if zkclient.IsRecoverable(err) {
				if _, werr := c.cl.Session().WaitConnected(ctx); werr != nil {
					return Leadership{}, werr
				}
				continue
			}
			return Leadership{}, fmt.Errorf("election: list %s: %w", c.dir, err)
		}
		mine := path.Base(node)
		if !slices.Contains(kids, mine) {
			// Our node is gone: the session expired. Start over.
			if node, err = c.create(ctx); err != nil {
				return Leadership{}, err
			}
			continue
		}
		pred := predecessor(kids, mine)
		if pred == "" {
			return Leadership{Node: node, Epoch: st.Epoch}, nil
		}
		ok, _, ev, err := c.cl.Conn().ExistsW(c.dir + "/" + pred)
		if err != nil {
			if zkclient.IsRecoverable(err) || zkclient.IsFatal(err) {
				continue
			}
			return Leadership{}, fmt.Errorf("election: watch %s: %w", pred, err)
		}
		if !ok {
			continue
		}
		select {
		case <-ctx.Done():
			_ = c.cl.Conn().Delete(node, -1)
			return Leadership{}, ctx.Err()
		case <-ev:
		case <-c.cl.Session().Changed():
			// A reconnect or expiry: re-check everything.
		}
	}
}

// Resign deletes the leader's node so the next candidate takes over.
func (c *Candidate) Resign(l Leadership) error {
	err := c.cl.Conn().Delete(l.Node, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// create makes this candidate's node, finding it by GUID after a
// connection loss instead of creating a second one.
func (c *Candidate) create(ctx context.Context) (string, error) {
	guid := newGUID()
	prefix := c.dir + "/_c_" + guid + "-n_"
	for {
		p, err := c.cl.Conn().Create(prefix, c.data, zk.FlagEphemeral|zk.FlagSequence, c.acl)
		if err == nil {
			return p, nil
		}
		if !zkclient.IsRecoverable(err) {
			return "", fmt.Errorf("election: create node in %s: %w", c.dir, err)
		}
		if _, err := c.cl.Session().WaitConnected(ctx); err != nil {
			return "", err
		}
		kids, _, err := c.cl.Conn().Children(c.dir)
		if err != nil {
			continue
		}
		for _, k := range kids {
			if strings.Contains(k, guid) {
				return c.dir + "/" + k, nil
			}
		}
	}
}

// predecessor returns the child just before mine in sequence order, or ""
// when mine is first.
func predecessor(kids []string, mine string) string {
	slices.SortFunc(kids, func(a, b string) int { return seq(a) - seq(b) })
	prev := ""
	for _, k := range kids {
		if k == mine {
			return prev
		}
		prev = k
	}
	return prev
}

// seq is the sequence number ZooKeeper appended to a node name.
func seq(name string) int {
	i := strings.LastIndex(name, "-n_")
	if i < 0 {
		return 1<<31 - 1
	}
	n, err := strconv.Atoi(name[i+3:])
	if err != nil {
		return 1<<31 - 1
	}
	return n
}

func newGUID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

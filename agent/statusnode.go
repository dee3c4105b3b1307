package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zkconn"
)

// statusNode keeps the agent's ephemeral status node (layout's
// status/<agent-id>) equal to its latest Status.
//
// It runs on its own goroutine fed through a one-slot, latest-value channel,
// so a slow or absent ZooKeeper never delays rendering: intermediate
// statuses are dropped, the newest always wins. Writes are unconditional
// sets (idempotent: safe to repeat after a connection loss). The node is
// created when missing, and re-created after a session expiry, which the
// go-zookeeper client follows with a silent new session that does not own
// the old ephemeral node (the server deleted it).
type statusNode struct {
	zk    *zkconn.Client
	conn  *zk.Conn // zk's current connection, taken before each write
	sess  *zkconn.Session
	paths layout.Paths
	path  string
	acl   []zk.ACL
	log   *slog.Logger
	in    chan Status
	done  chan struct{}
}

func newStatusNode(client *zkconn.Client, paths layout.Paths, agentID string, acl []zk.ACL, log *slog.Logger) *statusNode {
	return &statusNode{zk: client, sess: client.Session(), paths: paths, path: paths.StatusNode(agentID), acl: acl, log: log,
		in: make(chan Status, 1), done: make(chan struct{})}
}

// update hands over the newest status without blocking.
func (n *statusNode) update(s Status) {
	for {
		select {
		case n.in <- s:
			return
		default:
		}
		select {
		case <-n.in:
		default:
		}
	}
}

func (n *statusNode) run(ctx context.Context) {
	defer close(n.done)
	var (
		last    []byte
		pending bool
		written uint64 // session epoch at the last successful write
	)
	retry := newBackoff(200*time.Millisecond, 10*time.Second)
	for {
		changed := n.sess.Changed()
		st := n.sess.Status()
		// A new session (after an expiry, or a reconnect that may have
		// hidden one) must prove the node exists again.
		if st.Connected && st.Epoch != written && last != nil {
			pending = true
		}
		if pending && st.Connected {
			// A replaced connection (refused session) is a new session:
			// the Session's Epoch moved, so the node is written again.
			n.conn = n.zk.Conn()
			if err := n.write(last); err != nil {
				n.log.Warn("status node not written", "path", n.path, "error", err)
				retry.schedule()
			} else {
				pending, written = false, st.Epoch
				retry.reset()
			}
		}
		select {
		case <-ctx.Done():
			// No delete: under ACLs agents may not delete (DELETE is on the
			// parent), and closing the session removes the node at once.
			return
		case s := <-n.in:
			b, err := json.Marshal(s)
			if err != nil {
				continue
			}
			last, pending = b, true
		case <-changed:
		case <-retry.C():
		}
	}
}

// write sets the node, creating it (ephemeral) when it is missing.
func (n *statusNode) write(data []byte) error {
	_, err := n.conn.Set(n.path, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		acl, aerr := n.createACL()
		if aerr != nil {
			return aerr
		}
		_, err = n.conn.Create(n.path, data, zk.FlagEphemeral, acl)
		if errors.Is(err, zk.ErrNoNode) {
			// The status parent does not exist yet (a fresh ensemble, or a
			// root that was never published): create it, then retry.
			parent := path.Dir(n.path)
			if perr := zkconn.EnsurePath(n.conn, parent, n.acl); perr != nil {
				return perr
			}
			_, err = n.conn.Create(n.path, data, zk.FlagEphemeral, acl)
		}
		if errors.Is(err, zk.ErrNodeExists) {
			// Our create may have landed before a connection loss, or
			// another agent uses the same id.
			return n.claim(data)
		}
		if errors.Is(err, zk.ErrNoAuth) {
			return access.Explain(err, n.path, access.OpCreate)
		}
	}
	if errors.Is(err, zk.ErrNoAuth) {
		// Another identity's node of the same name (squatting, or two
		// agents sharing an id), or a wrong password.
		return access.Explain(err, n.path, access.OpWrite)
	}
	return err
}

// createACL is the ACL of a new status node: what the tree's access policy
// says (publisher and this agent's own identity), or the configured ACL on
// a tree without access control.
func (n *statusNode) createACL() ([]zk.ACL, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl, err := access.ReadStatusNodeACL(ctx, n.conn, n.paths)
	if errors.Is(err, access.ErrNotInitialized) {
		return n.acl, nil
	}
	return acl, err
}

// claim handles a node that exists although our set found none: ours (the
// create landed before a connection loss) is set again; another session's
// means two agents share an id, which is reported, not overwritten.
func (n *statusNode) claim(data []byte) error {
	_, stat, err := n.conn.Get(n.path)
	if err != nil {
		return err
	}
	if stat.EphemeralOwner != n.conn.SessionID() {
		return errors.New("status node is owned by another session: is agent_id unique?")
	}
	_, err = n.conn.Set(n.path, data, -1)
	return err
}

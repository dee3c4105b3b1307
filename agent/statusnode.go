package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/backoff"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// statusNode keeps the agent's ephemeral status node (layout's
// status/<agent-id>) equal to its latest Status, and its registry node
// (layout's agents/<agent-id>) current.
//
// It runs on its own goroutine fed through a one-slot, latest-value channel,
// so a slow or absent ZooKeeper never delays rendering: intermediate
// statuses are dropped, the newest always wins.
//
// The agent writes only into a node it created in its current session:
// a node of its name owned by another session (another
// identity squatting the name, or this agent's previous session still
// alive after a fast restart) is never written. The conflict is reported
// (log, /readyz, /status, metric) and the node watched: when it goes (its
// session expires, or confpush acl --repair deletes it), the agent creates
// its own at once. Sets carry the version of the agent's own last create
// or set, so a node deleted and re-created by someone else between two
// writes is noticed (BadVersion or NoNode) instead of overwritten.
type statusNode struct {
	zk       *zkclient.Client
	fleet    *fleet.Fleet // the root's, for the status-ACL document
	conn     *zk.Conn     // zk's current connection, taken before each write
	sess     *zkclient.Session
	paths    layout.Paths
	agentID  string
	path     string
	acl      []zk.ACL
	log      *slog.Logger
	reg      func() fleet.Registration
	onChange func(conflict string)
	// authUser is the user of the agent's digest credentials ("" without).
	authUser string
	in       chan Status
	done     chan struct{}

	// Guarded by the run goroutine alone.
	ownSession int64 // session that created the node we own (0: none)
	ownVersion int32 // its data version after our last create or set
	conflict   string
	watch      <-chan zk.Event
	registered int64 // session in which the registry node was last written
	warnedID   bool
	// conflictEpoch is the session epoch in which the conflict was last
	// found: a new session retries at once.
	conflictEpoch uint64
}

func newStatusNode(client *zkclient.Client, fl *fleet.Fleet, paths layout.Paths, agentID string, acl []zk.ACL, log *slog.Logger) *statusNode {
	return &statusNode{zk: client, fleet: fl, sess: client.Session(), paths: paths, agentID: agentID, path: paths.StatusNode(agentID), acl: acl, log: log,
		in: make(chan Status, 1), done: make(chan struct{})}
}

// errConflict marks a status node of the agent's name that another session
// owns: the agent does not write into it.
var errConflict = errors.New("status node owned by another session")

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
	retry := backoff.NewTimer(backoff.Policy{Base: 200 * time.Millisecond, Max: 10 * time.Second})
	refresh := time.NewTicker(fleet.RegistryRefresh)
	defer refresh.Stop()
	for {
		changed := n.sess.Changed()
		st := n.sess.Status()
		// A new session (after an expiry, or a reconnect that may have
		// hidden one) must prove the node exists again.
		if st.Connected && st.Epoch != written && last != nil {
			pending = true
		}
		// In a conflict, nothing is tried until the watch on the foreign
		// node fires or a new session starts: no request per update.
		blocked := n.conflict != "" && n.watch != nil && n.conflictEpoch == st.Epoch
		if pending && st.Connected && !blocked {
			// A replaced connection (refused session) is a new session:
			// the Session's Epoch moved, so the node is written again.
			n.conn = n.zk.Conn()
			err := n.write(last)
			switch {
			case errors.Is(err, errConflict):
				n.conflictEpoch = st.Epoch
			case err != nil:
				n.log.Warn("status node not written", "path", n.path, "error", err)
				retry.Schedule()
			default:
				pending, written = false, st.Epoch
				retry.Reset()
				n.register(false)
			}
		}
		select {
		case <-ctx.Done():
			// No delete: under ACLs agents may not delete (DELETE is on the
			// parent), and closing the session removes the node at once.
			return
		case s := <-n.in:
			b, err := fleet.EncodeStatus(s)
			if err != nil {
				continue
			}
			last, pending = b, true
		case <-changed:
		case <-retry.C():
		case <-n.watch:
			// The foreign node changed or went: try to take over.
			n.watch = nil
			pending = true
		case <-refresh.C:
			if st.Connected && n.conflict == "" {
				n.register(true)
			}
		}
	}
}

// write sets the node we own in this session, or creates it; a node of our
// name that another session owns is a conflict, never written.
func (n *statusNode) write(data []byte) error {
	sid := n.conn.SessionID()
	if n.ownSession == sid && sid != 0 {
		st, err := n.conn.Set(n.path, data, n.ownVersion)
		switch {
		case err == nil:
			n.ownVersion = st.Version
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			// Our own set may have landed before a connection loss; or
			// the node is no longer ours. Look again.
			n.ownSession = 0
			return n.adopt(data)
		case errors.Is(err, zk.ErrNoNode):
			n.ownSession = 0 // deleted (confpush acl --repair): create again
		case errors.Is(err, zk.ErrNoAuth), zkclient.IsQuotaExceeded(err):
			return quotaContext(zkclient.Explain(err, n.path, zkclient.OpWrite), len(data), fleet.MaxStatusBytes)
		default:
			return err
		}
	}
	acl, err := n.createACL()
	if err != nil {
		return err
	}
	// Twice at most: a foreign node that vanishes between our create and
	// our look at it is raced for once more.
	for range 2 {
		_, err = n.conn.Create(n.path, data, zk.FlagEphemeral, acl)
		if errors.Is(err, zk.ErrNoNode) {
			// The status parent does not exist yet (a fresh ensemble, or a
			// root that was never published): create it, then retry.
			if perr := n.ensurePath(path.Dir(n.path)); perr != nil {
				return perr
			}
			_, err = n.conn.Create(n.path, data, zk.FlagEphemeral, acl)
		}
		switch {
		case err == nil:
			n.own(sid, 0)
			return nil
		case errors.Is(err, zk.ErrNodeExists):
			// Our create may have landed before a connection loss, or
			// another session holds the name.
			if err = n.adopt(data); !errors.Is(err, errVanished) {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNoAuth), zkclient.IsQuotaExceeded(err):
			return quotaContext(zkclient.Explain(err, n.path, zkclient.OpCreate), len(data), fleet.MaxStatusBytes)
		}
		return err
	}
	return err
}

// quotaContext adds the size written and its bound to a quota error
// (zkclient.QuotaError); other errors are returned as they are.
func quotaContext(err error, size, bound int) error {
	if !errors.Is(err, zkclient.ErrQuotaExceeded) {
		return err
	}
	return fmt.Errorf("%w; this node's data is %d bytes, the bound %d", err, size, bound)
}

// errVanished is a node of our name that existed at our create and not
// when we looked at it.
var errVanished = errors.New("status node vanished while being looked at")

// adopt looks at an existing node of our name: ours (this session's) is
// set with its version; another session's is a conflict, watched until it
// goes. exists checks no ACL, so even a node we may not read is judged.
func (n *statusNode) adopt(data []byte) error {
	ok, st, ev, err := n.conn.ExistsW(n.path)
	if err != nil {
		return err
	}
	if !ok {
		return errVanished
	}
	if sid := n.conn.SessionID(); st.EphemeralOwner == sid {
		st2, err := n.conn.Set(n.path, data, st.Version)
		if err != nil {
			return quotaContext(zkclient.Explain(err, n.path, zkclient.OpWrite), len(data), fleet.MaxStatusBytes)
		}
		n.own(sid, st2.Version)
		return nil
	}
	n.watch = ev
	owner := fmt.Sprintf("owned by another session (0x%x)", st.EphemeralOwner)
	if st.EphemeralOwner == 0 {
		owner = "persistent, owned by no session"
	}
	reason := fmt.Sprintf("status node %s is %s, not this agent's (0x%x): "+
		"another identity squatting the name, or this agent's previous session not yet expired; "+
		"not written, waiting for it to go (confpush acl --repair deletes a squatted one)",
		n.path, owner, n.conn.SessionID())
	if n.conflict != reason {
		n.log.Warn("status node conflict: not writing into a node this session did not create",
			"path", n.path, "owner_session", fmt.Sprintf("0x%x", st.EphemeralOwner),
			"own_session", fmt.Sprintf("0x%x", n.conn.SessionID()), "ephemeral", st.EphemeralOwner != 0)
		n.setConflict(reason)
	}
	return errConflict
}

// own records the node we created or verified in session sid.
func (n *statusNode) own(sid int64, version int32) {
	n.ownSession, n.ownVersion = sid, version
	if n.conflict != "" {
		n.log.Info("status node conflict resolved: own node created", "path", n.path)
		n.setConflict("")
	}
}

func (n *statusNode) setConflict(reason string) {
	n.conflict = reason
	if n.onChange != nil {
		n.onChange(reason)
	}
}

// ensurePath creates p and its missing parents with the configured ACL,
// bounded like the status node's other reads.
func (n *statusNode) ensurePath(p string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return zkclient.EnsurePath(ctx, n.conn, p, n.acl)
}

// createACL is the ACL of a new status or registry node: what the tree's
// access policy says (publisher and this agent's own identity), or the
// configured ACL on a tree without access control.
func (n *statusNode) createACL() ([]zk.ACL, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl, err := n.fleet.StatusNodeACL(ctx)
	if errors.Is(err, fleet.ErrNotInitialized) {
		return n.acl, nil
	}
	if err == nil && n.authUser != n.agentID && !n.warnedID {
		// Readers trust a node only when the identity that made it is
		// the one its name says (docs/security.md).
		n.warnedID = true
		n.log.Warn("agent_id differs from the user of the agent's credentials: publishers will not trust its status "+
			"node; set agent_id to the identity's user", "agent_id", n.agentID, "user", n.authUser)
	}
	return acl, err
}

// register writes the agent's registry node: once per session (force
// false: skipped when this session already did), and on the periodic
// refresh (force true). Failures are logged and retried on the next
// occasion: the registry only makes the agent expected, it never decides
// what it runs.
func (n *statusNode) register(force bool) {
	sid := n.conn.SessionID()
	if !force && n.registered == sid {
		return
	}
	if err := n.writeRegistration(); err != nil {
		n.log.Warn("agent registry node not written", "path", n.paths.AgentNode(n.agentID), "error", err)
		return
	}
	n.registered = sid
}

func (n *statusNode) writeRegistration() error {
	p := n.paths.AgentNode(n.agentID)
	r := fleet.Registration{}
	if n.reg != nil {
		r = n.reg()
	}
	now := time.Now().UTC()
	r.LastSeen = now
	for range 5 {
		b, st, err := n.conn.Get(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			r.FirstSeen = now
			data, _ := json.Marshal(r)
			acl, aerr := n.createACL()
			if aerr != nil {
				return aerr
			}
			_, err = n.conn.Create(p, data, 0, acl)
			if errors.Is(err, zk.ErrNoNode) {
				if perr := n.ensurePath(n.paths.Agents()); perr != nil {
					return fmt.Errorf("%w (on an ACL'd tree, 'confpush acl --repair' creates the registry)", perr)
				}
				_, err = n.conn.Create(p, data, 0, acl)
			}
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			if errors.Is(err, zk.ErrNoAuth) || zkclient.IsQuotaExceeded(err) {
				return quotaContext(zkclient.Explain(err, p, zkclient.OpCreate), len(data), fleet.MaxRegistrationBytes)
			}
			return err
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: another identity may hold this agent's registry name", zkclient.Explain(err, p, zkclient.OpRead))
		case err != nil:
			return err
		}
		var old fleet.Registration
		if json.Unmarshal(b, &old) == nil && !old.FirstSeen.IsZero() {
			r.FirstSeen = old.FirstSeen
		} else {
			r.FirstSeen = now
		}
		data, _ := json.Marshal(r)
		_, err = n.conn.Set(p, data, st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if errors.Is(err, zk.ErrNoAuth) || zkclient.IsQuotaExceeded(err) {
			return quotaContext(zkclient.Explain(err, p, zkclient.OpWrite), len(data), fleet.MaxRegistrationBytes)
		}
		return err
	}
	return errors.New("registry node kept changing")
}

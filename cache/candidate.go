package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// CandidateError says that a canary rollout's candidate manifest could not
// be read consistently with the root that announces it: the candidate node
// is missing, or holds another manifest than the root's canary names (a
// rollout step landed after the root read, or the node was changed behind
// the publisher's back). The cache re-reads the root, as for a torn item,
// and keeps the held snapshot meanwhile; it never assembles a mix. It
// matches manifest.ErrTorn and never carries content.
type CandidateError struct {
	// Node is the candidate node's path.
	Node string
	// Generation and RolloutID are the root's canary's.
	Generation int64
	RolloutID  string
	// Missing is true when the candidate node does not exist.
	Missing bool
	// Reason says what did not match (Missing aside).
	Reason string
}

// Error names the node, the rollout and what was wrong.
func (e *CandidateError) Error() string {
	what := e.Reason
	if e.Missing {
		what = "is missing"
	}
	return fmt.Sprintf("cache: candidate %s of rollout %s (generation %d) %s (a rollout step is landing, or the node was changed behind the publisher's back); keeping the held snapshot",
		e.Node, e.RolloutID, e.Generation, what)
}

// Is makes a *CandidateError match manifest.ErrTorn.
func (e *CandidateError) Is(target error) bool { return target == manifest.ErrTorn }

// followed returns the read of the generation this cache follows in root:
// root itself, or, when root announces a canary rollout that this cache
// follows (manifest.Follows: selected, or already holding a generation
// above the stable one), the candidate's manifest with the root's stat.
// It returns nil when the cycle ends here: the held snapshot is the
// candidate already (a widened rollout changes nothing for it), or the
// candidate did not match the root (a torn read: the root is read again
// after a backoff).
func (c *Cache) followed(ctx context.Context, loop *loopState, root *rootRead, held *Snapshot) (*rootRead, error) {
	m := root.m
	var heldGen int64
	var heldInc string
	if held != nil {
		heldGen, heldInc = held.Generation(), held.Incarnation()
	}
	if !m.Follows(c.opts.id, c.opts.labels, heldGen, heldInc) {
		return root, nil
	}
	cn := m.Canary
	if held != nil && heldInc == m.Incarnation && heldGen == cn.Generation {
		// Generation numbers are never reused within an incarnation:
		// the held snapshot is this candidate.
		loop.settle()
		loop.adoptAny, loop.refused = false, ""
		c.live(loop)
		return nil, nil
	}
	node := c.paths.Candidate()
	var data []byte
	err := c.call(ctx, func() (err error) { data, _, err = c.conn.Get(node); return err })
	c.stats.requests.Add(1)
	c.stats.candidateReads.Add(1)
	bad := &CandidateError{Node: node, Generation: cn.Generation, RolloutID: cn.RolloutID}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		bad.Missing = true
		c.onTorn(loop, bad)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", node, err)
	}
	if manifest.Hash(data) != cn.ManifestSHA256 {
		bad.Reason = "does not match the root's canary manifest_sha256"
		c.onTorn(loop, bad)
		return nil, nil
	}
	cm, err := manifest.Decode(data)
	switch {
	case err != nil:
		bad.Reason = "is not a manifest: " + err.Error()
	case cm.Candidate == nil:
		bad.Reason = "is not a candidate manifest"
	case cm.Generation != cn.Generation:
		bad.Reason = fmt.Sprintf("holds generation %d", cm.Generation)
	case cm.Incarnation != m.Incarnation:
		bad.Reason = "is of another incarnation than the root"
	}
	if bad.Reason != "" {
		c.onTorn(loop, bad)
		return nil, nil
	}
	// The rare path: the maps are built here (the candidate's lists from
	// its map, the stable manifest's map from the root's lists).
	names, items := sortedItems(cm)
	return &rootRead{m: cm, names: names, items: items, stat: root.stat,
		stable: manifest.WithItems(m, root.names, root.items), read: root.read}, nil
}

// sortedItems returns m's item names in increasing order and their
// entries, and leaves m without its map (a rootRead's form).
func sortedItems(m *manifest.Manifest) ([]string, []manifest.Item) {
	names := m.Names()
	items := make([]manifest.Item, len(names))
	for i, name := range names {
		items[i] = m.Items[name]
	}
	m.Items = nil
	return names, items
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// treeReadAttempts bounds how often import reads a source tree that
// changes while it is read.
const treeReadAttempts = 3

// KeyTree is a znode tree read as confd's ZooKeeper backend reads it: a
// node with children is a directory, a node without children a key
// whose value is its data. Publishing Items with Request.Adopt imports
// it (confpush import).
type KeyTree struct {
	// Source is the path of the tree's top node.
	Source string
	// Items are the keys taken, by item path (the key's path below
	// Source, without the leading "/").
	Items map[string][]byte
	// Binary are the item paths whose value is not UTF-8 text.
	Binary []string
	// Skipped are the nodes left out and why, sorted by path.
	Skipped []SkippedNode
	// RootData is the size of the source node's own data.
	RootData int
	// Reads counts the times the tree was read (more than 1: it changed
	// while read).
	Reads int
}

// SkippedNode is a node of a KeyTree that cannot be an item.
type SkippedNode struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// treeNode is a node as read: its data and stat, its children.
type treeNode struct {
	rel  string // path below the source, "" for the source itself
	data []byte
	stat *zk.Stat
	kids []string
	err  error // a read refused (permission): the node is skipped
}

// readKeyTree reads the tree under src at one instant: it reads every
// node (level by level, in parallel), then the stat of every node again,
// and accepts the read when no node changed, appeared or went in
// between (every node's Mzxid and Pzxid, its children's creation and
// deletion, are the same): each node then held what was read from the
// end of the first read to the start of the second, one instant common
// to all of them. A tree that changes on every one of treeReadAttempts
// reads is an error; so is a src that does not exist (wrapping
// zk.ErrNoNode). What cannot be an item is left out and reported in
// Skipped, not refused.
func ReadKeyTree(ctx context.Context, cl *zkclient.Client, src string) (*KeyTree, error) {
	conn := cl.Conn()
	for attempt := 1; ; attempt++ {
		nodes, err := readNodes(ctx, conn, src)
		if err != nil {
			return nil, err
		}
		changed, err := treeChanged(ctx, conn, src, nodes)
		if err != nil {
			return nil, err
		}
		if changed == "" {
			tr := treeKeys(src, nodes)
			tr.Reads = attempt
			return tr, nil
		}
		if attempt == treeReadAttempts {
			return nil, fmt.Errorf("the tree under %s changed while it was read, %d times (last: %s): stop the tools that write it, then import again",
				src, attempt, changed)
		}
	}
}

// readNodes reads src and every node below it, at most manifest.MaxDepth
// levels deep (a deeper node cannot be an item: it is reported, not read).
func readNodes(ctx context.Context, conn *zk.Conn, src string) ([]*treeNode, error) {
	var all []*treeNode
	level := []*treeNode{{rel: ""}}
	for depth := 0; len(level) > 0; depth++ {
		err := work.Parallel(ctx, len(level), 16, func(ctx context.Context, i int) error {
			n := level[i]
			p := src + n.rel
			_, err := zkclient.Call(ctx, func() (struct{}, error) {
				var err error
				n.data, n.stat, err = conn.Get(p)
				return struct{}{}, err
			})
			switch {
			case errors.Is(err, zk.ErrNoNode) && n.rel == "":
				return fmt.Errorf("%s: no such node: %w", src, zk.ErrNoNode)
			case errors.Is(err, zk.ErrNoNode):
				return nil // deleted since its parent was listed: the re-read sees it
			case errors.Is(err, zk.ErrNoAuth) && n.rel != "":
				n.err = err
				return nil
			case err != nil:
				return fmt.Errorf("read %s: %w", p, err)
			}
			if n.stat.NumChildren == 0 || depth == manifest.MaxDepth {
				return nil
			}
			n.kids, err = zkclient.Call(ctx, func() ([]string, error) {
				kids, _, err := conn.Children(p)
				return kids, err
			})
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", p, err)
			}
			slices.Sort(n.kids)
			return nil
		})
		if err != nil {
			return nil, err
		}
		var next []*treeNode
		for _, n := range level {
			all = append(all, n)
			for _, k := range n.kids {
				next = append(next, &treeNode{rel: n.rel + "/" + k})
			}
		}
		level = next
	}
	return all, nil
}

// treeChanged reads the stat of every node read again and says which
// one changed since ("" for none).
func treeChanged(ctx context.Context, conn *zk.Conn, src string, nodes []*treeNode) (string, error) {
	changed := make([]string, len(nodes))
	err := work.Parallel(ctx, len(nodes), 16, func(ctx context.Context, i int) error {
		n := nodes[i]
		var ok bool
		st, err := zkclient.Call(ctx, func() (*zk.Stat, error) {
			var st *zk.Stat
			var err error
			ok, st, err = conn.Exists(src + n.rel)
			return st, err
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", src+n.rel, err)
		}
		switch {
		case n.stat == nil && n.err == nil:
			if ok {
				changed[i] = src + n.rel + " appeared"
			}
		case n.stat == nil:
		case !ok:
			changed[i] = src + n.rel + " was deleted"
		case st.Czxid != n.stat.Czxid || st.Mzxid != n.stat.Mzxid || st.Pzxid != n.stat.Pzxid:
			changed[i] = src + n.rel + " changed"
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, c := range changed {
		if c != "" {
			return c, nil
		}
	}
	return "", nil
}

// treeKeys turns the nodes read into the set and the report.
func treeKeys(src string, nodes []*treeNode) *KeyTree {
	tr := &KeyTree{Source: src, Items: map[string][]byte{}}
	skip := func(rel, reason string) {
		tr.Skipped = append(tr.Skipped, SkippedNode{Path: src + rel, Reason: reason})
	}
	for _, n := range nodes {
		switch {
		case n.err != nil:
			skip(n.rel, "cannot be read with the identity in use (its ACL)")
		case n.stat == nil: // deleted while read (the re-read agreed)
		case n.rel == "":
			tr.RootData = len(n.data)
		case n.stat.NumChildren > 0 && n.kids == nil:
			skip(n.rel, fmt.Sprintf("has children more than %d levels below %s: an item path has at most %d components", manifest.MaxDepth, src, manifest.MaxDepth))
		case n.stat.NumChildren > 0:
			if len(n.data) > 0 {
				skip(n.rel, fmt.Sprintf("its own data (%d bytes): a node with children is a directory, whose data confd never reads; its keys are imported", len(n.data)))
			}
		default:
			item := strings.TrimPrefix(n.rel, "/")
			switch err := manifest.ValidatePath(item); {
			case err != nil:
				skip(n.rel, err.Error())
			case len(n.data) > ItemLimit:
				skip(n.rel, fmt.Sprintf("its value is %d bytes, more than an item's limit of %d", len(n.data), ItemLimit))
			default:
				tr.Items[item] = n.data
				if !utf8.Valid(n.data) || slices.Contains(n.data, 0) {
					tr.Binary = append(tr.Binary, item)
				}
			}
		}
	}
	slices.SortFunc(tr.Skipped, func(a, b SkippedNode) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(tr.Binary)
	return tr
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// treeReadAttempts bounds how often import reads a source tree that
// changes while it is read.
const treeReadAttempts = 3

func (a *app) importCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import --from-tree PATH",
		Short: "Publish an existing znode tree (confd's keys) as the root's first generation",
		Long: `Read the znode tree under PATH as confd's ZooKeeper backend reads it (a node
with children is a directory, a node without children is a key whose value
is its data) and publish it, atomically, as the first generation of --root:
the key PATH/database/host becomes the item database/host.

With --root equal to PATH the tree is adopted in place: the commit writes the
manifest into PATH's own data (confd never reads the data of a node with
children) and the history, and no key: confd hosts reading PATH keep
reading the same values, and from then on every change is a confpush
publish. Nodes the import cannot take stay where they are, unmanaged. With
another --root, the keys are copied there and PATH is left as it is.

The tree is read whole, then every node's version is read again: a tree
that changed in between is read again (at most 3 times), so the set is the
tree as it was at one instant. Stop the tools that write PATH first.

What it cannot take is reported and left out: a value over the item limit,
a name or path an item cannot have (a name starting with "..", a path over
16 levels or 1024 bytes, the top-level name "invalid"), a node that cannot
be read, and the data of a node with children (confd reads only its
children). A value that is not UTF-8 text is taken, and named. Keys named
.json, .yaml/.yml or .toml must parse (--no-validate skips this).

--dry-run prints the set and the report, and writes nothing to ZooKeeper.
--out-dir DIR (a new or empty directory) also writes the set as files,
DIR/database/host for the key database/host, so that it can be kept under
version control and published from there (confpush publish DIR), also with
--dry-run. A root that already holds a zkconf manifest is refused (publish
to it instead).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src := a.v.GetString("from-tree")
			root := a.v.GetString("root")
			var srcErr error
			switch err := layout.ValidateRoot(src); {
			case src == "":
				srcErr = usagef("--from-tree PATH is required (the znode whose keys to import)")
			case err != nil:
				srcErr = usagef("--from-tree: %v", err)
			case src != root && (strings.HasPrefix(root, src+"/") || strings.HasPrefix(src, root+"/")):
				srcErr = usagef("--from-tree %s and --root %s are nested: import in place (--root %s) or into a root outside the tree", src, root, src)
			}
			msg, msgErr := a.message()
			outDir := a.v.GetString("out-dir")
			if err := errlist.Join(srcErr, msgErr, checkOutDir(outDir)); err != nil {
				return err
			}
			ctx, p, cl, done, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer done()
			tr, err := readKeyTree(ctx, cl.Conn(), src)
			if err != nil {
				return err
			}
			if err := a.checkImport(tr); err != nil {
				return err
			}
			res, err := p.Publish(ctx, publish.Request{
				Items: tr.items, Adopt: true, DryRun: a.v.GetBool("dry-run"), Message: msg,
				AllowOldAgents: a.v.GetBool("allow-old-agents"),
			})
			if err != nil {
				return err
			}
			if outDir != "" {
				if err := writeSet(outDir, tr.items); err != nil {
					return err
				}
			}
			a.reportImport(p.Root(), tr, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.String("from-tree", "", "the znode whose tree of keys to import (equal to --root: adopted in place)")
	f.Bool("dry-run", false, "print the set and what cannot be taken; write nothing to ZooKeeper")
	f.String("out-dir", "", "also write the set as files below this new or empty directory (with --dry-run too)")
	validateFlags(cmd)
	messageFlag(cmd)
	allowOldAgentsFlag(cmd)
	return cmd
}

// keyTree is a znode tree read as confd's ZooKeeper backend reads it.
type keyTree struct {
	source string
	// items are the keys taken, by item path (the key's path below
	// source, without the leading "/").
	items map[string][]byte
	// binary are the item paths whose value is not UTF-8 text.
	binary []string
	// skipped are the nodes left out and why.
	skipped []skippedNode
	// rootData is the size of the source node's own data.
	rootData int
	// reads counts the times the tree was read (more than 1: it changed
	// while read).
	reads int
}

// skippedNode is a node import leaves out.
type skippedNode struct {
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
// to all of them.
func readKeyTree(ctx context.Context, conn *zk.Conn, src string) (*keyTree, error) {
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
			tr.reads = attempt
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
				return usagef("--from-tree %s: no such node", src)
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
func treeKeys(src string, nodes []*treeNode) *keyTree {
	tr := &keyTree{source: src, items: map[string][]byte{}}
	skip := func(rel, reason string) {
		tr.skipped = append(tr.skipped, skippedNode{Path: src + rel, Reason: reason})
	}
	for _, n := range nodes {
		switch {
		case n.err != nil:
			skip(n.rel, "cannot be read with the identity in use (its ACL)")
		case n.stat == nil: // deleted while read (the re-read agreed)
		case n.rel == "":
			tr.rootData = len(n.data)
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
			case len(n.data) > publish.ItemLimit:
				skip(n.rel, fmt.Sprintf("its value is %d bytes, more than an item's limit of %d", len(n.data), publish.ItemLimit))
			default:
				tr.items[item] = n.data
				if !utf8.Valid(n.data) || slices.Contains(n.data, 0) {
					tr.binary = append(tr.binary, item)
				}
			}
		}
	}
	slices.SortFunc(tr.skipped, func(a, b skippedNode) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(tr.binary)
	return tr
}

// checkImport refuses a tree with no key to take and keys that fail
// validation, naming every problem.
func (a *app) checkImport(tr *keyTree) error {
	if len(tr.items) == 0 {
		return usagef("%s holds no key to import (%d nodes left out)%s", tr.source, len(tr.skipped), skippedSuffix(tr.skipped))
	}
	err := publish.Validate(tr.items, publish.ValidateOptions{Syntax: a.validating()})
	if err != nil {
		return fmt.Errorf("the keys of %s cannot be published as they are (nothing written; --no-validate skips the syntax checks): %w", tr.source, err)
	}
	return nil
}

func skippedSuffix(s []skippedNode) string {
	if len(s) == 0 {
		return ""
	}
	var b strings.Builder
	for _, n := range s {
		fmt.Fprintf(&b, "\n  %s: %s", n.Path, n.Reason)
	}
	return ":" + b.String()
}

// reportImport prints what was (or would be) published and what was
// left out.
func (a *app) reportImport(root string, tr *keyTree, res *publish.Result) {
	paths := slices.Sorted(maps.Keys(tr.items))
	inPlace := path.Clean(tr.source) == path.Clean(root)
	obj := map[string]any{
		"root": root, "source": tr.source, "in_place": inPlace,
		"generation": res.Generation, "zxid": res.Zxid, "publish_id": res.PublishID,
		"mode": res.Mode, "dry_run": res.DryRun, "items": paths,
		"binary": nonNil(tr.binary), "skipped": nonNilSkipped(tr.skipped), "reads": tr.reads,
	}
	if res.Manifest != nil {
		obj["bytes"] = res.Manifest.TotalSize()
		obj["format"] = res.Manifest.Format
	}
	a.emit(obj, func(w io.Writer) {
		verb := "imported"
		if res.DryRun {
			verb = "dry run: would import"
		}
		where := "in place"
		if !inPlace {
			where = "to " + root
		}
		fmt.Fprintf(w, "%s %d keys of %s %s as generation %d (%s mode)", verb, len(paths), tr.source, where, res.Generation, res.Mode)
		if !res.DryRun {
			fmt.Fprintf(w, ", zxid %#x", res.Zxid)
		}
		fmt.Fprintln(w)
		binary := map[string]bool{}
		for _, b := range tr.binary {
			binary[b] = true
		}
		for _, n := range paths {
			note := ""
			if binary[n] {
				note = ", not UTF-8 text"
			}
			fmt.Fprintf(w, "  + %s (%d bytes%s)\n", n, len(tr.items[n]), note)
		}
		if len(tr.skipped) > 0 {
			fmt.Fprintf(w, "left out (%d):\n", len(tr.skipped))
			for _, s := range tr.skipped {
				fmt.Fprintf(w, "  - %s: %s\n", s.Path, s.Reason)
			}
		}
		if inPlace && tr.rootData > 0 {
			fmt.Fprintf(w, "the %d bytes of %s's own data are replaced by the manifest (confd never reads a node with children)\n", tr.rootData, tr.source)
		}
	})
}

func nonNilSkipped(s []skippedNode) []skippedNode {
	if s == nil {
		return []skippedNode{}
	}
	return s
}

// checkOutDir accepts "" (no --out-dir), a missing directory or an empty
// one: import never mixes the set with files already there.
func checkOutDir(dir string) error {
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usagef("--out-dir: %v", err)
	case len(ents) > 0:
		return usagef("--out-dir %s is not empty: import writes the set into a new or empty directory", dir)
	}
	return nil
}

// writeSet writes items below dir, each item path a file path (validated:
// relative, no ".." component), directories 0750 and files 0600: a key
// tree often holds passwords, and the operator widens what is meant to be
// shared.
func writeSet(dir string, items map[string][]byte) error {
	for _, n := range slices.Sorted(maps.Keys(items)) {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return fmt.Errorf("--out-dir: %w", err)
		}
		if err := os.WriteFile(p, items[n], 0o600); err != nil {
			return fmt.Errorf("--out-dir: %w", err)
		}
	}
	return nil
}

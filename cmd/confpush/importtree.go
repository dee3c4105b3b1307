package main

import (
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

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
)

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
			tr, err := publish.ReadKeyTree(ctx, cl, src)
			if errors.Is(err, zk.ErrNoNode) {
				return usagef("--from-tree %s: no such node", src)
			}
			if err != nil {
				return err
			}
			if err := a.checkImport(tr); err != nil {
				return err
			}
			res, err := p.Publish(ctx, publish.Request{
				Items: tr.Items, Adopt: true, DryRun: a.v.GetBool("dry-run"), Message: msg,
				AllowOldAgents: a.v.GetBool("allow-old-agents"),
			})
			if err != nil {
				return err
			}
			if outDir != "" {
				if err := writeSet(outDir, tr.Items); err != nil {
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

// checkImport refuses a tree with no key to take and keys that fail
// validation, naming every problem.
func (a *app) checkImport(tr *publish.KeyTree) error {
	if len(tr.Items) == 0 {
		return usagef("%s holds no key to import (%d nodes left out)%s", tr.Source, len(tr.Skipped), skippedSuffix(tr.Skipped))
	}
	err := publish.Validate(tr.Items, publish.ValidateOptions{Syntax: a.validating()})
	if err != nil {
		return fmt.Errorf("the keys of %s cannot be published as they are (nothing written; --no-validate skips the syntax checks): %w", tr.Source, err)
	}
	return nil
}

func skippedSuffix(s []publish.SkippedNode) string {
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
func (a *app) reportImport(root string, tr *publish.KeyTree, res *publish.Result) {
	paths := slices.Sorted(maps.Keys(tr.Items))
	inPlace := path.Clean(tr.Source) == path.Clean(root)
	obj := map[string]any{
		"root": root, "source": tr.Source, "in_place": inPlace,
		"generation": res.Generation, "zxid": res.Zxid, "publish_id": res.PublishID,
		"mode": res.Mode, "dry_run": res.DryRun, "items": paths,
		"binary": nonNil(tr.Binary), "skipped": nonNilSkipped(tr.Skipped), "reads": tr.Reads,
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
		fmt.Fprintf(w, "%s %d keys of %s %s as generation %d (%s mode)", verb, len(paths), tr.Source, where, res.Generation, res.Mode)
		if !res.DryRun {
			fmt.Fprintf(w, ", zxid %#x", res.Zxid)
		}
		fmt.Fprintln(w)
		binary := map[string]bool{}
		for _, b := range tr.Binary {
			binary[b] = true
		}
		for _, n := range paths {
			note := ""
			if binary[n] {
				note = ", not UTF-8 text"
			}
			fmt.Fprintf(w, "  + %s (%d bytes%s)\n", n, len(tr.Items[n]), note)
		}
		if len(tr.Skipped) > 0 {
			fmt.Fprintf(w, "left out (%d):\n", len(tr.Skipped))
			for _, s := range tr.Skipped {
				fmt.Fprintf(w, "  - %s: %s\n", s.Path, s.Reason)
			}
		}
		if inPlace && tr.RootData > 0 {
			fmt.Fprintf(w, "the %d bytes of %s's own data are replaced by the manifest (confd never reads a node with children)\n", tr.RootData, tr.Source)
		}
	})
}

func nonNilSkipped(s []publish.SkippedNode) []publish.SkippedNode {
	if s == nil {
		return []publish.SkippedNode{}
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

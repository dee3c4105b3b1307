package publish

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
)

// This file is what a publish knows of the nodes below the root when the
// set is a tree (docs/design.md, "Config trees"): item a/b/c is the node
// <root>/a/b/c, and its directories <root>/a and <root>/a/b are nodes with
// empty data. A publish lists the root (step 2) and, in step 3, every
// directory of the live set and of the new set, in one round; a takeover
// of a marker walks the whole tree instead. The plan then creates the
// missing directories parent first, before their items, and deletes
// those left without items, children first, after them. A node under a
// directory the publish would delete that zkconf did not write (a stray)
// is left, with its directory.

// maxStrayRounds bounds how often a multi-mode commit is sent again
// because a stray appeared under a directory it deletes (each round drops
// at least one directory delete).
const maxStrayRounds = 4

// tree is the publish's listing of the nodes below the root: the
// children of every directory listed ("" is the root), and the listed
// directories found missing.
type tree struct {
	kids   map[string]map[string]bool
	absent map[string]bool
}

func newTree(rootKids []string) *tree {
	t := &tree{kids: map[string]map[string]bool{}, absent: map[string]bool{}}
	t.set("", rootKids)
	return t
}

func (t *tree) set(dir string, kids []string) {
	m := make(map[string]bool, len(kids))
	for _, k := range kids {
		if dir == "" && k == manifest.MarkerName {
			continue
		}
		m[k] = true
	}
	t.kids[dir] = m
	delete(t.absent, dir)
}

// parent splits an item path into its directory ("" for the root) and
// name.
func parent(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// exists reports whether the node of path p exists, as listed. A path
// whose directory was not listed (or is missing) does not.
func (t *tree) exists(p string) bool {
	dir, name := parent(p)
	return t.kids[dir][name]
}

// listed reports whether the children of dir are known.
func (t *tree) listed(dir string) bool {
	_, ok := t.kids[dir]
	return ok
}

// treeDirs returns every directory of the item paths of the given sets,
// sorted.
func treeDirs(sets ...map[string]manifest.Item) []string {
	dirs := map[string]bool{}
	for _, s := range sets {
		for n := range s {
			for _, d := range manifest.Dirs(n) {
				dirs[d] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(dirs))
}

// listDirs lists the children of dirs (paths relative to the root) not
// listed yet, all at once; a missing one is recorded as absent.
func (p *Publisher) listDirs(ctx context.Context, t *tree, dirs []string) error {
	dirs = slices.DeleteFunc(slices.Clone(dirs), t.listed)
	if len(dirs) == 0 {
		return nil
	}
	kids := make([][]string, len(dirs))
	found := make([]bool, len(dirs))
	err := work.Parallel(ctx, len(dirs), 64, func(ctx context.Context, i int) error {
		k, st, err := p.childrenStat(ctx, p.paths.Item(dirs[i]))
		kids[i], found[i] = k, st != nil
		return err
	})
	if err != nil {
		return err
	}
	for i, d := range dirs {
		if found[i] {
			t.set(d, kids[i])
		} else {
			t.absent[d] = true
		}
	}
	return nil
}

// relist lists dir again (after a commit found it not empty).
func (p *Publisher) relist(ctx context.Context, t *tree, dir string) error {
	delete(t.kids, dir)
	return p.listDirs(ctx, t, []string{dir})
}

// actualTree is the whole tree under the root, as a takeover walks it:
// every leaf is an item (with the content it holds), every node with
// children a directory.
type actualTree struct {
	items map[string]manifest.Item
	dirs  map[string]bool
}

// walkActual reads every node below the root, level by level (a Get of
// each, a Children of each with children), at most manifest.MaxDepth
// levels: a node with children at the last level is neither an item nor
// a directory (its directory is never deleted). Nodes that vanish while
// it walks are left out.
func (p *Publisher) walkActual(ctx context.Context, t *tree) (*actualTree, error) {
	at := &actualTree{items: map[string]manifest.Item{}, dirs: map[string]bool{}}
	level := make([]string, 0, len(t.kids[""]))
	for k := range t.kids[""] {
		level = append(level, k)
	}
	slices.Sort(level)
	for depth := 1; len(level) > 0; depth++ {
		type node struct {
			data []byte
			stat *zk.Stat
			kids []string
		}
		nodes := make([]node, len(level))
		err := work.Parallel(ctx, len(level), 8, func(ctx context.Context, i int) error {
			d, s, err := p.get(ctx, p.paths.Item(level[i]))
			if err != nil || s == nil {
				return err
			}
			nodes[i] = node{data: d, stat: s}
			if s.NumChildren > 0 && depth < manifest.MaxDepth {
				k, ks, err := p.childrenStat(ctx, p.paths.Item(level[i]))
				if err != nil {
					return err
				}
				if ks != nil {
					nodes[i].kids = k
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		var next []string
		for i, n := range nodes {
			name := level[i]
			switch {
			case n.stat == nil:
				dir, base := parent(name)
				t.kids[dir][base] = false
			case n.stat.NumChildren == 0:
				at.items[name] = manifest.ItemOf(n.data)
			case n.kids != nil:
				at.dirs[name] = true
				t.set(name, n.kids)
				for _, k := range n.kids {
					next = append(next, name+"/"+k)
				}
			}
		}
		slices.Sort(next)
		level = next
	}
	return at, nil
}

// dirOp is a directory the plan makes: created, or (empty) an existing
// node that held an item and is a directory in the new set.
type dirOp struct {
	path  string
	empty bool
}

// planDirs computes the directory operations of pl from the listing t:
// the directories of the new set that are missing (or hold an item now),
// parent first; the directories of the base (the live set's, or those a
// takeover found) that the new set has neither as directory nor as item,
// whose every child goes with this publish, children first; and the
// strays, the children that keep the others.
func (pl *plan) planDirs(t *tree, baseItems map[string]manifest.Item, baseDirs map[string]bool, next map[string][]byte) {
	newDirs := map[string]bool{}
	for n := range next {
		for _, d := range manifest.Dirs(n) {
			newDirs[d] = true
		}
	}
	pl.dirMakes = nil
	for _, d := range slices.Sorted(maps.Keys(newDirs)) {
		_, wasItem := baseItems[d]
		switch {
		case !t.exists(d):
			pl.dirMakes = append(pl.dirMakes, dirOp{path: d})
		case wasItem:
			pl.dirMakes = append(pl.dirMakes, dirOp{path: d, empty: true})
		}
	}
	gone := make(map[string]bool, len(pl.deletes))
	for _, n := range pl.deletes {
		gone[n] = true
	}
	var cands []string
	for d := range baseDirs {
		if _, isItem := next[d]; !newDirs[d] && !isItem && t.exists(d) {
			cands = append(cands, d)
		}
	}
	// Descending: a directory's children (longer paths with its path as
	// prefix) come before it.
	slices.SortFunc(cands, func(a, b string) int { return strings.Compare(b, a) })
	pl.dirDeletes, pl.strays = nil, nil
	deleted := map[string]bool{}
	for _, d := range cands {
		ok := t.listed(d)
		for _, c := range slices.Sorted(maps.Keys(t.kids[d])) {
			cp := d + "/" + c
			if !t.kids[d][c] || gone[cp] || deleted[cp] {
				continue
			}
			ok = false
			if !baseDirs[cp] {
				pl.strays = append(pl.strays, cp)
			}
		}
		if ok {
			deleted[d] = true
			pl.dirDeletes = append(pl.dirDeletes, d)
		}
	}
	slices.Sort(pl.strays)
}

// liveDirs is the set of directories of a manifest's item paths.
func liveDirs(items map[string]manifest.Item) map[string]bool {
	out := map[string]bool{}
	for _, d := range treeDirs(items) {
		out[d] = true
	}
	return out
}

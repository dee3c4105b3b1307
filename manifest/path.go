package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Item paths (docs/design.md, "Config trees"): an item is addressed by
// a path relative to the root, components joined by "/"; a path of one
// component is a flat item name.
const (
	// MaxDepth bounds the components of an item path.
	MaxDepth = 16
	// MaxPathLen bounds an item path, in bytes.
	MaxPathLen = 1024
	// FormatTree is the manifest format of a set with any item path that
	// has a "/". Readers older than config trees refuse it with
	// ErrFutureFormat (they read FormatVersion only), so that a host that
	// cannot render a tree keeps what it has instead of rendering part of
	// it.
	FormatTree = 2
	// MaxFormat is the highest manifest format this code reads.
	MaxFormat = FormatTree
)

// FormatFor returns the manifest format a set with these item paths
// needs: FormatVersion (1) when every path is flat, byte for byte what
// publishers before config trees write, FormatTree when any has a "/".
func FormatFor[M ~map[string]V, V any](items M) int {
	for name := range items {
		if strings.IndexByte(name, '/') >= 0 {
			return FormatTree
		}
	}
	return FormatVersion
}

// ValidatePath checks that p can be an item path: a flat name
// (ValidateName, with its messages) or components joined by "/", each a
// valid name (ValidateName's rules, except that "invalid" and "zookeeper"
// are reserved at the top level only), relative (no leading or trailing
// "/"), with no empty component, at most MaxDepth components and at most
// MaxPathLen bytes. The error names every bad component with its position
// ("component 2"), on one line.
func ValidatePath(p string) error {
	if strings.IndexByte(p, '/') < 0 {
		if len(p) > MaxPathLen {
			return fmt.Errorf("item path %.40q... is %d bytes, more than %d", p, len(p), MaxPathLen)
		}
		return ValidateName(p)
	}
	switch {
	case len(p) > MaxPathLen:
		return fmt.Errorf("item path %.40q... is %d bytes, more than %d", p, len(p), MaxPathLen)
	case !utf8.ValidString(p):
		return fmt.Errorf("item path %q is not valid UTF-8", p)
	case p[0] == '/':
		return fmt.Errorf("item path %q starts with '/': paths are relative to the root", p)
	case p[len(p)-1] == '/':
		return fmt.Errorf("item path %q ends with '/': a path names a file, not a directory", p)
	}
	var problems []string
	n := strings.Count(p, "/") + 1
	if n > MaxDepth {
		problems = append(problems, fmt.Sprintf("%d components, more than %d", n, MaxDepth))
	}
	rest := p
	for i := 0; ; i++ {
		c, after, more := strings.Cut(rest, "/")
		if msg := componentProblem(c, i == 0); msg != "" {
			problems = append(problems, fmt.Sprintf("component %d %s", i+1, msg))
		}
		if !more {
			break
		}
		rest = after
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("item path %q: %s", p, strings.Join(problems, "; "))
}

// componentProblem says what is wrong with one component of a path ("" if
// nothing), without naming the path.
func componentProblem(c string, top bool) string {
	switch {
	case c == "":
		return `is empty ("//")`
	case c == "." || c == "..":
		return fmt.Sprintf("%q is not a file name", c)
	case strings.HasPrefix(c, ".."):
		return fmt.Sprintf("%q: names starting with \"..\" are reserved for the atomic directory writer", c)
	case len(c) > MaxNameLen:
		return fmt.Sprintf("%.40q... is %d bytes, more than %d", c, len(c), MaxNameLen)
	case top && c == MarkerName:
		return fmt.Sprintf("%q is reserved at the top level (marker-mode publishes use it)", c)
	case top && c == "zookeeper":
		return fmt.Sprintf("%q is reserved at the top level by ZooKeeper", c)
	}
	pos := 0
	for _, r := range c {
		pos++
		if zkRefuses(r) {
			return fmt.Sprintf("%q: character %d is %U, which a ZooKeeper node name cannot hold", c, pos, r)
		}
	}
	return ""
}

// Dirs returns the directories of an item path, parent first: "a" and
// "a/b" for "a/b/c", none for a flat name.
func Dirs(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// Conflict is an item path that a set also uses as a directory: File is
// the item, Below an item path under it.
type Conflict struct {
	File, Below string
}

// Error says that the set holds both.
func (c Conflict) Error() string {
	return fmt.Sprintf("item path %q is both a file and a directory (of %q): a set cannot hold a file and a directory of the same name", c.File, c.Below)
}

// TreeConflicts returns every item path of names that is also a
// directory of another (a and a/b), once per such path with the first
// path below it in sorted order, sorted by File.
func TreeConflicts[M ~map[string]V, V any](items M) []Conflict {
	found := map[string]string{}
	for name := range items {
		for _, d := range Dirs(name) {
			if _, isItem := items[d]; isItem {
				if prev, ok := found[d]; !ok || name < prev {
					found[d] = name
				}
			}
		}
	}
	out := make([]Conflict, 0, len(found))
	for _, f := range slices.Sorted(maps.Keys(found)) {
		out = append(out, Conflict{File: f, Below: found[f]})
	}
	return out
}

// treeConflict returns the first conflict of a format-2 manifest's
// items, nil when there is none or the format is flat (a flat name has no
// directory).
func treeConflict(format int, items map[string]Item) error {
	if format != FormatTree {
		return nil
	}
	if cs := TreeConflicts(items); len(cs) > 0 {
		return cs[0]
	}
	return nil
}

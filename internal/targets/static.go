package targets

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zkconf/zkconf/internal/template"
)

// Snapshot is agent.Snapshot's method set: one generation of a set.
type Snapshot interface {
	template.Snapshot
	Zxid() int64
	PublishID() string
	PublishedAt() time.Time
}

// NewSnapshot returns a Snapshot of items as generation generation (no
// zxid, publish id or publish time): a set that is not in ZooKeeper. The
// map is not copied: do not change it afterwards.
func NewSnapshot(generation int64, items map[string][]byte) Snapshot {
	return staticSnapshot{gen: generation, items: items}
}

type staticSnapshot struct {
	gen   int64
	items map[string][]byte
}

func (s staticSnapshot) Generation() int64 { return s.gen }
func (s staticSnapshot) Names() []string   { return slices.Collect(maps.Keys(s.items)) }
func (s staticSnapshot) Get(name string) ([]byte, bool) {
	b, ok := s.items[name]
	return b, ok
}
func (s staticSnapshot) Zxid() int64            { return 0 }
func (s staticSnapshot) PublishID() string      { return "" }
func (s staticSnapshot) PublishedAt() time.Time { return time.Time{} }

// NewRootsSnapshot returns the sets of several roots (root name → items)
// as one Snapshot of generation generation: each target renders its own
// root's set (Spec.Root), and a template that reads other roots
// (Spec.Roots) reads theirs (View). A target one of whose roots has no
// set fails to render, naming the root (*MissingRootError). The maps are
// not copied: do not change them afterwards.
func NewRootsSnapshot(generation int64, roots map[string]map[string][]byte) Snapshot {
	s := staticRoots{gen: generation, roots: make(map[string]staticSnapshot, len(roots))}
	for name, items := range roots {
		s.roots[name] = staticSnapshot{gen: generation, items: items}
	}
	return s
}

// MissingRootError is a target's render from NewRootsSnapshot sets that
// lack one of the target's roots (agent.MissingRootError's fields, which
// agent converts it to).
type MissingRootError struct {
	Target, Root string
}

func (e *MissingRootError) Error() string {
	return fmt.Sprintf("target %q reads root %q, and no set of that root was given", e.Target, e.Root)
}

// staticRoots is NewRootsSnapshot's: it reads no root itself, every
// target reads its view (View).
type staticRoots struct {
	gen   int64
	roots map[string]staticSnapshot
}

func (s staticRoots) Generation() int64         { return s.gen }
func (s staticRoots) Names() []string           { return nil }
func (s staticRoots) Get(string) ([]byte, bool) { return nil, false }
func (s staticRoots) Zxid() int64               { return 0 }
func (s staticRoots) PublishID() string         { return "" }
func (s staticRoots) PublishedAt() time.Time    { return time.Time{} }

// staticRootsView is what a template that reads several roots renders of
// NewRootsSnapshot's sets: its own root's, and the others it lists.
type staticRootsView struct {
	staticSnapshot
	others map[string]template.Snapshot
}

// Root returns the set of a root the target lists.
func (v staticRootsView) Root(name string) (template.Snapshot, bool) {
	o, ok := v.others[name]
	return o, ok
}

// View returns what the target named name, of root root, reading the
// other roots roots, renders of snap: its view of a NewRootsSnapshot
// (a *MissingRootError when a set is missing), snap itself otherwise.
func View(snap Snapshot, name, root string, roots []string) (Snapshot, error) {
	s, ok := snap.(staticRoots)
	if !ok {
		return snap, nil
	}
	own, ok := s.roots[root]
	if !ok {
		return nil, &MissingRootError{Target: name, Root: root}
	}
	if len(roots) == 0 {
		return own, nil
	}
	v := staticRootsView{staticSnapshot: own, others: make(map[string]template.Snapshot, len(roots))}
	for _, r := range roots {
		o, ok := s.roots[r]
		if !ok {
			return nil, &MissingRootError{Target: name, Root: r}
		}
		v.others[r] = o
	}
	return v, nil
}

package template

import (
	"slices"
	"text/template/parse"
)

// RootSnapshot is a Snapshot that offers the snapshots of other named
// roots beside its own (confagent's template targets that read several
// roots): the helpers that take an item path take the root's name first
// (item "common" "db.json"), and names and generation take it alone.
type RootSnapshot interface {
	Snapshot
	// Root returns the snapshot of the root called name, false when the
	// snapshot offers no such root.
	Root(name string) (Snapshot, bool)
}

// rootHelpers are the helpers that take an optional leading root name:
// how many arguments they take without it.
var rootHelpers = map[string]int{"item": 1, "has": 1, "json": 1, "yaml": 1, "toml": 1, "names": 0, "generation": 0}

// rootSnap returns the snapshot helper reads: the execution's own, or with
// one argument the root it names.
func (st *execState) rootSnap(helper string, root []string) (Snapshot, string, error) {
	switch len(root) {
	case 0:
		return st.snap, "", nil
	case 1:
		rs, ok := st.snap.(RootSnapshot)
		var s Snapshot
		if ok {
			s, ok = rs.Root(root[0])
		}
		if !ok {
			if st.literals[root[0]] {
				return nil, "", helperErrorf(ErrBadArgument, "%s: no root %q here (a target reads its own root and those it lists in roots)", helper, root[0])
			}
			return nil, "", helperErrorf(ErrBadArgument, "%s: no root of that name here (argument of %d bytes, not shown)", helper, len(root[0]))
		}
		return s, root[0], nil
	}
	return nil, "", helperErrorf(ErrBadArgument, "%s: want at most one root name, got %d arguments", helper, len(root))
}

// itemArgs splits a path helper's arguments ([ROOT] NAME) and returns the
// snapshot and the item name.
func (st *execState) itemArgs(helper string, args []string) (Snapshot, string, error) {
	if len(args) != 1 && len(args) != 2 {
		return nil, "", helperErrorf(ErrBadArgument, "%s: want an item path, or a root name and an item path; got %d arguments", helper, len(args))
	}
	snap, _, err := st.rootSnap(helper, args[:len(args)-1])
	return snap, args[len(args)-1], err
}

// RootRefs returns the root names the template's helpers name as string
// literals ({{ item "common" "db.json" }}), sorted, each once: what
// confagent checks against the roots a target lists. A root name computed
// at render time is not among them; a root the snapshot does not offer
// fails that render.
func (t *Template) RootRefs() []string {
	var out []string
	walkNodes(t.tmpl, func(n parse.Node) {
		p, ok := n.(*parse.PipeNode)
		if !ok || p == nil {
			return
		}
		for i, c := range p.Cmds {
			// A command after the first gets the pipeline's value as its
			// last argument.
			piped := 0
			if i > 0 {
				piped = 1
			}
			id, ok := c.Args[0].(*parse.IdentifierNode)
			if !ok {
				continue
			}
			if base, ok := rootHelpers[id.Ident]; ok && len(c.Args)-1+piped == base+1 {
				if s, ok := c.Args[1].(*parse.StringNode); ok && !slices.Contains(out, s.Text) {
					out = append(out, s.Text)
				}
			}
		}
	})
	slices.Sort(out)
	return out
}

package agent

import (
	"slices"

	"github.com/zkconf/zkconf/internal/targets"
)

// Template syntaxes (TargetSpec.Syntax).
const (
	// SyntaxGo is zkconf's own: text/template with the helpers of
	// package internal/template over the items (names, item, json, ...).
	SyntaxGo = targets.SyntaxGo
	// SyntaxConfd is confd's: its template functions (getv, gets, ls,
	// lsdir, ...) over the items seen as confd's ZooKeeper backend sees
	// the root's nodes, selected by a template resource's prefix and keys
	// (ConfdResource), executed as confd executes them (nil data, so a
	// missing map key prints "<no value>").
	SyntaxConfd = targets.SyntaxConfd
)

// ConfdResource is the part of a confd template resource that decides
// which keys a confd template (Syntax SyntaxConfd) sees.
//
// The keys are the root's items at their ZooKeeper paths, as confd's
// ZooKeeper backend reads them: item "host" of root /myapp is the node
// /myapp/host, and an item path with slashes ("database/host") is a
// nested node (/myapp/database/host) whose parents are directories. Prefix
// and Keys select from them as confd does (a key is Prefix joined with
// the key, "/*" removed; a key with no node fails the render; Prefix is
// stripped from what the template reads): with Prefix /myapp and Keys
// ["/"], item "host" is {{getv "/host"}}.
type ConfdResource struct {
	// Root is the ZooKeeper path of the root the agent follows.
	Root string
	// Prefix is the resource's effective prefix, a ZooKeeper path: confd's
	// own -prefix when it ran with one (it replaces the resource's), else
	// the resource's prefix; "" is "/".
	Prefix string
	// Keys are the resource's keys, below Prefix.
	Keys []string
}

// equalSyntax reports whether a and b render their items the same way as
// far as the syntax goes.
func equalSyntax(a, b TargetSpec) bool {
	return a.Syntax == b.Syntax && a.Confd.Root == b.Confd.Root && a.Confd.Prefix == b.Confd.Prefix &&
		slices.Equal(a.Confd.Keys, b.Confd.Keys)
}

// internal is s as package targets compiles and renders it, field by
// field (TargetSpec stays this package's own type: targets is internal).
func (s TargetSpec) internal() targets.Spec {
	return targets.Spec{
		Name: s.Name, Kind: s.Kind, Dest: s.Dest, Item: s.Item, Items: s.Items, Prefix: s.Prefix,
		DirMode: s.DirMode, Template: s.Template, TemplatePath: s.TemplatePath, MissingKey: s.MissingKey,
		Mode: s.Mode, UID: s.UID, GID: s.GID, Check: s.Check, Reload: s.Reload, Timeout: s.Timeout,
		FollowSymlink: s.FollowSymlink, Grace: s.Grace, RenderTimeout: s.RenderTimeout, RenderSteps: s.RenderSteps,
		Syntax: s.Syntax, Confd: targets.Confd{Root: s.Confd.Root, Prefix: s.Confd.Prefix, Keys: s.Confd.Keys},
		Root: s.Root, Roots: s.Roots,
	}
}

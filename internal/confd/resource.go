package confd

import (
	"fmt"
	"path"
	"strings"
)

// Resource is the part of a confd template resource (conf.d/*.toml) that
// decides which keys its template sees: prefix and keys.
type Resource struct {
	Prefix string
	Keys   []string
}

// MissingKeyError is a resource key with no node in the tree (or one that
// becomes the empty path). confd's
// ZooKeeper backend fails the whole resource then (its GetValues walks
// each key and returns the walk's "zk: node does not exist"): nothing is
// rendered.
type MissingKeyError struct {
	// Key is the resource's key as written; Path the node looked up.
	Key, Path string
}

func (e *MissingKeyError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("resource key %q: becomes the empty path (confd's ZooKeeper backend fails the resource: zk: invalid path)", e.Key)
	}
	return fmt.Sprintf("resource key %q: no node %s (confd's ZooKeeper backend fails the resource: zk: node does not exist)", e.Key, e.Path)
}

// EffectivePrefix is the prefix confd uses for r (NewTemplateResource in
// resource/template/resource.go): confd's own prefix (its -prefix flag or
// confd.toml), when set, replaces the resource's, and a leading "/" is
// added when missing. Nothing else is normalised.
func (r Resource) EffectivePrefix(global string) string {
	p := r.Prefix
	if global != "" {
		p = global
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// View returns the keys and values r's template sees, from tree: every
// node of the tree by its absolute path ("/app/database/host") with its
// data. It is what confd's setVars stores in memkv, read through confd's
// ZooKeeper backend:
//
//  1. each key is joined to the prefix (util.AppendPrefix: path.Join),
//     and every "/*" in it is removed (GetValues);
//  2. the node at that path must exist (else *MissingKeyError, and the
//     resource renders nothing); the walk (nodeWalk) takes it if it has no
//     children, else every childless node below it: a node with children
//     is never read, whatever data it holds;
//  3. each path found loses the prefix (strings.TrimPrefix on the raw
//     prefix, then path.Join("/", ...)), so the template reads
//     "/database/host".
//
// Keys that overlap read the same nodes again, harmlessly. The tree's
// paths are taken as written; the root "/" is the whole tree.
func (r Resource) View(global string, tree map[string]string) (map[string]string, error) {
	prefix := r.EffectivePrefix(global)
	parents := make(map[string]bool)
	for k := range tree {
		for d := path.Dir(k); ; d = path.Dir(d) {
			if parents[d] {
				break
			}
			parents[d] = true
			if d == "/" || d == "." {
				break
			}
		}
	}
	view := make(map[string]string)
	for _, key := range r.Keys {
		p := strings.ReplaceAll(path.Join(prefix, key), "/*", "")
		if p == "" {
			// "/*" under the prefix "/": confd's ZooKeeper backend asks
			// for the node "", which the client refuses.
			return nil, &MissingKeyError{Key: key, Path: p}
		}
		found := p == "/"
		for k, v := range tree {
			if k != p && !strings.HasPrefix(k, p+"/") && p != "/" {
				continue
			}
			found = true
			if parents[k] {
				continue
			}
			view[path.Join("/", strings.TrimPrefix(k, prefix))] = v
		}
		if !found {
			return nil, &MissingKeyError{Key: key, Path: p}
		}
	}
	return view, nil
}

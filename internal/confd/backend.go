package confd

import (
	"strings"

	"github.com/go-zookeeper/zk"
)

// NodeReader is the part of a ZooKeeper client that confd's ZooKeeper
// backend uses (*zk.Conn has it).
type NodeReader interface {
	Children(path string) ([]string, *zk.Stat, error)
	Exists(path string) (bool, *zk.Stat, error)
	Get(path string) ([]byte, *zk.Stat, error)
}

// ZooKeeperValues reads the keys under prefix as confd's ZooKeeper backend
// does (backends/zookeeper/client.go, GetValues of one key and nodeWalk),
// for tests and tools that stand in for a confd host: Exists of the
// prefix; Children of it, and the prefix itself is the one key when it
// has none; else for each child, Exists, then Get when it has no children
// (a key: its absolute path and its data) or a walk of it (a directory),
// whose error is dropped as confd drops it. Nothing is versioned: a key
// deleted between its listing and its read fails the whole read (a zero
// stat from Exists makes it read as a key), one deleted below a
// sub-directory is silently missing.
func ZooKeeperValues(r NodeReader, prefix string) (map[string]string, error) {
	vars := map[string]string{}
	if _, _, err := r.Exists(prefix); err != nil {
		return vars, err
	}
	return vars, nodeWalk(r, prefix, vars)
}

func nodeWalk(r NodeReader, p string, vars map[string]string) error {
	kids, st, err := r.Children(p)
	if err != nil {
		return err
	}
	if st.NumChildren == 0 {
		b, _, err := r.Get(p)
		if err != nil {
			return err
		}
		vars[p] = string(b)
		return nil
	}
	for _, k := range kids {
		s := strings.TrimSuffix(p, "/") + "/" + k // the prefix "/": confd walks ""
		_, st, err := r.Exists(s)
		if err != nil {
			return err
		}
		if st != nil && st.NumChildren > 0 {
			_ = nodeWalk(r, s, vars) // confd: nodeWalk(s, c, vars), its error unused
			continue
		}
		b, _, err := r.Get(s)
		if err != nil {
			return err
		}
		vars[s] = string(b)
	}
	return nil
}

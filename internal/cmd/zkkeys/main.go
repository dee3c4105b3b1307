// Command zkkeys plays a confd fleet's side of make demo-confd, with raw
// ZooKeeper calls (no zkconf client, no credentials):
//
//	zkkeys --zk ADDR load PREFIX DIR   writes DIR's files as a key tree under PREFIX,
//	                                   as confd's users do (zkCli, kazoo): a directory
//	                                   is a node with empty data, a file a key
//	zkkeys --zk ADDR dump PREFIX       prints the keys as confd's ZooKeeper backend
//	                                   reads them (confd.ZooKeeperValues: a node
//	                                   without children is a key, read with Get),
//	                                   one "KEY = VALUE" line each, sorted, the
//	                                   value quoted as a Go string
//
// It is not installed: it stands in for the confd host and its tooling.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/confd"
)

func main() {
	servers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 || (args[0] == "load") != (len(args) == 3) || (args[0] != "load" && args[0] != "dump") {
		fmt.Fprintln(os.Stderr, "usage: zkkeys --zk ADDR load PREFIX DIR | dump PREFIX")
		os.Exit(2)
	}
	conn, _, err := zk.Connect(strings.Split(*servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	if args[0] == "load" {
		err = load(conn, args[1], args[2])
	} else {
		err = dump(conn, args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "zkkeys:", err)
	os.Exit(1)
}

func load(conn *zk.Conn, prefix, dir string) error {
	acl := zk.WorldACL(zk.PermAll)
	create := func(p string, data []byte) error {
		_, err := conn.Create(p, data, 0, acl)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(p, data, -1)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	}
	if err := create(prefix, nil); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		node := prefix + "/" + filepath.ToSlash(rel)
		if d.IsDir() {
			return create(node, nil)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return create(node, b)
	})
}

func dump(conn *zk.Conn, prefix string) error {
	vars, err := confd.ZooKeeperValues(conn, prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s = %q\n", k, vars[k])
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// demoConfd is what make demo-confd migrates.
const demoConfd = "../../examples/confd-migration"

// readKeys reads a directory of keys (one file per key) as item paths.
func readKeys(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	items := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		items[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestDemoConfdExample keeps make demo-confd's example true without the
// script: the example's keys written as a raw key tree, adopted in place
// (what confpush import does), and the example's confd directory read by
// confagent (confd_dir) render exactly the example's want/ (what confd
// renders, written out); after the demo's change, want-v2/.
func TestDemoConfdExample(t *testing.T) {
	c := sharedZooKeeper.For(t)
	conn := c.Connect(t, 10*time.Second)
	keys := readKeys(t, filepath.Join(demoConfd, "keys"))
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/myapp", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"app", "database", "upstreams", "services", "services/api", "services/web"} {
		if _, err := conn.Create("/myapp/"+d, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range keys {
		if _, err := conn.Create("/myapp/"+k, v, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	zc, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	p, err := publish.New(zkclient.Fixed(zc, sess), "/myapp")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Publish(ctx, publish.Request{Items: keys, Adopt: true}); err != nil {
		t.Fatalf("adopt: %v", err)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	confdDir := copyConfdDir(t, filepath.Join(demoConfd, "confd"), dir, out)
	cfgPath := filepath.Join(dir, "confagent.yaml")
	writeAtomic(t, cfgPath, fmt.Sprintf("zookeeper:\n  servers: [%s]\nstate_dir: %s\nagent_id: web-1\nhttp:\n  listen: \"\"\nroot: /myapp\nconfd_dir: %s\n",
		c.ConnString(), filepath.Join(dir, "state"), confdDir))
	for _, want := range []string{"want", "want-v2"} {
		if want == "want-v2" {
			keys["app/workers"] = []byte("4")
			keys["upstreams/app3"] = []byte("10.0.1.13:8080")
			keys["database/pool"] = []byte("20")
			if _, err := p.Publish(ctx, publish.Request{Items: keys}); err != nil {
				t.Fatal(err)
			}
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"--config", cfgPath, "--once"}, &stdout, &stderr); code != 0 {
			t.Fatalf("--once exit %d: %s", code, stderr.String())
		}
		for _, name := range []string{"nginx.conf", "app.properties"} {
			w, err := os.ReadFile(filepath.Join(demoConfd, want, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, w) {
				t.Errorf("%s/%s differs from what confagent renders:\n got %q\nwant %q", want, name, got, w)
			}
		}
	}
}

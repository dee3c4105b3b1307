package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// BenchmarkStatusRegistrations is `confpush status` on a root with 20,000
// registrations ($ZKCONF_BENCH_REGISTRATIONS changes the number): on an
// open tree, where every one is an expected agent and read, and on a tree
// with a policy, where they are foreign (named after no agent identity)
// and skipped unread. Results: docs/bench/fleet-status.md.
func BenchmarkStatusRegistrations(b *testing.B) {
	n := 20000
	if s := os.Getenv("ZKCONF_BENCH_REGISTRATIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"open", "policy"} {
		b.Run(mode, func(b *testing.B) {
			// A production-like server: full JIT (the test servers stop at C1
			// for a fast start), as tools/bench runs them.
			srv := zktest.StartWith(b, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second,
				JVMFlags: []string{"-Xmx1g", "-XX:TieredStopAtLevel=4"}})
			root := "/bench/app"
			paths := layout.New(root, layout.DefaultMeta)
			base := []string{"--zk", srv.ConnString(), "--root", root, "--timeout", "120s", "--session-timeout", "10s"}
			cli := func(args ...string) string {
				var out, errb bytes.Buffer
				if code := run(append(append([]string{}, base...), args...), &out, &errb); code != 0 {
					b.Fatalf("confpush %v: exit %d: %s", args, code, errb.String())
				}
				return out.String()
			}
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.conf"), []byte("one\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			conn := srv.Connect(b, 10*time.Second)
			acl := zk.WorldACL(zk.PermAll)
			if mode == "policy" {
				pub := filepath.Join(b.TempDir(), "publisher.auth")
				creds := "publisher:" + testPasswords["publisher"]
				if err := os.WriteFile(pub, []byte(creds+"\n"), 0o600); err != nil {
					b.Fatal(err)
				}
				cli("init", root, "--publisher-auth-file", pub, "--agent-digest", "web-17:"+aclmodel.Digest("web-17", testPasswords["web-17"]))
				base = append(base, "--auth-file", pub)
				if err := conn.AddAuth("digest", []byte(creds)); err != nil {
					b.Fatal(err)
				}
			}
			cli("publish", dir)
			if err := zkclient.EnsurePath(context.Background(), conn, paths.Agents(), acl); err != nil {
				b.Fatal(err)
			}
			reg := []byte(`{"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","labels":{"zone":"a"},"hostname":"h"}`)
			var ops []any
			for i := range n {
				ops = append(ops, &zk.CreateRequest{Path: paths.AgentNode(fmt.Sprintf("forged-%05d", i)), Data: reg, Acl: acl})
				if len(ops) == 1000 || i == n-1 {
					if _, err := conn.Multi(ops...); err != nil {
						b.Fatal(err)
					}
					ops = nil
				}
			}
			for b.Loop() {
				cli("status")
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// Passwords of the test identities: random-looking, at least 16 bytes.
var testPasswords = map[string]string{
	"publisher": "Pu8l1sher-Pa55word-x7Q",
	"web-17":    "web17-Secret-Pw-9fK2zq",
	"web-18":    "web18-Secret-Pw-3mL8vt",
	"stranger":  "stranger-Pw-0123456789",
}

// credFile writes user:password to an owner-only file.
func credFile(t *testing.T, user string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), user+".auth")
	if err := os.WriteFile(p, []byte(user+":"+testPasswords[user]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// connectAs opens a raw client session holding user's digest credentials
// ("" for an anonymous session).
func connectAs(t *testing.T, srv *zktest.Cluster, user string) *zk.Conn {
	t.Helper()
	conn := srv.Connect(t, 10*time.Second)
	if user != "" {
		if err := conn.AddAuth("digest", []byte(user+":"+testPasswords[user])); err != nil {
			t.Fatalf("AddAuth %s: %v", user, err)
		}
	}
	return conn
}

func wantNoAuth(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("%s: got %v, want NoAuth", what, err)
	}
}

// digestOf runs 'confpush digest' on user's credentials.
func digestOf(t *testing.T, user string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := runIO([]string{"digest"}, strings.NewReader(user+":"+testPasswords[user]+"\n"), &out, &errb)
	if code != 0 {
		t.Fatalf("digest: exit %d: %s", code, errb.String())
	}
	got := strings.TrimSpace(out.String())
	if want := user + ":" + aclmodel.Digest(user, testPasswords[user]); got != want {
		t.Fatalf("digest printed %q, want %q", got, want)
	}
	if strings.Contains(out.String()+errb.String(), testPasswords[user]) {
		t.Fatal("digest printed the password")
	}
	return got
}

// initACL runs 'confpush init' for c.root with the publisher, web-17 (from
// its credentials file) and web-18 (by digest).
func initACL(t *testing.T, c cli) (pubFile, web17File, web18File string) {
	t.Helper()
	pubFile, web17File, web18File = credFile(t, "publisher"), credFile(t, "web-17"), credFile(t, "web-18")
	o := c.run("init", c.root, "--publisher-auth-file", pubFile, "--agent-auth-file", web17File,
		"--agent-digest", digestOf(t, "web-18"))
	o.want(t, 0, "init "+c.root+": publisher publisher, 2 agent identities")
	return pubFile, web17File, web18File
}

// TestCLIAccess: after 'confpush init', the publisher publishes unchanged
// and items carry the root's ACL; an agent identity cannot publish (exit 6,
// naming the node and the permission) nor touch another agent's status
// node; no credentials and a stranger read nothing; 'acl' finds and repairs
// differences.
func TestCLIAccess(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/acl/app"}
	paths := layout.New(c.root, layout.DefaultMeta)
	pubFile, web17File, _ := initACL(t, c)

	// A second init, with the agents from the configuration file, changes
	// nothing.
	cfg := filepath.Join(t.TempDir(), "confpush.yaml")
	yaml := "agent-auth-file: [" + web17File + "]\nagent-digest:\n  - " + digestOf(t, "web-18") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c.run("--config", cfg, "init", c.root, "--publisher-auth-file", pubFile).
		want(t, 0, "2 agent identities", "ACLs match the policy")

	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "alpha\n", "b.conf": "beta\n"})
	c.run("--auth-file", pubFile, "publish", dir).want(t, 0, "published generation 1 to /acl/app", "2 added")
	c.run("--auth-file", pubFile, "publish", "--mode", "marker", "--prune", writeFiles(t, t.TempDir(),
		map[string]string{"a.conf": "alpha2\n", "c.conf": "gamma\n"})).want(t, 0, "published generation 2", "marker mode")
	c.run("--auth-file", pubFile, "get", "a.conf").want(t, 0, "alpha2")

	pub := connectAs(t, srv, "publisher")
	rootACL, _, err := pub.GetACL(c.root)
	if err != nil {
		t.Fatal(err)
	}
	histACL, _, err := pub.GetACL(paths.History())
	if err != nil {
		t.Fatal(err)
	}
	if aclmodel.SameACL(rootACL, histACL) {
		t.Fatalf("root and history have the same ACL %v", rootACL)
	}
	for _, n := range []string{paths.Item("a.conf"), paths.Item("c.conf")} {
		if got, _, err := pub.GetACL(n); err != nil || !aclmodel.SameACL(got, rootACL) {
			t.Errorf("item %s has ACL %v (%v), want the root's %v", n, got, err, rootACL)
		}
	}
	for _, n := range []string{paths.HistoryNode(1), paths.HistoryNode(2)} {
		if got, _, err := pub.GetACL(n); err != nil || !aclmodel.SameACL(got, histACL) {
			t.Errorf("history entry %s has ACL %v (%v), want the history parent's", n, got, err)
		}
	}
	blobs, _, err := pub.Children(paths.Blobs())
	if err != nil || len(blobs) == 0 {
		t.Fatalf("blobs: %v %v", blobs, err)
	}
	for _, b := range blobs {
		if got, _, err := pub.GetACL(paths.Blob(b)); err != nil || !aclmodel.SameACL(got, histACL) {
			t.Errorf("blob %s has ACL %v (%v), want the history parent's", b, got, err)
		}
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, 0, "ACLs match the policy")

	// An agent identity cannot publish: exit 6, naming the node and the
	// permission.
	before := snapshot(t, pub, c.root)
	o := c.run("--auth-file", web17File, "publish", dir)
	o.want(t, exitPermission, "permission denied", c.root, "ADMIN")
	code, obj := c.json("--auth-file", web17File, "publish", dir)
	if code != exitPermission || obj["kind"] != "permission_denied" {
		t.Errorf("--json: exit %d, %v", code, obj)
	}
	if after := snapshot(t, pub, c.root); after != before {
		t.Errorf("a refused publish changed the tree")
	}

	// No credentials, a wrong password, a stranger: refused clearly.
	c.run("get").want(t, exitPermission, "permission denied", c.root)
	c.run("get", "a.conf").want(t, exitPermission, "permission denied", c.root)
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("publisher:not-the-right-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.run("--auth-file", wrong, "history").want(t, exitPermission, "permission denied", "wrong password")
	c.run("--auth-file", credFile(t, "stranger"), "get", "a.conf").want(t, exitPermission, "permission denied")
	for _, user := range []string{"", "stranger"} {
		s := connectAs(t, srv, user)
		_, _, err := s.Get(c.root)
		wantNoAuth(t, user+" get root", err)
		_, _, err = s.Children(c.root)
		wantNoAuth(t, user+" list root", err)
		_, _, err = s.Get(paths.Item("a.conf"))
		wantNoAuth(t, user+" get item", err)
		_, _, err = s.Get(paths.Base())
		wantNoAuth(t, user+" get metadata base", err)
		_, _, err = s.Children(paths.History())
		wantNoAuth(t, user+" list history", err)
		_, _, err = s.Get(paths.HistoryNode(2))
		wantNoAuth(t, user+" get history entry", err)
		_, err = s.Create(paths.StatusNode("intruder"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		wantNoAuth(t, user+" create status node", err)
	}

	// Agents: each may read the set and create its own status node, and
	// cannot touch another's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	web17, web18 := connectAs(t, srv, "web-17"), connectAs(t, srv, "web-18")
	if _, _, err := web17.Get(paths.Item("a.conf")); err != nil {
		t.Fatalf("agent reads an item: %v", err)
	}
	status := map[string]string{}
	for user, conn := range map[string]*zk.Conn{"web-17": web17, "web-18": web18} {
		acl, err := statusNodeACL(ctx, conn, paths)
		if err != nil {
			t.Fatalf("%s ReadStatusNodeACL: %v", user, err)
		}
		status[user] = paths.StatusNode(user)
		if _, err := conn.Create(status[user], []byte(`{"state":"ok"}`), zk.FlagEphemeral, acl); err != nil {
			t.Fatalf("%s creates its status node: %v", user, err)
		}
		if _, err := conn.Set(status[user], []byte(`{"state":"applied"}`), -1); err != nil {
			t.Fatalf("%s writes its status node: %v", user, err)
		}
	}
	_, err = web17.Set(status["web-18"], []byte("forged"), -1)
	wantNoAuth(t, "web-17 sets web-18's status", err)
	_, _, err = web17.Get(status["web-18"])
	wantNoAuth(t, "web-17 reads web-18's status", err)
	_, err = web17.SetACL(status["web-18"], zk.WorldACL(zk.PermAll), -1)
	wantNoAuth(t, "web-17 re-ACLs web-18's status", err)
	wantNoAuth(t, "web-17 deletes web-18's status", web17.Delete(status["web-18"], -1))
	_, _, err = web17.Children(paths.Status())
	wantNoAuth(t, "web-17 lists the fleet", err)
	_, err = web17.Set(paths.Item("a.conf"), []byte("forged"), -1)
	wantNoAuth(t, "web-17 sets an item", err)
	if d, _, err := web18.Get(status["web-18"]); err != nil || string(d) != `{"state":"applied"}` {
		t.Errorf("web-18's status: %q %v", d, err)
	}

	// acl: a difference is found (exit 7), repaired, and gone.
	if _, err := pub.SetACL(paths.Item("b.conf"), zk.WorldACL(zk.PermAll), -1); err == nil {
		t.Fatal("b.conf should not exist after generation 2")
	}
	if _, err := pub.SetACL(paths.Item("c.conf"), zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	c.run("--auth-file", pubFile, "acl", c.root).want(t, exitACL, "differs: item /acl/app/c.conf", "--repair")
	code, obj = c.json("--auth-file", pubFile, "acl", c.root)
	if code != exitACL || obj["kind"] != "acl_mismatch" {
		t.Errorf("acl --json: exit %d, %v", code, obj)
	}
	c.run("--auth-file", pubFile, "acl", c.root, "--repair").want(t, 0, "done: item /acl/app/c.conf")
	c.run("--auth-file", pubFile, "acl", c.root).want(t, 0, "ACLs match the policy")
	if got, _, err := pub.GetACL(paths.Item("c.conf")); err != nil || !aclmodel.SameACL(got, rootACL) {
		t.Errorf("repaired item has ACL %v (%v)", got, err)
	}
	// acl with an agent's credentials is refused.
	c.run("--auth-file", web17File, "acl", c.root).want(t, exitPermission, "permission denied")
}

// TestCLIAccessUsage: credentials never come from arguments; bad files and
// identities are usage errors that quote no password.
func TestCLIAccessUsage(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	c := cli{t: t, zk: "127.0.0.1:1", root: "/x"}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.WriteFile(open, []byte("publisher:"+testPasswords["publisher"]), 0o644); err != nil {
		t.Fatal(err)
	}
	o := c.run("--auth-file", open, "get")
	o.want(t, exitUsage, "chmod")
	if strings.Contains(o.stderr, testPasswords["publisher"]) {
		t.Error("error quotes the password")
	}
	c.run("init", "/x").want(t, exitUsage, "publisher's credentials are required")
	c.run("init", "/x", "--publisher-auth-file", credFile(t, "publisher"), "--agent-digest", "web-17:nope").
		want(t, exitUsage, "--agent-digest #1")
	c.run("--tls-cert-file", "x.crt", "get").want(t, exitUsage, "--tls-ca-file")
	var out, errb bytes.Buffer
	if code := runIO([]string{"digest"}, strings.NewReader("web:short\n"), &out, &errb); code != exitUsage ||
		strings.Contains(errb.String(), "short\n") {
		t.Errorf("digest of a short password: exit %d, %s", code, errb.String())
	}
}

// TestCLINoSecretInOutput publishes a recognisable secret and checks that
// no confpush output shows it (at debug level, with --json or not), except
// 'get ITEM', which prints it on purpose (and 'diff', which shows content
// by design and is not run here). The credentials' passwords appear
// nowhere at all.
func TestCLINoSecretInOutput(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	const secret = "s3cr3t-VALUE-42"
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/secret/app"}
	pubFile, web17File, _ := initACL(t, c)
	var all []outcome
	runAll := func(args ...string) outcome {
		t.Helper()
		o := c.run(append([]string{"--log-level", "debug"}, args...)...)
		all = append(all, o)
		o2 := c.run(append([]string{"--log-level", "debug", "--json"}, args...)...)
		all = append(all, o2)
		return o
	}
	a := "--auth-file"
	v1 := writeFiles(t, t.TempDir(), map[string]string{"db.conf": "password=" + secret + "\n", "app.json": `{"token":"` + secret + `"}`})
	runAll(a, pubFile, "publish", "--dry-run", v1).want(t, 0, "dry run")
	runAll(a, pubFile, "publish", v1).want(t, 0, "published generation 1")
	v2 := writeFiles(t, t.TempDir(), map[string]string{"db.conf": "password=" + secret + "-rotated\n"})
	runAll(a, pubFile, "publish", "--mode", "marker", "--prune", v2).want(t, 0, "published generation 2")
	runAll(a, pubFile, "publish", "--validate", v1)
	runAll(a, pubFile, "history").want(t, 0)
	runAll(a, pubFile, "get").want(t, 0, "db.conf")
	runAll(a, pubFile, "get", "--gen", "1").want(t, 0, "app.json")
	runAll(a, pubFile, "rollback", "--to", "1").want(t, 0)
	runAll(a, pubFile, "status")
	runAll(a, pubFile, "acl", c.root).want(t, 0)
	runAll(a, web17File, "publish", v1).want(t, exitPermission)
	runAll(a, web17File, "get", "db.conf").want(t, exitPermission)
	runAll("get", "db.conf").want(t, exitPermission)
	for _, o := range all {
		for _, s := range append([]string{secret}, valuesOf(testPasswords)...) {
			if strings.Contains(o.stdout, s) || strings.Contains(o.stderr, s) {
				t.Errorf("output shows %q:\nstdout: %s\nstderr: %s", s, o.stdout, o.stderr)
			}
		}
	}
	// get ITEM prints the content: that is what it is for.
	o := c.run("--log-level", "debug", a, pubFile, "get", "db.conf")
	o.want(t, 0, secret)
	if strings.Contains(o.stderr, secret) {
		t.Errorf("get logged the content: %s", o.stderr)
	}
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCLITLS: confpush over a TLS-only, mutual-TLS ZooKeeper, with the
// server name verified while dialling an IP; a wrong CA or server name
// fails clearly.
func TestCLITLS(t *testing.T) {
	t.Setenv("ZKCONF_AUTH", "")
	srv := zktest.StartWith(t, zktest.Options{Size: 1, SecureClient: true, SecureOnly: true, ClientAuth: "need",
		MaxSessionTimeout: 30 * time.Second})
	cert, key, _, err := srv.CA.Issue("confpush", []string{"confpush"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cli{t: t, zk: srv.SecureAddrs()[0], root: "/tls/app"}
	tlsFlags := []string{"--tls-ca-file", srv.CA.CertFile, "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-server-name", "localhost"}
	dir := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "alpha\n"})
	c.run(append(tlsFlags, "publish", dir)...).want(t, 0, "published generation 1 to /tls/app")
	c.run(append(tlsFlags, "get", "a.conf")...).want(t, 0, "alpha")

	pubFile := credFile(t, "publisher")
	c.run(append(tlsFlags, "init", c.root, "--publisher-auth-file", pubFile, "--agent-digest", digestOf(t, "web-17"))...).
		want(t, 0, "init /tls/app")
	c.run(append(tlsFlags, "--auth-file", pubFile, "publish", "--force", dir)...).want(t, 0, "published generation 2")

	wrongName := append(append([]string{}, tlsFlags[:6]...), "--tls-server-name", "zk.example.com", "get")
	c.run(wrongName...).want(t, exitError, "zk.example.com")
	other, err := zktest.NewCA(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	wrongCA := append([]string{"--tls-ca-file", other.CertFile}, tlsFlags[2:]...)
	c.run(append(wrongCA, "get")...).want(t, exitError, "unknown authority")
	c.run(append(tlsFlags[:2], "--tls-cert-file", cert, "get")...).want(t, exitUsage, "together")
}

// statusNodeACL is the ACL the agent whose session is conn gives its
// status node (fleet.Fleet.StatusNodeACL).
func statusNodeACL(ctx context.Context, conn *zk.Conn, paths layout.Paths) ([]zk.ACL, error) {
	fl, err := fleet.New(zkclient.Fixed(conn, nil), paths.Root, fleet.WithMeta(paths.Meta))
	if err != nil {
		return nil, err
	}
	return fl.StatusNodeACL(ctx)
}
